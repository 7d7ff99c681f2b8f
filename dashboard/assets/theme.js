/* Plotly figures follow the browser's colour scheme, as the page chrome does (theme.css).
 *
 * The server builds every figure in the light template; no figure is recomputed for the
 * dark one. When the browser prefers dark, each figure is recoloured on its way into
 * Plotly: this file wraps Plotly.react and Plotly.newPlot (the calls dcc.Graph draws
 * with) as soon as Dash loads plotly.js, and overrides the colours of the background,
 * text, grid and axes with dark ones. Series colours stay; a figure can name layout
 * entries of its own for a dark page in layout.meta.dark (the CE/C heatmaps' colour
 * scale, whose pale low end would glare on a dark page). When the
 * preference changes, the figures on the page are recoloured in place (Plotly.relayout),
 * zoom included. A file of its own: the Content-Security-Policy allows no inline script.
 */
(function () {
  "use strict";
  var query = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;
  var DARK = {
    paper: "#16191d",
    plot: "#1b1f24",
    text: "#dde3ea",
    grid: "#2e353d",
    line: "#4b5561",
    zero: "#56616e",
  };

  function isDark() {
    return Boolean(query && query.matches);
  }

  function axisNames(layout) {
    var names = ["xaxis", "yaxis"];
    Object.keys(layout || {}).forEach(function (key) {
      if (/^[xy]axis\d+$/.test(key)) {
        names.push(key);
      }
    });
    return names;
  }

  /* The dark colours as Plotly.relayout attribute strings, for the axes ``layout`` has,
     and the figure's own dark entries (``layout.meta.dark``, e.g. a heatmap's colour
     scale: figures.heat_axis). */
  function darkPatch(layout) {
    var patch = {
      paper_bgcolor: DARK.paper,
      plot_bgcolor: DARK.plot,
      "font.color": DARK.text,
      "legend.bgcolor": "rgba(0,0,0,0)",
      "modebar.bgcolor": "rgba(0,0,0,0)",
      "modebar.color": DARK.line,
      "modebar.activecolor": DARK.text,
      "hoverlabel.bgcolor": DARK.plot,
      "hoverlabel.bordercolor": DARK.line,
      "hoverlabel.font.color": DARK.text,
    };
    axisNames(layout).forEach(function (axis) {
      patch[axis + ".gridcolor"] = DARK.grid;
      patch[axis + ".linecolor"] = DARK.line;
      patch[axis + ".zerolinecolor"] = DARK.zero;
    });
    var own = layout && layout.meta && layout.meta.dark;
    if (own && typeof own === "object") {
      Object.keys(own).forEach(function (path) {
        patch[path] = own[path];
      });
    }
    return patch;
  }

  function get(object, path) {
    return path.split(".").reduce(function (value, key) {
      return value === undefined || value === null ? undefined : value[key];
    }, object);
  }

  /* A copy of ``layout`` with ``patch`` applied (copies only the objects on its paths). */
  function patched(layout, patch) {
    var result = Object.assign({}, layout);
    Object.keys(patch).forEach(function (path) {
      var keys = path.split(".");
      var target = result;
      keys.slice(0, -1).forEach(function (key) {
        target[key] = Object.assign({}, target[key] || {});
        target = target[key];
      });
      target[keys[keys.length - 1]] = patch[path];
    });
    return result;
  }

  /* What undoes ``patch`` on ``layout``: the figure's own values (null: Plotly's default). */
  function restorer(layout, patch) {
    var undo = {};
    Object.keys(patch).forEach(function (path) {
      var value = get(layout, path);
      undo[path] = value === undefined ? null : value;
    });
    return undo;
  }

  function themedLayout(gd, layout) {
    if (!isDark()) {
      gd.__maceLight = null;
      return layout;
    }
    var patch = darkPatch(layout || {});
    gd.__maceLight = restorer(layout || {}, patch);
    return patched(layout || {}, patch);
  }

  function wrapDraw(Plotly, name) {
    var draw = Plotly[name];
    Plotly[name] = function (gd, data, layout, config) {
      var element = typeof gd === "string" ? document.getElementById(gd) : gd;
      if (data && !Array.isArray(data) && typeof data === "object") {
        // the single-object form dcc.Graph uses: {data, layout, config, frames}
        var figure = Object.assign({}, data);
        figure.layout = themedLayout(element, data.layout);
        return draw.call(this, gd, figure);
      }
      return draw.call(this, gd, data, themedLayout(element, layout), config);
    };
  }

  function wrap(Plotly) {
    if (Plotly && !Plotly.__maceThemed && typeof Plotly.react === "function") {
      wrapDraw(Plotly, "react");
      wrapDraw(Plotly, "newPlot");
      Plotly.__maceThemed = true;
    }
    return Plotly;
  }

  function recolour() {
    var Plotly = window.Plotly;
    if (!Plotly || !Plotly.relayout) {
      return;
    }
    document.querySelectorAll(".js-plotly-plot").forEach(function (gd) {
      if (isDark() && !gd.__maceLight) {
        var patch = darkPatch(gd.layout);
        gd.__maceLight = restorer(gd.layout, patch);
        Plotly.relayout(gd, patch);
      } else if (!isDark() && gd.__maceLight) {
        var undo = gd.__maceLight;
        gd.__maceLight = null;
        Plotly.relayout(gd, undo);
      }
    });
  }

  // Dash loads plotly.js on demand; catch the moment it defines window.Plotly.
  var current = window.Plotly;
  if (current) {
    wrap(current);
  } else {
    Object.defineProperty(window, "Plotly", {
      configurable: true,
      enumerable: true,
      get: function () {
        return current;
      },
      set: function (value) {
        current = wrap(value);
      },
    });
  }
  if (query && query.addEventListener) {
    query.addEventListener("change", recolour);
  }
})();
