/* dash-cytoscape 1.0 gives every graph wheelSensitivity = 1 by default, and Cytoscape.js
   treats any value it is given as custom: it warns on the console and the wheel zooms
   at that hand-set speed. Without the default the prop stays unset and Cytoscape.js
   uses its own wheel handling. Assets load after the component libraries and before
   the app renders, so this runs before any graph exists. */
(function () {
  var library = window.dash_cytoscape;
  var component = library && library.Cytoscape;
  if (component && component.defaultProps) {
    delete component.defaultProps.wheelSensitivity;
  }
})();
