"""The scenario editor tab's layout: the form, the operator graph, the charts and the tables."""

from __future__ import annotations

from typing import Any

import dash_bootstrap_components as dbc
from dash import dcc, html
from dash.dash_table.DataTable import DataTable

from dashboard.shell.figures import message_figure
from dashboard.shell.glossary import term
from dashboard.shell.graph import geometry, panel, style
from dashboard.shell.jobs import job_buttons
from dashboard.whatif import ids
from dashboard.whatif.common import field, row
from dashboard.whatif.figures import LATENCY_TITLE, QUERY_TITLE
from estimator.placement import ALGORITHMS

LOADING = "loading…"
GRAPH_MODES = (style.NODE, style.UTILISATION, style.CHANGE)

FIELDS: dict[str, tuple[str, Any]] = {
    ids.WI_OPERATOR: ("value", None),
    ids.WI_TARGET: ("value", None),
    ids.WI_CAP_NODE: ("value", None),
    ids.WI_CAP_VALUE: ("value", ""),
    ids.WI_ADD_NODE_ID: ("value", ""),
    ids.WI_ADD_NODE_CAP: ("value", ""),
    ids.WI_RATE: ("value", "1"),
    ids.WI_FACTOR: ("value", "1"),
    ids.WI_OPT_ALGO: ("value", ["mace-hc"]),
    ids.WI_OPT_BUDGET: ("value", "3"),
    ids.WI_OPT_MAX_MOVES: ("value", ""),
    ids.WI_OPT_OBJECTIVE: ("value", "system"),
    ids.WI_OPT_MAX_WORSE: ("value", "10"),
    ids.WI_SAVE_NAME: ("value", ""),
    ids.WI_SAVED: ("value", []),
}
"""Every form field and its default (the layout's value, and what Reset puts back)."""


def _default(component: str) -> Any:
    return FIELDS[component][1]


OBJECTIVES = [
    {"label": "system worst case", "value": "system"},
    {"label": "no query worse than X%", "value": "queries"},
]


