/* Two fixes for dash-cytoscape 1.0's Cytoscape component, applied before any graph
   exists (assets load after the component libraries and before the app renders).

   1. It gives every graph wheelSensitivity = 1 by default, and Cytoscape.js treats any
      value it is given as custom: it warns on the console and the wheel zooms at that
      hand-set speed. Without the default the prop stays unset and Cytoscape.js uses its
      own wheel handling.
   2. A graph drawn while hidden (an inactive tab) is fitted into a box of size zero.
      When its box gets a size again, fit it to the box. */
(function () {
  var library = window.dash_cytoscape;
  var component = library && library.Cytoscape;
  if (!component) {
    return;
  }
  if (component.defaultProps) {
    delete component.defaultProps.wheelSensitivity;
  }
  var handleCy = component.prototype.handleCy;
  if (typeof handleCy !== "function") {
    return;
  }
  component.prototype.handleCy = function (cy) {
    if (cy && !cy.scratch("_maceRefit")) {
      cy.scratch("_maceRefit", true);
      var hidden = cy.width() === 0 || cy.height() === 0;
      cy.on("resize", function () {
        var nowHidden = cy.width() === 0 || cy.height() === 0;
        if (hidden && !nowHidden) {
          var padding = (this.props && this.props.layout && this.props.layout.padding) || 20;
          cy.fit(undefined, padding);
        }
        hidden = nowHidden;
      }.bind(this));
    }
    return handleCy.apply(this, arguments);
  };
})();
