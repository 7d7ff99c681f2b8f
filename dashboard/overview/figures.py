"""The Overview's figures: the stacked latency and node panels, the rolling error."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dashboard.core.timeaxis import Clock
from dashboard.shell.figures import (
    DIGITS,
    MAX_HEATMAP_COLUMNS,
    MAX_POINTS,
    Span,
    category_ticks,
    cell_edges,
    decimate_max,
    heat_axis,
    hover,
    in_flight_note,
    in_flight_shape,
    plain_layout,
    plain_line,
    pool_columns,
)
from dashboard.shell.theme import BAND, ESTIMATED, MEASURED, MODEL_LINE, PALETTE, node_colors


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
    subinterval: float,
    node_ids: Sequence[str],
    ce_seconds: np.ndarray,
    bottleneck: Sequence[str],
    sources: Sequence[str],
    rates: np.ndarray,
    x_range: tuple[float, float],
    changes: Sequence[Span] = (),
    violations: Sequence[tuple[Span, float]] = (),
    busy: Span | None = None,
    in_flight: Span | None = None,
    uirevision: str | None = None,
) -> dict[str, Any]:
    """The Overview's panels over one time axis (a zoom or pan on any panel moves all):
    latency against its estimate and prediction (band [Mace, estimate + w + eps]), CE/C
    per node as a heatmap strip, the sources' event rates and the bottleneck node of each
    subinterval with a backlog. Placement ``changes`` are dashed lines across all panels
    with a marker whose hover gives the change's text; objective ``violations`` (a span
    and the objective) are shaded across all panels, with a line at the objective level
    whose hover gives query, range and peak; ``busy`` shades the explained busy period;
    ``in_flight`` greys the newest subintervals whose events are not all out yet (their
    latency still grows) across all panels.
    ``times`` (the starts of subintervals ``subinterval`` long), the spans and ``x_range``
    are seconds since the start, shown on ``clock``. Long node names are shortened on the
    axes, whole in the hover.
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
    if in_flight is not None:
        shapes.append(in_flight_shape(x([in_flight.start])[0], x([in_flight.end])[0]))
        annotations.append(in_flight_note(x([in_flight.start])[0], in_flight.text))
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
            # cell edges: each cell over its own subintervals, as the shapes are
            "x": x(cell_edges(heat_times, float(times[-1]) + subinterval if times.size else 0.0)),
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
    node_axis = {
        "type": "category",
        "categoryorder": "array",
        "categoryarray": nodes,
        # every node, also on the bottleneck panel where only some ever are one
        "range": [-0.5, len(nodes) - 0.5],
        **category_ticks(nodes),
    }
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
        **heat_axis(heat_bar, matrix),
    }
    for key in ("yaxis", "yaxis2", "yaxis3", "yaxis4"):
        layout[key]["anchor"] = "x"
    return {"data": data, "layout": layout}


def rolling_error_figure(
    times: np.ndarray,
    error: np.ndarray,
    window: int,
    clock: Clock | None = None,
    in_flight: tuple[float, float] | None = None,
) -> dict[str, Any]:
    """The predicted latency's relative error against the measured one, over the trailing
    ``window`` subintervals at each time, as a percentage, on the Overview's ``clock``
    (a plain figure: it is redrawn at every refresh, and a template costs tens of
    milliseconds). ``in_flight`` (seconds [start, end)) is greyed: there the measured
    latency is not final, so neither is the error."""
    clock = clock or Clock()
    line = plain_line(times, error, "prediction error", MODEL_LINE)
    line["x"] = clock.axis(line["x"])
    line["hovertemplate"] = hover("prediction error", "", "%{y:.1%}")
    layout = plain_layout(
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
    if in_flight is not None and in_flight[1] > in_flight[0]:
        start, end = clock.axis(list(in_flight)).tolist()
        layout["shapes"] = [in_flight_shape(start, end)]
        layout["annotations"] = [in_flight_note(start)]
    return {"data": [line], "layout": layout}
