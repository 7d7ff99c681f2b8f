"""The Nodes page's figures: CE/C heatmap, DLTS against capacity, bottleneck, busy time,
hosts over time."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from dashboard.core.timeaxis import Clock
from dashboard.shell.figures import (
    axes_layout,
    category_ticks,
    cell_edges,
    heat_axis,
    hover,
    line_trace,
    pool_columns,
    short_label,
)
from dashboard.shell.theme import ESTIMATED, MEASURED, SCENARIO, SELECTED_ROW, node_colors

HEATMAP_TITLE = "Estimated cumulative excess per node (CE/C)"
BOTTLENECK_TITLE = "Bottleneck node over time (where estimated Mace > 0)"
DLTS_TITLE = "Load (DLTS) vs capacity"
BUSY_TITLE = "Utilization vs demand"


def ce_heatmap(
    node_ids: Sequence[str],
    times: np.ndarray,
    ce_seconds: np.ndarray,
    subinterval: float,
    selected: str | None = None,
    clock: Clock | None = None,
) -> go.Figure:
    """Estimated CE/C (seconds) per node and subinterval, max-pooled to a readable width,
    each cell drawn over its own subintervals (``times`` are their starts, each
    ``subinterval`` long); the ``selected`` node's row is outlined. Long node names are
    shortened on the axis, whole in the hover, which gives the cell's time on ``clock``
    (default: seconds since the start)."""
    starts = np.asarray(times, dtype=float)
    matrix, pooled = pool_columns(ce_seconds, starts)
    end = float(starts[-1]) + subinterval if starts.size else 0.0
    clock = clock or Clock()
    at = "t = %{customdata:.1f} s"
    shown: Any = pooled
    if clock.wall:
        at = f"%{{customdata}} {clock.zone}"
        shown = np.array([clock.cell(t) for t in pooled], dtype=object)
    fig = go.Figure(
        go.Heatmap(
            z=matrix,
            x=cell_edges(pooled, end),
            y=list(node_ids),
            customdata=np.broadcast_to(shown, matrix.shape),
            coloraxis="coloraxis",
            hovertemplate=f"node %{{y}} at {at}<br>estimated CE/C: %{{z:.3f}} s<extra></extra>",
        )
    )
    fig = axes_layout(fig, HEATMAP_TITLE, "node", "heatmap", hovermode="closest")
    fig.update_yaxes(type="category", **category_ticks(list(node_ids)))
    fig.update_layout(
        shapes=node_outline(node_ids, selected),
        **heat_axis({"title": {"text": "CE/C (s)"}}, matrix),
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
    fig.add_trace(line_trace(times, dlts, "measured DLTS", ESTIMATED, unit="CPU-s"))
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
    return axes_layout(
        fig,
        f"{DLTS_TITLE} on {short_label(node)}",
        "CPU-seconds",
        uirevision="dlts",
    )


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
    fig = axes_layout(fig, "Hosts needed over time", "hosts (nodes)", uirevision="hosts")
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
    fig = axes_layout(fig, BOTTLENECK_TITLE, "node", "bottleneck")
    fig.update_yaxes(
        type="category",
        categoryorder="array",
        categoryarray=list(node_ids),
        range=[-0.5, len(node_ids) - 0.5],  # every node, not only those that were one
        **category_ticks(list(node_ids)),
    )
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
    fig.add_trace(
        line_trace(times, np.asarray(busy) / width, "measured utilization", MEASURED, **share)
    )
    demand = np.asarray(dlts) / (capacity * width)
    fig.add_trace(line_trace(times, demand, "demand (measured DLTS / C·w)", ESTIMATED, **share))
    fig = axes_layout(fig, f"{BUSY_TITLE} on {short_label(node)}", "share of capacity", "busy")
    fig.update_yaxes(tickformat=".0%")
    return fig
