"""The Help page's worked example of CE building up."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from dashboard.shell.figures import hover
from dashboard.shell.theme import ESTIMATED, MEASURED, SCENARIO
from estimator.mace import cumulative_excess

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
