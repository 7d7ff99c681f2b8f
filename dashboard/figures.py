"""Pure figure builders: arrays in, Plotly figures out (the operator graph's Cytoscape
elements are built in :mod:`dashboard.operator_graph`).

Every plot of the dashboard is built here so callbacks stay thin and tests can
check figures without a browser. Long series are max-pooled (:func:`decimate_max`)
because worst-case latency is about peaks: a mean would hide them.

One vocabulary on every page: *estimated* is the estimator (Mace, or the chosen one)
applied to the measured load (DLTS); *predicted* the same estimator on a model fitted
to the run and the arrivals (the What-if page's curves are predictions); *measured* is
what the sinks saw. Time series hover with every series at the hovered time
(``hovermode="x unified"``), each value with its unit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.colors
import plotly.graph_objects as go
import plotly.io as pio

from dashboard.timeaxis import Clock
from estimator.mace import cumulative_excess
from estimator.pathblame import PathBlame

MAX_POINTS = 4000
MAX_HEATMAP_COLUMNS = 1200
PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
    "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39",
    "#7b4173", "#3182bd", "#e6550d", "#31a354", "#756bb1", "#636363",
)  # fmt: skip
MEASURED = "#d62728"
ESTIMATED = "#1f77b4"
PREDICTED = "#1f77b4"  # the What-if page's curves (predictions of current and scenario)
MODEL_LINE = "#8c564b"  # the Overview's predicted line, next to the estimated one
SCENARIO = "#ff7f0e"
BAND = "rgba(31, 119, 180, 0.15)"


def node_colors(node_ids: Sequence[str]) -> dict[str, str]:
    """A stable colour per node, in node order (wraps around after 20 nodes)."""
    return {node: PALETTE[k % len(PALETTE)] for k, node in enumerate(node_ids)}


def decimate_max(values: np.ndarray, max_points: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """(indices, values) with at most ``max_points`` buckets, each keeping its maximum.

    NaN values (intervals without data) are ignored inside a bucket; a bucket of
    NaNs stays NaN so gaps remain visible.
    """
    series = np.asarray(values, dtype=float)
    n = series.size
    if n <= max_points:
        return np.arange(n), series
    size = -(-n // max_points)
    width = -(-n // size) * size
    padded = np.full(width, np.nan)
    padded[:n] = series
    blocks = padded.reshape(-1, size)
    finite = np.isfinite(blocks)
    filled = np.where(finite, blocks, -np.inf)
    arg = np.argmax(filled, axis=1)
    index = np.arange(blocks.shape[0]) * size + arg
    picked = np.where(finite.any(axis=1), blocks[np.arange(blocks.shape[0]), arg], np.nan)
    return np.minimum(index, n - 1), picked


def hover(name: str, unit: str, value: str = "%{y:.3f}") -> str:
    """A hover line: the series' name, its value at the hovered time and the unit (the
    trace name is in the text, so the secondary box is left empty)."""
    return f"{name}: {value} {unit}<extra></extra>"


def _line(
    times: np.ndarray,
    values: np.ndarray,
    name: str,
    color: str,
    unit: str = "s",
    value: str = "%{y:.3f}",
    **kwargs: Any,
) -> go.Scattergl:
    index, picked = decimate_max(values)
    return go.Scattergl(
        x=times[index],
        y=picked,
        name=name,
        mode="lines",
        line={"color": color},
        hovertemplate=hover(name, unit, value),
        **kwargs,
    )


TIME_TITLE = "time since run start (s)"

TEMPLATE = "plotly_white"


def use_light_template() -> None:
    """Make the light template plotly's default in this process (the app factory calls
    it). Given per figure, plotly validates the template again on every figure, about
    8 ms each and most of a Nodes page update; the default one is applied as valid."""
    pio.templates.default = TEMPLATE


def _layout(
    fig: go.Figure,
    title: str,
    y_title: str,
    uirevision: str | None = None,
    hovermode: str = "x unified",
) -> go.Figure:
    """The common layout of a time series: every series at the hovered time by default."""
    fig.update_layout(
        title={"text": title, "x": 0.01},
        margin={"l": 60, "r": 20, "t": 50, "b": 45},
        legend={"orientation": "h", "y": -0.18, "traceorder": "normal"},
        xaxis_title=TIME_TITLE,
        xaxis_hoverformat=".1f",
        yaxis_title=y_title,
        uirevision=uirevision,
        hovermode=hovermode,
        height=380,
    )
    return fig


@dataclass(frozen=True)
class Span:
    """A marked stretch of time on the Overview's panels, in seconds since the start."""

    start: float
    end: float
    text: str


@dataclass(frozen=True)
class LatencySeries:
    """The latency panel's series over the shown subintervals (seconds)."""

    measured_max: np.ndarray
    measured_p99: np.ndarray
    estimated: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    predicted: np.ndarray
    label: str = "Mace"
    predicted_name: str | None = None
    band: str = "Mace + w + eps"  # the upper edge of the estimator's band


