"""Figure building blocks every page shares: decimation, hover text, lines, axes, the
message figure."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go

from dashboard.core.timeaxis import Clock
from dashboard.shell.theme import DARK_HEAT, YL_OR_RD

MAX_POINTS = 4000
MAX_HEATMAP_COLUMNS = 1200


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


def line_trace(
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


def axes_layout(
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


IN_FLIGHT_FILL = "rgba(120, 120, 120, 0.22)"
"""Grey over the newest subintervals whose events are not all out yet."""


def in_flight_shape(start: Any, end: Any) -> dict[str, Any]:
    """A grey band across the whole plot from ``start`` to ``end`` (x-axis values): the
    subintervals still in flight, whose figures are not final."""
    return {
        "type": "rect",
        "xref": "x",
        "yref": "paper",
        "x0": start,
        "x1": end,
        "y0": 0,
        "y1": 1,
        "fillcolor": IN_FLIGHT_FILL,
        "line": {"width": 0},
        "layer": "above",
    }


def in_flight_note(start: Any, text: str = "in flight") -> dict[str, Any]:
    """The label at the top of :func:`in_flight_shape`."""
    return {
        "x": start,
        "y": 1,
        "xref": "x",
        "yref": "paper",
        "text": text,
        "showarrow": False,
        "xanchor": "left",
        "yanchor": "bottom",
        "font": {"size": 11, "color": "#555"},
    }


def mark_in_flight(fig: go.Figure, start: float, end: float) -> go.Figure:
    """``fig`` with the subintervals [start, end) (seconds, its x axis) greyed as in
    flight; nothing if the range is empty."""
    if end > start:
        fig.add_shape(in_flight_shape(start, end))
        fig.add_annotation(in_flight_note(start))
    return fig


def on_clock(fig: go.Figure, clock: Clock, x_range: tuple[float, float] | None = None) -> go.Figure:
    """``fig``, drawn in seconds since the run's start on x, on the shared ``clock``:
    its traces, bands and labels moved to the wall clock when that is chosen, the axis
    titled and hovered in that clock, and shown over ``x_range`` (seconds) if given."""
    if clock.wall:
        for trace in fig.data:
            x = getattr(trace, "x", None)
            if x is not None and len(x):
                trace.x = clock.axis(x)
        for item in (*fig.layout.shapes, *fig.layout.annotations):
            if item.xref == "x":
                for name in ("x0", "x1", "x"):
                    value = getattr(item, name, None)
                    if isinstance(value, int | float):
                        setattr(item, name, str(clock.axis([value])[0]))
    axis: dict[str, Any] = {
        "type": "date" if clock.wall else "linear",
        "title": {"text": clock.title},
        "hoverformat": clock.hoverformat,
    }
    if x_range is not None:
        axis["range"] = clock.axis(list(x_range)).tolist()
    fig.update_xaxes(**axis)
    legend = fig.layout.legend
    if clock.wall and legend.orientation == "h" and (legend.y or 0) < 0:
        # a wall-clock axis has two lines of ticks (time, then date): a legend below
        # the plot moves down under the axis title instead of over it
        fig.update_layout(legend_y=WALL_LEGEND_Y)
    return fig


WALL_LEGEND_Y = -0.32
"""Where a legend below a wall-clock chart sits (a share of the plot's height)."""


@dataclass(frozen=True)
class Span:
    """A marked stretch of time on the Overview's panels, in seconds since the start."""

    start: float
    end: float
    text: str


LABEL_CHARS = 24
"""Longest node or operator name shown as a tick label (Flink's thread nodes, such as
``parse-filter-enrich-sink-probe-threads``, would take half a chart's width)."""


def short_label(name: str, limit: int = LABEL_CHARS) -> str:
    """``name`` cut in the middle to at most ``limit`` characters (its start and its end
    tell nodes apart); the hover shows the whole name."""
    if len(name) <= limit:
        return name
    head = (limit - 1) // 2
    return f"{name[:head]}\u2026{name[len(name) - (limit - 1 - head) :]}"


def category_ticks(names: list[str]) -> dict[str, Any]:
    """Axis entries of a category axis of ``names``: every name a tick, shortened
    (:func:`short_label`), with the margin grown to fit them."""
    return {
        "tickmode": "array",
        "tickvals": list(names),
        "ticktext": [short_label(n) for n in names],
        "automargin": True,
    }


def cell_edges(starts: Any, end: float) -> np.ndarray:
    """The edges of a heatmap's cells that start at ``starts`` (ascending) and whose last
    one ends at ``end``: one more than the cells, so that Plotly draws each cell over its
    own time span (given the starts alone, it centres each cell on its start, half a cell
    off every shape drawn at subinterval boundaries)."""
    return np.append(np.asarray(starts, dtype=float), float(end))


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


NO_BACKLOG_SCALE = 1.0
"""Seconds at the top of a CE/C colour bar whose cells are all 0: the scale starts at 0
and reads "no backlog" (Plotly would centre a flat scale on 0, from -0.5 to 0.5)."""


def heat_axis(colorbar: Mapping[str, Any], values: Any = None) -> dict[str, Any]:
    """Layout entries of a CE/C heatmap (its trace names ``coloraxis``): the light
    colour scale from 0 to the largest of ``values`` (CE/C is never negative), and in
    ``meta.dark`` the layout entries theme.js applies on a dark page (the figure is
    built once, for both)."""
    peak = float(np.nanmax(values, initial=0.0)) if values is not None else 0.0
    top = peak if peak > 0 else NO_BACKLOG_SCALE
    return {
        "coloraxis": {
            "colorscale": YL_OR_RD,
            "cmin": 0.0,
            "cmax": top,
            "colorbar": dict(colorbar),
        },
        "meta": {"dark": {"coloraxis.colorscale": DARK_HEAT}},
    }


DIGITS = 4
"""Decimals sent to the browser (0.1 ms of latency): the hover shows three."""


def plain_layout(title: str, x_title: str, y_title: str, uirevision: str) -> dict[str, Any]:
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


def plain_line(times: np.ndarray, values: np.ndarray, name: str, color: str) -> dict[str, Any]:
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


MESSAGE_CHARS = 90
"""Characters per line of a message figure's text."""


def message_figure(title: str, message: str, height: int = 380) -> go.Figure:
    """An empty chart with a title and a line of text in the middle, no axes: what a
    chart shows before its data (empty axes would look like a run with nothing in it)."""
    fig = go.Figure()
    fig.update_layout(
        title={"text": title, "x": 0.01},
        height=height,
        xaxis={"visible": False},
        yaxis={"visible": False},
        annotations=[
            {
                "text": "<br>".join(textwrap.wrap(message, MESSAGE_CHARS)),
                "showarrow": False,
                "font": {"size": 14, "color": "#6c757d"},
            }
        ],
    )
    return fig
