"""Colours and the Plotly template every page's figures share."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.colors
import plotly.io as pio

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


TEMPLATE = "plotly_white"


def use_light_template() -> None:
    """Make the light template plotly's default in this process (the app factory calls
    it). Given per figure, plotly validates the template again on every figure, about
    8 ms each and most of a Nodes page update; the default one is applied as valid."""
    pio.templates.default = TEMPLATE


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