def pool_columns(matrix: Any, times: Any) -> tuple[np.ndarray, np.ndarray]:
    """A (rows x subintervals) matrix max-pooled to at most MAX_HEATMAP_COLUMNS columns,
    with the time of each pooled column's first subinterval."""
    values = np.asarray(matrix, dtype=float)
    times = np.asarray(times, dtype=float)
    n = values.shape[1] if values.ndim == 2 else 0
    if n <= MAX_HEATMAP_COLUMNS:
        return values, times
    size = -(-n // MAX_HEATMAP_COLUMNS)
    width = -(-n // size) * size
    padded = np.zeros((values.shape[0], width))
    padded[:, :n] = values
    return padded.reshape(values.shape[0], -1, size).max(axis=2), times[::size]


YL_OR_RD = [[k / 8, color] for k, color in enumerate(plotly.colors.sequential.YlOrRd)]
"""Light yellow (no backlog) to dark red: the CE/C heatmaps on a light page."""
DARK_PLOT = "#1b1f24"
"""The plot background of a dark page (theme.js)."""
DARK_HEAT = [
    [k / 8, color]
    for k, color in enumerate([DARK_PLOT, *plotly.colors.sequential.YlOrRd[::-1][:-1]])
]
"""The same hues the other way on a dark page: no backlog is the background, a growing
backlog glows from dark red to yellow (pale yellow cells would outshine everything)."""
SELECTED_ROW = "#1f77b4"
"""The outline of the chosen node's row: blue reads on both colour scales."""


def heat_axis(colorbar: Mapping[str, Any]) -> dict[str, Any]:
    """Layout entries of a CE/C heatmap (its trace names ``coloraxis``): the light
    colour scale, and in ``meta.dark`` the layout entries theme.js applies on a dark
    page (the figure is built once, for both)."""
    return {
        "coloraxis": {"colorscale": YL_OR_RD, "cmin": 0.0, "colorbar": dict(colorbar)},
        "meta": {"dark": {"coloraxis.colorscale": DARK_HEAT}},
    }


DIGITS = 4
"""Decimals sent to the browser (0.1 ms of latency): the hover shows three."""
PANEL_GAP = 34  # pixels between two panels (room for a panel's title)
VIOLATION_FILL = "rgba(214, 39, 40, 0.10)"
BUSY_FILL = "rgba(255, 127, 14, 0.15)"


def _panel_heights(nodes: int) -> list[int]:
    """Pixel heights of the latency, CE/C, source rate and bottleneck panels."""
    strip = min(max(60, 13 * nodes), 260)
    return [300, strip, 110, strip]


def overview_panels(
    clock: Clock,
    times: np.ndarray,
    latency: LatencySeries,
    *,
    node_ids: Sequence[str],
    ce_seconds: np.ndarray,
    bottleneck: Sequence[str],
    sources: Sequence[str],
    rates: np.ndarray,
    x_range: tuple[float, float],
    changes: Sequence[Span] = (),
    violations: Sequence[tuple[Span, float]] = (),
    busy: Span | None = None,
    uirevision: str | None = None,
) -> dict[str, Any]:
    """The Overview's panels over one time axis (a zoom or pan on any panel moves all):
    latency against its estimate and prediction (band [Mace, estimate + w + eps]), CE/C
    per node as a heatmap strip, the sources' event rates and the bottleneck node of each
    subinterval with a backlog. Placement ``changes`` are dashed lines across all panels
    with a marker whose hover gives the change's text; objective ``violations`` (a span
    and the objective) are shaded across all panels, with a line at the objective level
    whose hover gives query, range and peak; ``busy`` shades the explained busy period.
    ``times``, the spans and ``x_range`` are seconds since the start, shown on ``clock``.
    A plain figure (a dict): building Plotly objects would cost more than the data."""
    times = np.asarray(times, dtype=float)
    nodes = list(node_ids)
    heights = _panel_heights(len(nodes))
    top, bottom = 70, 55
    total = sum(heights) + PANEL_GAP * (len(heights) - 1)
    domains: list[list[float]] = []
    upper_edge = total
    for height in heights:
        domains.append([(upper_edge - height) / total, upper_edge / total])
        upper_edge -= height + PANEL_GAP
    axis = {"gridcolor": "#e5e5e5", "zerolinecolor": "#cccccc", "fixedrange": True}
    x = clock.axis
    data: list[dict[str, Any]] = []

    def line(
        values: np.ndarray,
        name: str,
        color: str,
        yaxis: str,
        unit: str,
        points: int = MAX_POINTS,
        **extra: Any,
    ) -> dict[str, Any]:
        index, picked = decimate_max(values, points)
        return {
            "type": "scattergl",
            "mode": "lines",
            "name": name,
            "x": x(times[index]),
            "y": np.round(picked, DIGITS),
            "yaxis": yaxis,
            "line": {"color": color, **extra.pop("line", {})},
            "hovertemplate": hover(name, unit),
            **extra,
        }

    # 1. latency: the band (SVG scatter: WebGL traces do not fill between traces)
    label = latency.label
    for values, name, fill in (
        (latency.upper, f"upper bound ({latency.band})", None),
        (latency.lower, "lower bound (Mace)", "tonexty"),
    ):
        index, picked = decimate_max(values)
        picked = np.round(picked, DIGITS)
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": f"bounds [Mace, {latency.band}]" if fill else name,
                "x": x(times[index]),
                "y": picked,
                "yaxis": "y",
                "line": {"width": 0, "color": ESTIMATED},
                "hovertemplate": hover(name, "s"),
                "showlegend": fill is not None,
                **({"fill": fill, "fillcolor": BAND} if fill else {}),
            }
        )
    data.append(line(latency.estimated, f"estimated {label}", ESTIMATED, "y", "s"))
    data.append(
        line(
            latency.predicted,
            latency.predicted_name or f"predicted {label}",
            MODEL_LINE,
            "y",
            "s",
            line={"dash": "dash"},
        )
    )
    data.append(line(latency.measured_max, "measured max", MEASURED, "y", "s"))
    data.append(
        line(latency.measured_p99, "measured p99", "#9467bd", "y", "s", line={"dash": "dot"})
    )
    shapes: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    if violations:
        xs: list[Any] = []
        ys: list[float | None] = []
        texts: list[str] = []
        for span, objective in violations:
            shapes.append(
                {
                    "type": "rect",
                    "xref": "x",
                    "yref": "paper",
                    "x0": x([span.start])[0],
                    "x1": x([span.end])[0],
                    "y0": 0,
                    "y1": 1,
                    "fillcolor": VIOLATION_FILL,
                    "line": {"width": 0},
                    "layer": "below",
                }
            )
            xs += [*x([span.start, (span.start + span.end) / 2, span.end]), None]
            ys += [objective, objective, objective, None]
            texts += [span.text] * 3 + [""]
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": "objective violated",
                "x": xs,
                "y": ys,
                "yaxis": "y",
                "text": texts,
                "line": {"color": MEASURED, "width": 3},
                "marker": {"size": 5, "color": MEASURED},
                "hovertemplate": "objective violated: %{text}<extra></extra>",
            }
        )
    if busy is not None:
        shapes.append(
            {
                "type": "rect",
                "xref": "x",
                "yref": "y domain",
                "x0": x([busy.start])[0],
                "x1": x([busy.end])[0],
                "y0": 0,
                "y1": 1,
                "fillcolor": BUSY_FILL,
                "line": {"width": 0},
                "layer": "below",
            }
        )
        annotations.append(
            {
                "x": x([busy.start])[0],
                "y": 1,
                "xref": "x",
                "yref": "y domain",
                "text": busy.text,
                "showarrow": False,
                "xanchor": "left",
                "yanchor": "top",
                "font": {"size": 11},
            }
        )
    if changes:
        for change in changes:  # a shape and a note: add_vline is ten times slower
            at = x([change.start])[0]
            shapes.append(
                {
                    "type": "line",
                    "xref": "x",
                    "yref": "paper",
                    "x0": at,
                    "x1": at,
                    "y0": 0,
                    "y1": 1,
                    "line": {"dash": "dash", "color": "#555", "width": 1},
                    "opacity": 0.7,
                }
            )
            annotations.append(
                {
                    "x": at,
                    "y": 1,
                    "xref": "x",
                    "yref": "y domain",
                    "text": "change",
                    "showarrow": False,
                    "xanchor": "left",
                    "yanchor": "top",
                    "font": {"size": 11},
                }
            )
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": "placement change",
                "x": x([c.start for c in changes]),
                "y": [0.0] * len(changes),
                "yaxis": "y",
                "text": [c.text for c in changes],
                "marker": {"symbol": "triangle-up", "size": 13, "color": "#555"},
                "hovertemplate": "placement change %{text}<extra></extra>",
            }
        )
    # 2. CE/C per node
    matrix, heat_times = pool_columns(ce_seconds, times)
    low, high = domains[1]
    heat_bar = {
        "title": {"text": "CE/C (s)", "side": "right"},
        "y": (low + high) / 2,
        "len": high - low,
        "thickness": 12,
        "x": 1.01,
        "xanchor": "left",
    }
    data.append(
        {
            "type": "heatmap",
            "z": np.round(matrix, DIGITS),
            "x": x(heat_times),
            "y": nodes,
            "yaxis": "y2",
            "coloraxis": "coloraxis",
            "hovertemplate": "CE/C of %{y}: %{z:.3f} s<extra></extra>",
            "name": "CE/C",
            "showlegend": False,
        }
    )
    # 3. source event rates
    palette = PALETTE[len(nodes) % len(PALETTE) :] + PALETTE[: len(nodes) % len(PALETTE)]
    for k, source in enumerate(sources):
        data.append(
            line(
                np.asarray(rates[k], dtype=float),
                source,
                palette[k % len(palette)],
                "y3",
                "events/s",
                MAX_HEATMAP_COLUMNS,
                legend="legend2",
                hovertemplate=hover(source, "events/s", "%{y:,.1f}"),
            )
        )
    # 4. the bottleneck node of each subinterval with a backlog (node colours)
    colors = node_colors(nodes)
    index, _ = decimate_max(latency.estimated, MAX_HEATMAP_COLUMNS)
    names = np.asarray(list(bottleneck), dtype=object)[index]
    backlog = np.asarray(latency.estimated, dtype=float)[index] > 0
    for node in nodes:
        mask = backlog & (names == node)
        if mask.any():
            data.append(
                {
                    "type": "scattergl",
                    "mode": "markers",
                    "name": node,
                    "x": x(times[index][mask]),
                    "y": [node] * int(mask.sum()),
                    "yaxis": "y4",
                    "marker": {"color": colors[node], "size": 6, "symbol": "square"},
                    "hovertemplate": "bottleneck: %{y}<extra></extra>",
                    "showlegend": False,
                }
            )
    titles = (
        "Latency per subinterval: measured, estimated and predicted (s)",
        "Estimated backlog per node, CE/C (s)",
        "Source event rates (events/s)",
        "Bottleneck node (where the estimated Mace > 0)",
    )
    for (_, high), title in zip(domains, titles, strict=True):
        annotations.append(
            {
                "text": f"<b>{title}</b>",
                "xref": "paper",
                "yref": "paper",
                "x": 0,
                "y": high,
                "xanchor": "left",
                "yanchor": "bottom",
                "showarrow": False,
                "font": {"size": 13},
            }
        )
    node_axis = {"type": "category", "categoryorder": "array", "categoryarray": nodes}
    rate_high = domains[2][1]
    layout: dict[str, Any] = {
        "height": total + top + bottom,
        "margin": {"l": 70, "r": 200, "t": top, "b": bottom},
        "hovermode": "x unified",
        "hoversubplots": "axis",
        "plot_bgcolor": "white",
        "paper_bgcolor": "white",
        "uirevision": uirevision,
        "dragmode": "zoom",
        "xaxis": {
            **axis,
            "fixedrange": False,
            "type": "date" if clock.wall else "linear",
            "range": x(list(x_range)).tolist(),
            "title": {"text": clock.title},
            "hoverformat": clock.hoverformat,
            "anchor": "y4",
            "showspikes": True,
            "spikemode": "across",
            "spikethickness": 1,
            "spikecolor": "#888",
        },
        "yaxis": {
            **axis,
            "domain": domains[0],
            "title": {"text": "latency (s)"},
            "rangemode": "tozero",
        },
        "yaxis2": {**axis, **node_axis, "domain": domains[1], "title": {"text": "node"}},
        "yaxis3": {
            **axis,
            "domain": domains[2],
            "title": {"text": "events/s"},
            "rangemode": "tozero",
        },
        "yaxis4": {**axis, **node_axis, "domain": domains[3], "title": {"text": "node"}},
        "legend": {"x": 1.01, "y": 1, "yanchor": "top", "xanchor": "left", "traceorder": "normal"},
        "legend2": {
            "x": 1.01,
            "y": rate_high,
            "yanchor": "top",
            "xanchor": "left",
            "title": {"text": "sources"},
        },
        "shapes": shapes,
        "annotations": annotations,
        # plotly.js's own "YlOrRd" runs from red to yellow: the scales name their colours
        **heat_axis(heat_bar),
    }
    for key in ("yaxis", "yaxis2", "yaxis3", "yaxis4"):
        layout[key]["anchor"] = "x"
    return {"data": data, "layout": layout}


