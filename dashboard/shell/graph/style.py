"""The operator graph's colour modes, Cytoscape stylesheet and legend."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dashboard.shell.graph.geometry import FIT_PADDING, FONT, LABEL_GAP, PAD, SIZE
from dashboard.shell.theme import DRAINED, NO_SHARE, share_color

NODE = "node"
UTILISATION = "utilisation"
BLAME = "blame"
CHANGE = "change"

MODE_LABELS = {
    NODE: "node",
    UTILISATION: "utilisation",
    BLAME: "share of the backlog",
    CHANGE: "what-if change",
}
"""The colour modes and the selector's text for each."""
MIN_ZOOM = 0.2
MAX_ZOOM = 3.0
LAYOUT = {"name": "preset", "fit": True, "padding": FIT_PADDING, "animate": False}
"""Positions come with the elements; fitting them to the box happens on every draw."""
NEUTRAL = "#d9d9d9"
NEUTRAL_BORDER = "#9e9e9e"
MOVED = "#ff7f0e"

UTILISATION_STOPS = (
    (0.0, (217, 240, 211)),
    (0.6, (254, 224, 139)),
    (1.0, (244, 109, 67)),
    (1.5, (165, 0, 38)),
)
"""Utilisation (load over capacity) to colour: pale green when idle, orange at
capacity, dark red from 150% (more work arrives than the node can do)."""


def _hex(rgb: Sequence[float]) -> str:
    r, g, b = (round(c) for c in rgb)
    return f"#{r:02x}{g:02x}{b:02x}"


def utilisation_color(value: float) -> str:
    """The colour of a utilisation (1.0 = the node's capacity) on :data:`UTILISATION_STOPS`."""
    u = min(max(float(value), 0.0), UTILISATION_STOPS[-1][0]) if math.isfinite(value) else 0.0
    for (u0, c0), (u1, c1) in itertools.pairwise(UTILISATION_STOPS):
        if u <= u1:
            t = (u - u0) / (u1 - u0)
            return _hex([a + t * (b - a) for a, b in zip(c0, c1, strict=True)])
    return _hex(UTILISATION_STOPS[-1][1])


def stylesheet(mode: str) -> list[dict[str, Any]]:
    """The Cytoscape stylesheet of colour mode ``mode`` (every element carries the
    data fields it reads)."""
    return [
        {
            "selector": "node",
            "style": {
                "label": f"data(label_{mode})",
                "font-size": FONT,
                "text-wrap": "wrap",
                "min-zoomed-font-size": 7,
                "color": "#222",
            },
        },
        {
            "selector": ".operator, .source",
            "style": {
                "background-color": f"data(color_{mode})",
                "width": SIZE,
                "height": SIZE,
                "text-valign": "center",
                "text-halign": "right",
                "text-margin-x": LABEL_GAP,
                "border-width": 1,
                "border-color": "#666",
            },
        },
        {"selector": ".source", "style": {"shape": "diamond"}},
        {
            "selector": ".machine",
            "style": {
                "shape": "round-rectangle",
                "background-color": f"data(color_{mode})",
                "background-opacity": 0.16,
                "border-width": 2,
                "border-color": f"data(border_{mode})",
                "text-valign": "top",
                "text-halign": "center",
                "text-margin-y": -4,
                "font-weight": "bold",
                "padding": f"{PAD}px",
            },
        },
        {
            "selector": ".machine.empty",
            "style": {"width": "data(width)", "height": SIZE * 2, "text-valign": "center"},
        },
        *(
            [{"selector": ".machine.added", "style": {"border-style": "dashed", "border-width": 3}}]
            if mode == CHANGE
            else []
        ),
        {
            "selector": ".selected",
            "style": {
                "border-width": 4,
                "border-color": "#000",
                "width": SIZE + 6,
                "height": SIZE + 6,
            },
        },
        {"selector": ".frame", "style": {"opacity": 0, "events": "no", "width": 1, "height": 1}},
        {
            "selector": "edge",
            "style": {
                "curve-style": "unbundled-bezier",
                "control-point-distances": "data(bow)",
                "control-point-weights": 0.5,
                "target-arrow-shape": "triangle",
                "width": 1.5,
                "line-color": "#b0b0b0",
                "target-arrow-color": "#b0b0b0",
                "arrow-scale": 0.9,
            },
        },
    ]


@dataclass(frozen=True)
class LegendItem:
    """One entry of a graph legend: a swatch (``color``; a ``gradient`` of colours for
    a scale) and its text."""

    text: str
    color: str = ""
    gradient: tuple[str, ...] = ()
    after: str = ""  # the text at the end of a gradient
    dashed: bool = False


def legend(mode: str, elements: Sequence[Mapping[str, Any]]) -> list[LegendItem]:
    """What the colours of ``mode`` mean on the graph ``elements``."""
    if mode == NODE:
        return [
            LegendItem(e["data"]["machine"], e["data"][f"color_{NODE}"])
            for e in elements
            if e.get("data", {}).get("kind") == "machine"
        ] + [LegendItem("source", NEUTRAL)]
    if mode == UTILISATION:
        stops = tuple(utilisation_color(u) for u in (0.0, 0.3, 0.6, 0.8, 1.0, 1.25, 1.5))
        return [
            LegendItem("0%", gradient=stops, after="150% and more"),
            LegendItem(
                "mean load over capacity (DLTS / C·w); above 100% more work arrives than "
                "the node can do, so its backlog grows"
            ),
        ]
    if mode == BLAME:
        return [
            LegendItem(
                "small share",
                gradient=tuple(share_color(t / 4) for t in range(5)),
                after="the whole backlog",
            ),
            LegendItem("no share", NO_SHARE),
            LegendItem("drained part of a path's lag (negative share)", DRAINED),
            LegendItem("the bottleneck node, or the critical path's nodes (red border)"),
        ]
    if mode == CHANGE:
        return [
            LegendItem("moved by the scenario (label: where from)", MOVED),
            LegendItem("where it is now", NEUTRAL),
            LegendItem("new node", dashed=True, color=MOVED),
        ]
    return []
