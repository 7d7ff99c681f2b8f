"""Help: what the dashboard's terms mean, in plain words, with a diagram of CE building up."""

from __future__ import annotations

from typing import Any

import dash_bootstrap_components as dbc
from dash import dcc, html

from dashboard.help import figures, ids
from dashboard.shell.callbacks import Page
from dashboard.shell.glossary import GLOSSARY, term_id


def layout(**_: Any) -> html.Div:
    entries: list[Any] = []
    for name, definition in GLOSSARY.items():
        entries.append(html.Dt(name, id=term_id(name)))
        entries.append(html.Dd(definition, className="mb-2"))
    return html.Div(
        [
            html.H4("Terms used on these pages"),
            html.P(
                "Every latency comes in three kinds: estimated (from the measured load), "
                "predicted (from a model fitted on a training window and the arrivals) and "
                "measured (at the sinks). The estimates follow the Mace paper (ICDE 2011): "
                "Mace is computed from each node's load and capacity only, and bounds the "
                "latency from below and above. Hover a dotted term on the other pages for "
                "its definition.",
                className="text-muted",
                style={"maxWidth": "70rem"},
            ),
            dbc.Row(
                [
                    dbc.Col(html.Dl(entries, id=ids.HELP_TERMS), md=6),
                    dbc.Col(_diagram(), md=6),
                ]
            ),
        ]
    )


def _diagram() -> html.Div:
    """The worked example of CE: text and the figure (built per request)."""
    return html.Div(
        [
            html.H5("How CE builds up"),
            html.P(
                "One node with capacity C = 1 CPU-s/s and w = 1 s serves 1 CPU-s of work "
                "per subinterval. In t2 its DLTS is 1.8 CPU-s: 0.8 CPU-s is left over, so "
                "CE = 0.8. In t3 another 0.6 CPU-s above capacity arrives: CE = 0.8 + 1.6 - 1 "
                "= 1.4, so an event arriving then waits 1.4 s (CE/C) behind older work. In "
                "t4 and t5 the load is below capacity and the backlog drains (0.8, then "
                "0.1); CE never goes below 0. Here Mace = CE/C (one node) and MaceWC = "
                "1.4 s.",
            ),
            dcc.Graph(
                id=ids.HELP_DIAGRAM,
                figure=figures.cumulative_excess_explainer(),
                config={"displayModeBar": False},
            ),
        ]
    )


PAGE = Page(
    "dashboard.help",
    path="/help",
    name="Help",
    order=5,
    layout=layout,
    callbacks=[],
)