def rolling_error_figure(
    times: np.ndarray, error: np.ndarray, window: int, clock: Clock | None = None
) -> dict[str, Any]:
    """The predicted latency's relative error against the measured one, over the trailing
    ``window`` subintervals at each time, as a percentage, on the Overview's ``clock``
    (a plain figure: it is redrawn at every refresh, and a template costs tens of
    milliseconds)."""
    clock = clock or Clock()
    line = _plain_line(times, error, "prediction error", MODEL_LINE)
    line["x"] = clock.axis(line["x"])
    line["hovertemplate"] = hover("prediction error", "", "%{y:.1%}")
    layout = _plain_layout(
        f"Prediction error (|predicted − measured| / measured, last {window} subintervals)",
        clock.title,
        "error",
        "error",
    )
    layout["xaxis"].update(
        {"type": "date" if clock.wall else "linear", "hoverformat": clock.hoverformat}
    )
    layout["yaxis"].update({"tickformat": ".0%", "rangemode": "tozero"})
    layout.update({"height": 260, "showlegend": False})
    layout["title"]["font"] = {"size": 14}
    return {"data": [line], "layout": layout}


def _plain_layout(title: str, x_title: str, y_title: str, uirevision: str) -> dict[str, Any]:
    """A white layout as a plain dict: building go.Figure objects with a template costs
    tens of milliseconds, too much for the What-if page's interactive budget."""
    axis = {"gridcolor": "#e5e5e5", "zerolinecolor": "#cccccc"}
    return {
        "title": {"text": title, "x": 0.01},
        "margin": {"l": 60, "r": 20, "t": 50, "b": 45},
        "legend": {"orientation": "h", "y": -0.18},
        "hovermode": "x unified",
        "xaxis": {**axis, "title": {"text": x_title}},
        "yaxis": {**axis, "title": {"text": y_title}},
        "plot_bgcolor": "white",
        "paper_bgcolor": "white",
        "uirevision": uirevision,
        "height": 380,
    }


