"""Nodes: estimated CE/C heatmap, measured DLTS against capacity, bottleneck over time,
measured utilization against demand."""

from __future__ import annotations

from typing import Any

import dash
import dash_bootstrap_components as dbc
from dash import Input, Output, dcc, html, no_update

from dashboard import context, ids, views
from dashboard.glossary import term
from estimator.errors import MaceError

dash.register_page(__name__, path="/nodes", name="Nodes", order=1)


def layout(**_: Any) -> html.Div:
    refresh = context.current().refresh_seconds
    return html.Div(
        [
            dcc.Interval(id=ids.ND_REFRESH, interval=int(refresh * 1000)),
            dbc.Row(
                [
                    dbc.Col(dcc.Dropdown(id=ids.ND_NODE, placeholder="node"), md=3),
                    dbc.Col(
                        dbc.RadioItems(
                            id=ids.ND_RANGE,
                            options=[
                                {"label": "last 5 minutes", "value": "5m"},
                                {"label": "last hour", "value": "1h"},
                                {"label": "all", "value": "all"},
                            ],
                            value="all",
                            inline=True,
                        ),
                        md=6,
                    ),
                ],
                className="mb-2",
            ),
            dbc.Alert(id=ids.ND_MESSAGE, is_open=False, color="warning"),
            html.Div(
                [
                    "Estimated ",
                    term("CE/C"),
                    " per node and subinterval: seconds of backlog (",
                    term("CE", "cumulative excess"),
                    " over capacity).",
                ],
                className="text-muted small",
            ),
            dcc.Graph(id=ids.ND_HEATMAP),
            html.Div(
                [
                    "Left: measured ",
                    term("DLTS"),
                    " of the chosen node against capacity × ",
                    term("w"),
                    " (above the line, CE grows). Right: measured utilization against it.",
                ],
                className="text-muted small",
            ),
            dbc.Row(
                [
                    dbc.Col(dcc.Graph(id=ids.ND_DLTS), md=6),
                    dbc.Col(dcc.Graph(id=ids.ND_BUSY), md=6),
                ]
            ),
            dcc.Graph(id=ids.ND_BOTTLENECK),
        ]
    )


@dash.callback(
    Output(ids.ND_HEATMAP, "figure"),
    Output(ids.ND_DLTS, "figure"),
    Output(ids.ND_BOTTLENECK, "figure"),
    Output(ids.ND_BUSY, "figure"),
    Output(ids.ND_NODE, "options"),
    Output(ids.ND_MESSAGE, "children"),
    Output(ids.ND_MESSAGE, "is_open"),
    Input(ids.RUN, "value"),
    Input(ids.ND_NODE, "value"),
    Input(ids.ND_RANGE, "value"),
    Input(ids.ND_REFRESH, "n_intervals"),
)
def update(run_id: str | None, node: str | None, range_key: str | None, _: Any) -> tuple:
    if not run_id:
        return (no_update,) * 5 + ("select a run", True)
    try:
        run = context.current().runs.get(run_id)
        heat, dlts, bottleneck, busy = views.nodes_view(run, node, range_key)
    except MaceError as exc:
        return (no_update,) * 5 + (str(exc), True)
    return heat, dlts, bottleneck, busy, list(run.topology.node_ids), "", False