def tab() -> html.Div:
    """The scenario editor: the form, the operator graph, the charts and the tables."""
    controls = dbc.Card(
        dbc.CardBody(
            [
                row(
                    "Move an operator",
                    field("operator", dcc.Dropdown(id=ids.WI_OPERATOR, placeholder="operator")),
                    field("to node", dcc.Dropdown(id=ids.WI_TARGET, placeholder="node")),
                    dbc.Button("Move", id=ids.WI_MOVE, size="sm", className="mt-3"),
                ),
                row(
                    "Change a node",
                    field("node", dcc.Dropdown(id=ids.WI_CAP_NODE, placeholder="node")),
                    field(
                        "capacity (CPU-s/s)",
                        dbc.Input(
                            id=ids.WI_CAP_VALUE, type="text", placeholder="capacity", size="sm"
                        ),
                    ),
                    dbc.Button("Set", id=ids.WI_SET_CAP, size="sm", className="mt-3"),
                    dbc.Button(
                        "Remove node",
                        id=ids.WI_REMOVE_NODE,
                        size="sm",
                        color="danger",
                        className="mt-3",
                    ),
                ),
                row(
                    "Add a node",
                    field("node id", dbc.Input(id=ids.WI_ADD_NODE_ID, placeholder="id", size="sm")),
                    field(
                        "capacity (CPU-s/s)",
                        dbc.Input(id=ids.WI_ADD_NODE_CAP, placeholder="capacity", size="sm"),
                    ),
                    dbc.Button("Add", id=ids.WI_ADD_NODE, size="sm", className="mt-3"),
                ),
                row(
                    ["Load · ", term("subinterval factor")],
                    field(
                        "source rate scale",
                        dbc.Input(id=ids.WI_RATE, value=_default(ids.WI_RATE), size="sm"),
                    ),
                    field(
                        "subinterval factor",
                        dbc.Input(id=ids.WI_FACTOR, value=_default(ids.WI_FACTOR), size="sm"),
                    ),
                    dbc.Button("Apply", id=ids.WI_APPLY_RATE, size="sm", className="mt-3"),
                    dbc.Button(
                        "Reset", id=ids.WI_RESET, size="sm", color="secondary", className="mt-3"
                    ),
                ),
                row(
                    "Optimize placement",
                    field(
                        "algorithms",
                        dcc.Dropdown(
                            id=ids.WI_OPT_ALGO,
                            options=list(ALGORITHMS),
                            value=_default(ids.WI_OPT_ALGO),
                            multi=True,
                        ),
                    ),
                ),
                # a dropdown on a row of its own: beside two fields its value was cut off
                row(
                    "",
                    field(
                        "time budget (s)",
                        dbc.Input(
                            id=ids.WI_OPT_BUDGET, value=_default(ids.WI_OPT_BUDGET), size="sm"
                        ),
                    ),
                    field(
                        "at most N moves",
                        dbc.Input(
                            id=ids.WI_OPT_MAX_MOVES,
                            value=_default(ids.WI_OPT_MAX_MOVES),
                            placeholder="any",
                            size="sm",
                        ),
                    ),
                ),
                row(
                    "",
                    field(
                        "objective",
                        dcc.Dropdown(
                            id=ids.WI_OPT_OBJECTIVE,
                            options=OBJECTIVES,
                            value=_default(ids.WI_OPT_OBJECTIVE),
                            clearable=False,
                        ),
                    ),
                ),
                row(
                    "",
                    field(
                        "X (%)",
                        dbc.Input(
                            id=ids.WI_OPT_MAX_WORSE,
                            value=_default(ids.WI_OPT_MAX_WORSE),
                            size="sm",
                            placeholder="X %",
                        ),
                    ),
                    html.Div(
                        job_buttons("Optimize", ids.WI_OPT_START, ids.WI_OPT_CANCEL),
                        className="mt-3 d-flex gap-1",
                    ),
                ),
                dbc.Progress(id=ids.WI_OPT_PROGRESS, value=0, label="", className="mb-2"),
                html.Small(id=ids.WI_OPT_STATUS, className="d-block mb-2"),
                DataTable(
                    id=ids.WI_OPT_QUERIES,
                    columns=[
                        {"name": c, "id": c}
                        for c in ("query", "current (s)", "optimized (s)", "change")
                    ],
                    data=[],
                    style_cell={"fontSize": 13, "padding": "2px 6px"},
                ),
                dbc.Button(
                    "Use optimized placement", id=ids.WI_OPT_APPLY, size="sm", disabled=True
                ),
                html.Hr(),
                html.Small("Edits of this scenario"),
                html.Div(id=ids.WI_EDITS, className="mb-2"),
                dcc.Store(id=ids.WI_UNDO_CLICK),
                row(
                    "Scenarios",
                    field(
                        "name of this scenario",
                        dbc.Input(id=ids.WI_SAVE_NAME, placeholder="name", size="sm"),
                    ),
                    dbc.Button("Save", id=ids.WI_SAVE, size="sm", className="mt-3"),
                ),
                row(
                    "",
                    field(
                        "saved scenarios",
                        dcc.Dropdown(id=ids.WI_SAVED, placeholder="saved scenarios", multi=True),
                    ),
                ),
                row(
                    "",
                    dbc.Button("Load", id=ids.WI_LOAD, size="sm"),
                    dbc.Button("Compare", id=ids.WI_COMPARE, size="sm"),
                    dbc.Button("Export YAML", id=ids.WI_EXPORT, size="sm"),
                ),
            ]
        )
    )
    return html.Div(
        [
            dbc.Row(
                [
                    dbc.Col(controls, md=4),
                    dbc.Col(
                        panel.panel(
                            ids.WI_GRAPH,
                            ids.WI_GRAPH_MODE,
                            ids.WI_GRAPH_LEGEND,
                            ids.WI_GRAPH_FIT,
                            GRAPH_MODES,
                            geometry.EDITOR,
                            hint=f"{panel.HINT} Tap an operator, then a box: Move moves it there.",
                        ),
                        md=8,
                    ),
                ]
            ),
            dbc.Row(
                [
                    dbc.Col(
                        dcc.Graph(id=ids.WI_MACE, figure=message_figure(LATENCY_TITLE, LOADING)),
                        md=7,
                    ),
                    dbc.Col(
                        dcc.Graph(id=ids.WI_QUERIES, figure=message_figure(QUERY_TITLE, LOADING)),
                        md=5,
                    ),
                ]
            ),
            html.H6("Placement (edit the node column, then apply)"),
            DataTable(
                id=ids.WI_TABLE,
                columns=[
                    {"name": "operator", "id": "operator", "editable": False},
                    {"name": "query", "id": "query", "editable": False},
                    {"name": "node", "id": "node", "editable": True},
                ],
                page_size=15,
                filter_action="native",
                style_cell={"fontSize": 13, "padding": "2px 6px"},
            ),
            dbc.Button("Apply table", id=ids.WI_APPLY_TABLE, size="sm", className="my-2"),
            html.H6("Scenario comparison"),
            DataTable(id=ids.WI_COMPARE_TABLE, style_cell={"fontSize": 13}),
        ],
        className="pt-2",
    )