def _plain_line(times: np.ndarray, values: np.ndarray, name: str, color: str) -> dict[str, Any]:
    index, picked = decimate_max(values)
    return {
        "type": "scattergl",
        "mode": "lines",
        "name": name,
        "hovertemplate": hover(name, "s"),
        # numpy arrays go to the browser through plotly's JSON encoder (NaN -> null)
        "x": np.asarray(times, dtype=float)[index],
        "y": picked,
        "line": {"color": color},
    }


def estimate_comparison_figure(
    times: np.ndarray,
    current: np.ndarray,
    scenario: np.ndarray,
    scenario_times: np.ndarray,
    label: str = "Mace",
) -> dict[str, Any]:
    """The scenario's prediction of the estimator named ``label`` over the current
    deployment's (their time grids may differ)."""
    return {
        "data": [
            _plain_line(times, current, f"current {label}", PREDICTED),
            _plain_line(scenario_times, scenario, f"scenario {label}", SCENARIO),
        ],
        "layout": _plain_layout(
            f"Predicted {label}: scenario vs current",
            TIME_TITLE,
            f"{label} (s)",
            "whatif",
        ),
    }


def query_change_figure(
    queries: Sequence[str],
    current: Sequence[float],
    scenario: Sequence[float],
    label: str = "Mace",
) -> dict[str, Any]:
    """Per-query worst case of the estimate (named ``label``), current vs scenario, as
    grouped bars."""
    layout = _plain_layout(
        f"Worst-case latency per query ({label} WC)", "query", f"{label} WC (s)", "q"
    )
    layout["barmode"] = "group"
    return {
        "data": [
            {
                "type": "bar",
                "x": list(queries),
                "y": [float(v) for v in current],
                "name": "current",
                "hovertemplate": hover("current", "s"),
                "marker": {"color": PREDICTED},
            },
            {
                "type": "bar",
                "x": list(queries),
                "y": [float(v) for v in scenario],
                "name": "scenario",
                "hovertemplate": hover("scenario", "s"),
                "marker": {"color": SCENARIO},
            },
        ],
        "layout": layout,
    }


def ce_heatmap(
    node_ids: Sequence[str],
    times: np.ndarray,
    ce_seconds: np.ndarray,
    selected: str | None = None,
) -> go.Figure:
    """Estimated CE/C (seconds) per node and subinterval, max-pooled to a readable width;
    the ``selected`` node's row is outlined."""
    matrix, times = pool_columns(ce_seconds, times)
    fig = go.Figure(
        go.Heatmap(
            z=matrix,
            x=times,
            y=list(node_ids),
            coloraxis="coloraxis",
            hovertemplate="node %{y} at t = %{x:.1f} s<br>estimated CE/C: %{z:.3f} s"
            "<extra></extra>",
        )
    )
    fig = _layout(
        fig, "Estimated cumulative excess per node (CE/C)", "node", "heatmap", hovermode="closest"
    )
    fig.update_yaxes(type="category")
    fig.update_layout(
        shapes=node_outline(node_ids, selected), **heat_axis({"title": {"text": "CE/C (s)"}})
    )
    return fig


def node_outline(node_ids: Sequence[str], selected: str | None) -> list[dict[str, Any]]:
    """The shapes that outline the ``selected`` node's row of :func:`ce_heatmap` (none if
    it is not one of ``node_ids``): the Nodes page patches them in on a node switch."""
    if selected is None or selected not in node_ids:
        return []
    row = list(node_ids).index(selected)
    return [
        {
            "type": "rect",
            "xref": "x domain",
            "x0": 0,
            "x1": 1,
            "y0": row - 0.5,
            "y1": row + 0.5,
            "line": {"color": SELECTED_ROW, "width": 3},
        }
    ]


def dlts_capacity_figure(
    times: np.ndarray, dlts: np.ndarray, service: float, node: str
) -> go.Figure:
    """A node's measured DLTS per subinterval against what it can serve in one (C*w)."""
    times = np.asarray(times, dtype=float)
    fig = go.Figure()
    fig.add_trace(_line(times, dlts, f"measured DLTS of {node}", ESTIMATED, unit="CPU-s"))
    fig.add_trace(
        go.Scatter(
            x=[float(times[0]) if times.size else 0.0, float(times[-1]) if times.size else 1.0],
            y=[service, service],
            mode="lines",
            name="capacity × w",
            line={"color": MEASURED, "dash": "dash"},
            hovertemplate=hover("capacity × w", "CPU-s"),
        )
    )
    return _layout(
        fig, f"Measured load (DLTS) vs capacity on {node}", "CPU-seconds", uirevision="dlts"
    )


def message_figure(title: str, message: str) -> go.Figure:
    """An empty chart with a title and a line of text in the middle (before data)."""
    fig = go.Figure()
    fig.update_layout(
        title={"text": title, "x": 0.01},
        height=380,
        xaxis={"visible": False},
        yaxis={"visible": False},
        annotations=[
            {"text": message, "showarrow": False, "font": {"size": 14, "color": "#6c757d"}}
        ],
    )
    return fig


def hosts_figure(
    starts: np.ndarray,
    ends: np.ndarray,
    mace_hosts: np.ndarray,
    fugu_hosts: np.ndarray,
    mace_met: np.ndarray,
    objective: float,
    threshold: float,
) -> go.Figure:
    """Hosts needed per time window (seconds from the run start) as steps: the fewest
    nodes that keep the latency objective by Mace against FUGU's utilisation-threshold
    count. Windows where no node count met the objective leave a gap in the Mace line
    and get a cross on the time axis."""
    starts = np.asarray(starts, dtype=float)
    ends = np.asarray(ends, dtype=float)
    met = np.asarray(mace_met, dtype=bool)
    mace = np.where(met, np.asarray(mace_hosts, dtype=float), np.nan)

    def steps(values: np.ndarray) -> tuple[list[float], list[float | None]]:
        # each window's value held from its start to its end, None where it is missing
        x = np.column_stack([starts, ends]).ravel().tolist()
        y = [None if not np.isfinite(v) else float(v) for v in np.repeat(values, 2)]
        return x, y

    fig = go.Figure()
    for name, values, color, dash in (
        (f"Mace-based (objective {objective:g} s)", mace, ESTIMATED, "solid"),
        (f"FUGU threshold ({threshold:.0%} utilisation)", fugu_hosts, SCENARIO, "dash"),
    ):
        x, y = steps(np.asarray(values, dtype=float))
        fig.add_trace(
            go.Scatter(
                x=x,
                y=y,
                mode="lines",
                line={"color": color, "dash": dash, "width": 2.5},
                name=name,
                hovertemplate=hover(name, "hosts", "%{y:d}"),
            )
        )
    if not met.all():
        missed = "objective not met at any node count"
        fig.add_trace(
            go.Scatter(
                x=((starts + ends) / 2)[~met],
                y=np.zeros(int((~met).sum())),
                mode="markers",
                marker={"symbol": "x", "size": 11, "color": MEASURED},
                name=missed,
                hovertemplate=f"{missed}<extra></extra>",
                cliponaxis=False,
            )
        )
    fig = _layout(fig, "Hosts needed over time", "hosts (nodes)", uirevision="hosts")
    top = max(np.max(np.nan_to_num(mace), initial=0), np.max(fugu_hosts, initial=0))
    fig.update_yaxes(rangemode="tozero", tickformat="d", dtick=1 if top <= 10 else None)
    return fig


def bottleneck_figure(
    times: np.ndarray, bottleneck: Sequence[str], series: np.ndarray, node_ids: Sequence[str]
) -> go.Figure:
    """The bottleneck node per subinterval (only where there is a backlog), coloured by node."""
    times = np.asarray(times, dtype=float)
    names = np.asarray(list(bottleneck), dtype=object)
    backlog = np.asarray(series, dtype=float) > 0
    colors = node_colors(node_ids)
    fig = go.Figure()
    for node in node_ids:
        mask = backlog & (names == node)
        if mask.any():
            fig.add_trace(
                go.Scattergl(
                    x=times[mask],
                    y=[node] * int(mask.sum()),
                    mode="markers",
                    marker={"color": colors[node], "size": 6, "symbol": "square"},
                    name=node,
                    hovertemplate="bottleneck: %{y}<extra></extra>",
                )
            )
    fig = _layout(fig, "Bottleneck node over time (where estimated Mace > 0)", "node", "bottleneck")
    fig.update_yaxes(type="category", categoryorder="array", categoryarray=list(node_ids))
    return fig


def busy_vs_dlts_figure(
    times: np.ndarray, busy: np.ndarray, dlts: np.ndarray, capacity: float, node: str
) -> go.Figure:
    """Measured utilization (busy/w) against demanded utilization (measured DLTS / (C*w)),
    as percentages of the node's capacity."""
    times = np.asarray(times, dtype=float)
    width = float(times[1] - times[0]) if times.size > 1 else 1.0
    share = {"unit": "of capacity", "value": "%{y:.1%}"}
    fig = go.Figure()
    fig.add_trace(_line(times, np.asarray(busy) / width, "measured utilization", MEASURED, **share))
    demand = np.asarray(dlts) / (capacity * width)
    fig.add_trace(_line(times, demand, "demand (measured DLTS / C·w)", ESTIMATED, **share))
    fig = _layout(fig, f"Utilization vs demand on {node}", "share of capacity", "busy")
    fig.update_yaxes(tickformat=".0%")
    return fig


def compliance_figure(
    times: np.ndarray,
    measured: np.ndarray,
    estimated: np.ndarray,
    objective: float | None,
    label: str = "Mace",
) -> go.Figure:
    """A query's measured max latency and its estimate (the estimator named ``label`` on
    the measured load) per subinterval against its objective."""
    times = np.asarray(times, dtype=float)
    fig = go.Figure()
    fig.add_trace(_line(times, estimated, f"estimated {label}", ESTIMATED))
    fig.add_trace(_line(times, measured, "measured max", MEASURED))
    if objective is not None:
        fig.add_hline(y=objective, line_dash="dash", line_color="#2ca02c")
        fig.add_trace(
            go.Scatter(
                x=[], y=[], mode="lines", name=f"objective {objective:g} s", line_color="#2ca02c"
            )
        )
    return _layout(fig, "Latency against the objective", "latency (s)", uirevision="report")


BLAME_LOW = (255, 245, 230)
BLAME_HIGH = (214, 39, 40)
NO_SHARE = "#e0e0e0"
DRAINED = "#9ecae1"
"""A negative share: a node of the critical path that drained part of its lag."""


def share_color(share: float) -> str:
    """A colour from light (a share near 0) to red (the whole backlog), ``share`` in [0, 1]."""
    t = min(max(float(share), 0.0), 1.0)
    r, g, b = (round(lo + t * (hi - lo)) for lo, hi in zip(BLAME_LOW, BLAME_HIGH, strict=True))
    return f"#{r:02x}{g:02x}{b:02x}"


def contribution_figure(
    contributions: Mapping[str, float], total: float, resource: str
) -> dict[str, Any]:
    """Each operator's share of ``resource``'s backlog (seconds of CE/C), largest on top
    (a plain figure, cheap to rebuild)."""
    ranked = sorted(contributions.items(), key=lambda kv: kv[1])
    names = [name for name, _ in ranked]
    seconds = [value for _, value in ranked]
    shares = [value / total if total > 0 else 0.0 for value in seconds]
    layout = _plain_layout(
        f"Share of the backlog on {resource} per operator",
        "contribution to CE/C (s)",
        "",
        "blame",
    )
    layout.update(
        {
            "margin": {"l": 80, "r": 20, "t": 45, "b": 45},
            "height": max(220, 110 + 32 * len(names)),
            "showlegend": False,
            "hovermode": "closest",
        }
    )
    layout["yaxis"]["automargin"] = True  # room for long operator names
    if not names:
        layout["annotations"] = [
            {
                "text": "no backlog: nothing to share",
                "showarrow": False,
                "x": 0.5,
                "y": 0.5,
                "xref": "paper",
                "yref": "paper",
            }
        ]
        layout["xaxis"]["visible"] = False
        layout["yaxis"]["visible"] = False
    bars = {
        "type": "bar",
        "orientation": "h",
        "x": seconds,
        "y": names,
        "marker": {
            "color": [share_color(v) for v in shares],
            "line": {"color": "#999", "width": 1},
        },
        "text": [f"{v:.3f} s ({f:.0%})" for v, f in zip(seconds, shares, strict=True)],
        "textposition": "auto",
        "customdata": shares,
        "hovertemplate": "%{y}: %{x:.3f} s, %{customdata:.1%} of the backlog<extra></extra>",
    }
    return {"data": [bars], "layout": layout}


def path_contribution_figure(result: PathBlame, subinterval: float) -> dict[str, Any]:
    """The critical path of a path-aware estimate: one stacked bar per node, in path
    order from the top, its operators' shares (seconds; negative ones left of 0) and the
    hop delay crossed into it; the bars add up to the estimate."""
    labels = []
    for stage in result.stages:
        if stage.busy_since is None:
            labels.append(f"{stage.resource}<br>(no wait)")
        else:
            last = stage.busy_since if stage.busy_until is None else stage.busy_until
            labels.append(
                f"{stage.resource}<br>t {stage.busy_since * subinterval:g}\u2013"
                f"{(last + 1) * subinterval:g} s"
            )
    excess = sum(s.ce_seconds for s in result.stages)
    operators = list(dict.fromkeys(op for s in result.stages for op in s.contributions))
    bars: list[dict[str, Any]] = []
    for op in operators:
        values = [s.contributions.get(op) for s in result.stages]
        bars.append(
            {
                "type": "bar",
                "orientation": "h",
                "name": op,
                "x": values,
                "y": labels,
                "marker": {
                    "color": [
                        DRAINED if (v or 0) < 0 else share_color((v or 0) / excess if excess else 0)
                        for v in values
                    ],
                    "line": {"color": "#999", "width": 1},
                },
                "text": [None if v is None else f"{op} {v:.3f} s" for v in values],
                "textposition": "inside",
                "insidetextanchor": "middle",
                "hovertemplate": f"{op} on %{{y}}: %{{x:+.3f}} s<extra></extra>",
            }
        )
    delays = [s.delay_seconds or None for s in result.stages]
    if any(delays):
        bars.append(
            {
                "type": "bar",
                "orientation": "h",
                "name": "hop delay",
                "x": delays,
                "y": labels,
                "marker": {"color": "#bbbbbb", "pattern": {"shape": "/"}},
                "hovertemplate": "delay into %{y}: %{x:.3f} s<extra></extra>",
            }
        )
    layout = _plain_layout(
        f"Critical path: {result.estimate:.3f} s, each node's share per operator",
        "share of the path-aware estimate (s)",
        "",
        "blame",
    )
    layout.update(
        {
            "barmode": "relative",
            "margin": {"l": 95, "r": 20, "t": 45, "b": 45},
            "height": max(240, 130 + 60 * len(labels)),
            "showlegend": False,
            "hovermode": "closest",
        }
    )
    # horizontal bars stack categories from the bottom: list them last node first
    layout["yaxis"].update(
        {"type": "category", "categoryorder": "array", "categoryarray": labels[::-1]}
    )
    return {"data": bars, "layout": layout}


EXPLAINER_DLTS = (0.5, 1.8, 1.6, 0.4, 0.3, 1.5)
"""The Help page's hand-made node load: DLTS per subinterval (CPU-s) of one node."""
EXPLAINER_CAPACITY = 1.0
EXPLAINER_W = 1.0


def cumulative_excess_explainer(
    dlts: Sequence[float] = EXPLAINER_DLTS,
    capacity: float = EXPLAINER_CAPACITY,
    w: float = EXPLAINER_W,
) -> go.Figure:
    """How CE builds up: bars of one node's DLTS per subinterval (the part above C*w in
    another colour), the capacity line C*w, and CE after each subinterval."""
    load = np.asarray(dlts, dtype=float)
    service = capacity * w
    ce = cumulative_excess(load, service)
    labels = [f"t{p + 1}" for p in range(load.size)]
    fig = go.Figure()
    fig.add_trace(
        go.Bar(
            x=labels,
            y=np.minimum(load, service),
            name="DLTS within C × w",
            marker_color=ESTIMATED,
            hovertemplate=hover("DLTS within C × w", "CPU-s"),
        )
    )
    fig.add_trace(
        go.Bar(
            x=labels,
            y=np.maximum(load - service, 0.0),
            name="DLTS above C × w (excess)",
            marker_color=SCENARIO,
            hovertemplate=hover("excess", "CPU-s"),
        )
    )
    fig.add_trace(
        go.Scatter(
            x=labels,
            y=[service] * load.size,
            mode="lines",
            name="capacity × w",
            line={"color": MEASURED, "dash": "dash"},
            hovertemplate=hover("capacity × w", "CPU-s"),
        )
    )
    fig.add_trace(
        go.Scatter(
            x=labels,
            y=ce,
            mode="lines+markers",
            name="CE (backlog carried over)",
            line={"color": "#2ca02c", "width": 3},
            hovertemplate=hover("CE", "CPU-s"),
        )
    )
    fig.update_layout(
        title={
            "text": f"CE of one node: C = {capacity:g} CPU-s/s, w = {w:g} s "
            f"(CE/C = CE / {capacity:g} in seconds)",
            "x": 0.01,
        },
        barmode="stack",
        margin={"l": 60, "r": 20, "t": 50, "b": 45},
        legend={"orientation": "h", "y": -0.22, "traceorder": "normal"},
        xaxis_title="subinterval",
        yaxis_title="CPU-seconds",
        hovermode="x unified",
        height=360,
    )
    return fig


def ingest_batches_figure(
    finished_at: Sequence[Any],
    kept: Sequence[int],
    quarantined: Sequence[int],
    seconds: Sequence[float],
) -> go.Figure:
    """Rows kept and quarantined per ingest batch (stacked bars at each batch's end, UTC),
    with each batch's duration in the hover."""
    duration = np.asarray(seconds, dtype=float)
    fig = go.Figure()
    for name, values, color in (
        ("rows kept", kept, ESTIMATED),
        ("rows quarantined", quarantined, MEASURED),
    ):
        fig.add_trace(
            go.Bar(
                x=list(finished_at),
                y=list(values),
                name=name,
                marker_color=color,
                customdata=duration,
                hovertemplate=f"{name}: %{{y:,}} (batch took %{{customdata:.1f}} s)<extra></extra>",
            )
        )
    fig.update_layout(
        barmode="stack",
        title={"text": "Ingest batches (rows per batch, by end time, UTC)", "x": 0.01},
        xaxis_title="batch finished (UTC)",
        yaxis_title="rows",
        hovermode="x unified",
        margin={"l": 60, "r": 20, "t": 50, "b": 45},
        legend={"orientation": "h", "y": -0.2},
        height=320,
        uirevision="health",
    )
    return fig
