"""What-if: move operators, change nodes and load, optimize, save and export scenarios.

Callbacks are thin: they read the form into typed view models (dict-grouped
``inputs=``/``state=``), ask :mod:`dashboard.whatif_view` (which asks the
estimator's what-if engine) and lay out the answer. The optimizer is a Dash
background callback with progress and a Cancel button (:mod:`dashboard.optimizer`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import dash
import dash_bootstrap_components as dbc
from dash import ALL, Input, Output, State, ctx, dcc, html, no_update
from dash.dash_table.DataTable import DataTable

from dashboard import (
    context,
    graph_panel,
    ids,
    live_view,
    operator_graph,
    optimizer,
    planning_view,
    whatif_view,
)
from dashboard.glossary import term
from estimator.errors import MaceError
from estimator.placement import ALGORITHMS
from estimator.whatif import (
    MAX_CAPACITY,
    RunInputs,
    ScenarioError,
    parse_positive,
    scenario_from_json,
    scenario_to_json,
)
from storage import placement_requests, scenarios

dash.register_page(__name__, path="/whatif", name="What-if", order=2)

GRAPH_MODES = (operator_graph.NODE, operator_graph.UTILISATION, operator_graph.CHANGE)


def _row(label: str | list[Any], *children: Any) -> dbc.Row:
    return dbc.Row(
        [dbc.Col(html.Small(label), width=12), *[dbc.Col(c) for c in children]],
        className="g-1 mb-2",
    )


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


def layout(**_: Any) -> html.Div:
    controls = dbc.Card(
        dbc.CardBody(
            [
                _row(
                    "Move an operator",
                    dcc.Dropdown(id=ids.WI_OPERATOR, placeholder="operator"),
                    dcc.Dropdown(id=ids.WI_TARGET, placeholder="node"),
                    dbc.Button("Move", id=ids.WI_MOVE, size="sm"),
                ),
                _row(
                    "Node capacity (CPU-s/s)",
                    dcc.Dropdown(id=ids.WI_CAP_NODE, placeholder="node"),
                    dbc.Input(id=ids.WI_CAP_VALUE, type="text", placeholder="capacity", size="sm"),
                    dbc.Button("Set", id=ids.WI_SET_CAP, size="sm"),
                    dbc.Button("Remove node", id=ids.WI_REMOVE_NODE, size="sm", color="danger"),
                ),
                _row(
                    "Add a node",
                    dbc.Input(id=ids.WI_ADD_NODE_ID, placeholder="node id", size="sm"),
                    dbc.Input(id=ids.WI_ADD_NODE_CAP, placeholder="capacity", size="sm"),
                    dbc.Button("Add", id=ids.WI_ADD_NODE, size="sm"),
                ),
                _row(
                    ["Source rate scale · ", term("subinterval factor")],
                    dbc.Input(id=ids.WI_RATE, value=_default(ids.WI_RATE), size="sm"),
                    dbc.Input(id=ids.WI_FACTOR, value=_default(ids.WI_FACTOR), size="sm"),
                    dbc.Button("Apply", id=ids.WI_APPLY_RATE, size="sm"),
                    dbc.Button("Reset", id=ids.WI_RESET, size="sm", color="secondary"),
                ),
                _row(
                    "Optimize placement (algorithms, budget in s)",
                    dcc.Dropdown(
                        id=ids.WI_OPT_ALGO,
                        options=list(ALGORITHMS),
                        value=_default(ids.WI_OPT_ALGO),
                        multi=True,
                    ),
                    dbc.Input(id=ids.WI_OPT_BUDGET, value=_default(ids.WI_OPT_BUDGET), size="sm"),
                    dbc.Button("Optimize", id=ids.WI_OPT_START, size="sm", color="success"),
                    dbc.Button(
                        "Cancel", id=ids.WI_OPT_CANCEL, size="sm", color="warning", disabled=True
                    ),
                ),
                _row(
                    "Objective (X in %)",
                    dcc.Dropdown(
                        id=ids.WI_OPT_OBJECTIVE,
                        options=OBJECTIVES,
                        value=_default(ids.WI_OPT_OBJECTIVE),
                        clearable=False,
                    ),
                    dbc.Input(
                        id=ids.WI_OPT_MAX_WORSE,
                        value=_default(ids.WI_OPT_MAX_WORSE),
                        size="sm",
                        placeholder="X %",
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
                _row(
                    "Scenarios",
                    dbc.Input(id=ids.WI_SAVE_NAME, placeholder="name", size="sm"),
                    dbc.Button("Save", id=ids.WI_SAVE, size="sm"),
                ),
                _row(
                    "",
                    dcc.Dropdown(id=ids.WI_SAVED, placeholder="saved scenarios", multi=True),
                    dbc.Button("Load", id=ids.WI_LOAD, size="sm"),
                    dbc.Button("Compare", id=ids.WI_COMPARE, size="sm"),
                    dbc.Button("Export YAML", id=ids.WI_EXPORT, size="sm"),
                ),
            ]
        )
    )
    editor = html.Div(
        [
            dbc.Row(
                [
                    dbc.Col(controls, md=4),
                    dbc.Col(
                        graph_panel.panel(
                            ids.WI_GRAPH,
                            ids.WI_GRAPH_MODE,
                            ids.WI_GRAPH_LEGEND,
                            ids.WI_GRAPH_FIT,
                            GRAPH_MODES,
                            operator_graph.EDITOR,
                        ),
                        md=8,
                    ),
                ]
            ),
            dbc.Row(
                [
                    dbc.Col(dcc.Graph(id=ids.WI_MACE), md=7),
                    dbc.Col(dcc.Graph(id=ids.WI_QUERIES), md=5),
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
    return html.Div(
        [
            # {run id: [edit, ...]}: kept across reloads and page changes, per run
            dcc.Store(id=ids.WI_SCENARIO, storage_type="session"),
            dcc.Store(id=ids.WI_INPUTS_KEY),
            dcc.Store(id=ids.WI_OPT_RESULT),
            dcc.Store(id=ids.WI_OBJECTIVES),
            dcc.Store(id=ids.WI_AD_RESULT),
            dcc.Store(id=ids.WI_PV_RESULT),
            dcc.Download(id=ids.WI_DOWNLOAD),
            dbc.Alert(id=ids.WI_MESSAGE, is_open=False, color="danger", dismissable=True),
            dbc.Alert(id=ids.WI_NOTE, is_open=False, color="success", dismissable=True),
            dbc.Alert(COUNTER_RUN_NOTE, id=ids.WI_ENGINE_NOTE, is_open=False, color="info"),
            html.H4(id=ids.WI_MACE_WC, className="mb-2"),
            live_apply_block(),
            dbc.Tabs(
                [
                    dbc.Tab(editor, label="Scenario editor", tab_id=TAB_EDITOR),
                    dbc.Tab(_admit_tab(), label="Admit a query", tab_id=TAB_ADMIT),
                    dbc.Tab(
                        _provision_tab(), label="Provision for an objective", tab_id=TAB_PROVISION
                    ),
                    dbc.Tab(_plans_tab(), label="Compare plans", tab_id=TAB_PLANS),
                ],
                id=ids.WI_TABS,
                active_tab=TAB_EDITOR,
            ),
        ]
    )


TAB_EDITOR, TAB_ADMIT, TAB_PROVISION, TAB_PLANS = "editor", "admit", "provision", "plans"
TABLE_STYLE = {"fontSize": 13, "padding": "2px 6px", "textAlign": "left"}
QUERY_EXAMPLE = """# a query file: the new query, its operators and its new sources' arrivals
query: q9
operators:
  - {id: o1, inputs: [orders], cost: 0.001, selectivity: 1.0}
  - {id: o2, inputs: [o1, s], cost: [0.002, 0.001], selectivity: [0.5, 0.5]}
sources:                        # new sources (running ones are read by id)
  - {id: orders, arrivals: [100, 120, 80, 95]}   # events per subinterval
placement: {o1: n1}             # optional: where to start"""


def _upload(component: str, text: str, multiple: bool = False) -> dcc.Upload:
    kib = planning_view.MAX_UPLOAD_BYTES // 1024
    return dcc.Upload(
        id=component,
        children=html.Div([text, html.Small(f" (YAML or JSON, at most {kib} KiB each)")]),
        max_size=planning_view.MAX_UPLOAD_BYTES,
        multiple=multiple,
        accept=".yaml,.yml,.json",
        className="upload-box",
    )


def _table(component: str, columns: list[str]) -> DataTable:
    return DataTable(
        id=component,
        columns=[{"name": c, "id": c} for c in columns],
        data=[],
        style_cell=TABLE_STYLE,
        style_data_conditional=[
            {"if": {"filter_query": '{ok} = "NO"', "column_id": "ok"}, "color": "#b02a37"}
        ],
    )


ADMIT_ALGORITHMS = [
    *({"label": a, "value": a} for a in ALGORITHMS),
    {"label": "as in the file (no search)", "value": planning_view.AS_IN_FILE},
]


def _admit_tab() -> html.Div:
    return html.Div(
        [
            html.P(
                [
                    "Can a new query run next to the scenario above without breaking a ",
                    term("latency objective"),
                    "? ",
                    term("admission", "Admission"),
                    ": the running operators stay where they are, the new ones are placed "
                    "by the algorithm, and every query's ",
                    term("MaceWC"),
                    " is compared with its objective (set on the Reports page).",
                ],
                className="text-muted small",
            ),
            dbc.Row(
                [
                    dbc.Col(
                        [
                            _upload(ids.WI_AD_UPLOAD, "Drop a query file here or click"),
                            dbc.Textarea(
                                id=ids.WI_AD_TEXT,
                                placeholder=QUERY_EXAMPLE,
                                rows=9,
                                className="font-monospace small mt-2",
                            ),
                        ],
                        md=6,
                    ),
                    dbc.Col(
                        [
                            _row(
                                "Objective of the new query (s, optional)",
                                dbc.Input(id=ids.WI_AD_OBJECTIVE, placeholder="none", size="sm"),
                            ),
                            _row(
                                "Placement algorithm · time budget (s)",
                                dcc.Dropdown(
                                    id=ids.WI_AD_ALGO,
                                    options=ADMIT_ALGORITHMS,
                                    value="mace-hc",
                                    clearable=False,
                                ),
                                dbc.Input(id=ids.WI_AD_BUDGET, value="1", size="sm"),
                            ),
                            dbc.Button(
                                "Check admission", id=ids.WI_AD_START, color="success", size="sm"
                            ),
                            html.Small(id=ids.WI_AD_BUSY, className="ms-2 text-muted"),
                        ],
                        md=6,
                    ),
                ]
            ),
            dbc.Alert(id=ids.WI_AD_DECISION, is_open=False, className="mt-2 mb-2"),
            dbc.Row(
                [
                    dbc.Col(
                        [
                            html.H6("Each query before and after"),
                            _table(
                                ids.WI_AD_QUERIES,
                                ["query", "before (s)", "after (s)", "objective (s)", "ok"],
                            ),
                        ],
                        md=7,
                    ),
                    dbc.Col(
                        [
                            html.H6("Placement of the new operators"),
                            _table(ids.WI_AD_PLACEMENT, ["operator", "node"]),
                        ],
                        md=5,
                    ),
                ]
            ),
            dbc.Button(
                "Add this query to the scenario",
                id=ids.WI_AD_APPLY,
                size="sm",
                className="mt-2",
                disabled=True,
            ),
        ],
        className="pt-2",
    )


def _provision_tab() -> html.Div:
    return html.Div(
        [
            html.P(
                [
                    "What does a ",
                    term("latency objective"),
                    " need? Mode fewest nodes: the fewest identical "
                    "nodes on which the placement search keeps every query's ",
                    term("MaceWC"),
                    " within the objective. Mode least added capacity: the least CPU "
                    "capacity to add to "
                    "the scenario's nodes, placement unchanged. Capacities are in reference "
                    "CPU-seconds per second (1 = one reference core).",
                ],
                className="text-muted small",
            ),
            dbc.Row(
                [
                    dbc.Col(
                        _row("Objective (s)", dbc.Input(id=ids.WI_PV_OBJECTIVE, size="sm")), md=2
                    ),
                    dbc.Col(
                        _row(
                            "Mode",
                            dbc.RadioItems(
                                id=ids.WI_PV_MODE,
                                options=[
                                    {"label": "fewest nodes", "value": "nodes"},
                                    {"label": "least added capacity", "value": "capacity"},
                                ],
                                value="nodes",
                                inline=True,
                            ),
                        ),
                        md=3,
                    ),
                    dbc.Col(
                        _row(
                            "Node capacity (CPU-s/s)",
                            dbc.Input(id=ids.WI_PV_CAPACITY, value="1", size="sm"),
                        ),
                        md=2,
                    ),
                    dbc.Col(
                        _row(
                            "Search budget per node count (s)",
                            dbc.Input(id=ids.WI_PV_BUDGET, value="0.5", size="sm"),
                        ),
                        md=2,
                    ),
                    dbc.Col(
                        [
                            dbc.Button("Provision", id=ids.WI_PV_START, color="success", size="sm"),
                            dbc.Button(
                                "Cancel",
                                id=ids.WI_PV_CANCEL,
                                color="warning",
                                size="sm",
                                className="ms-1",
                                disabled=True,
                            ),
                            html.Small(id=ids.WI_PV_BUSY, className="ms-2 text-muted"),
                        ],
                        md=3,
                        className="pt-4",
                    ),
                ]
            ),
            dbc.Alert(id=ids.WI_PV_DECISION, is_open=False, className="mt-2 mb-2"),
            dbc.Row(
                [
                    dbc.Col(
                        [
                            html.H6("Each query now and on the proposal"),
                            _table(
                                ids.WI_PV_QUERIES,
                                ["query", "now (s)", "proposed (s)", "objective (s)", "ok"],
                            ),
                        ],
                        md=6,
                    ),
                    dbc.Col(
                        [
                            html.H6("Proposed nodes"),
                            _table(ids.WI_PV_NODES, ["node", "capacity", "operators"]),
                        ],
                        md=6,
                    ),
                ]
            ),
            dbc.Button(
                "Load the proposal as the scenario",
                id=ids.WI_PV_APPLY,
                size="sm",
                className="mt-2",
                disabled=True,
            ),
        ],
        className="pt-2",
    )


CRITERIA = [
    {"label": "MaceWC (worst case)", "value": "mace_wc"},
    {"label": "mean of Mace", "value": "mean"},
    {"label": "p99 of Mace", "value": "p99"},
]


def _plans_tab() -> html.Div:
    return html.Div(
        [
            html.P(
                [
                    "Which plan of a query should run? The running plan (its costs fitted "
                    "on this run) is ranked against plan files you upload: topology files "
                    "whose operators all belong to the query and read the run's sources. As "
                    "in the paper, each plan runs on one node holding its total capacity, "
                    "fed with the run's arrivals, and is judged by its ",
                    term("Mace"),
                    " across time.",
                ],
                className="text-muted small",
            ),
            dbc.Row(
                [
                    dbc.Col(_row("Query", dcc.Dropdown(id=ids.WI_PL_QUERY, clearable=False)), md=2),
                    dbc.Col(
                        _row(
                            "Rank by",
                            dcc.Dropdown(
                                id=ids.WI_PL_CRITERION,
                                options=CRITERIA,
                                value="mace_wc",
                                clearable=False,
                            ),
                        ),
                        md=3,
                    ),
                    dbc.Col(
                        _upload(
                            ids.WI_PL_UPLOAD,
                            f"Drop up to {planning_view.MAX_PLANS} plan files here or click",
                            multiple=True,
                        ),
                        md=7,
                    ),
                ]
            ),
            dbc.Alert(id=ids.WI_PL_CHOSEN, is_open=False, className="mt-2 mb-2"),
            DataTable(
                id=ids.WI_PL_TABLE,
                columns=[
                    {"name": c, "id": c}
                    for c in ("rank", "plan", "MaceWC (s)", "mean (s)", "p99 (s)")
                ],
                data=[],
                style_cell=TABLE_STYLE,
                style_data_conditional=[
                    {"if": {"filter_query": "{rank} = 1"}, "fontWeight": "bold"}
                ],
            ),
        ],
        className="pt-2",
    )


COUNTER_RUN_NOTE = (
    "This run was measured by an engine's counters (e.g. Apache Flink). A node here is an "
    "operator's subtask threads (or a TaskManager): moving an operator means giving it its "
    "own slot-sharing group or TaskManager, and a capacity is a parallelism or a core count. "
    "Costs are the measured busy time per record, Python bridge included."
)


@dash.callback(Output(ids.WI_ENGINE_NOTE, "is_open"), Input(ids.RUN, "value"))
def engine_note(run_id: str | None) -> bool:
    """Say what a what-if edit means on a run measured by counters."""
    if not run_id:
        return False
    try:
        return context.current().runs.get(run_id).info.counters
    except MaceError:
        return False


MESSAGE = {
    "text": Output(ids.WI_MESSAGE, "children", allow_duplicate=True),
    "open": Output(ids.WI_MESSAGE, "is_open", allow_duplicate=True),
}


def _inputs(run_id: str | None) -> RunInputs:
    if not run_id:
        raise ScenarioError("select a run")
    app = context.current()
    return whatif_view.inputs_for_run(app.engine, app.runs.get(run_id))


def _optimized(form: whatif_view.EditForm) -> dict[str, Any]:
    placement = (form.optimized or {}).get("placement")
    if not placement:
        raise ScenarioError("optimize: no optimized placement yet")
    return {"placement": placement}


EDITS: dict[str, tuple[str, Callable[[whatif_view.EditForm], dict[str, Any]]]] = {
    ids.WI_MOVE: ("move", lambda f: {"operator": f.operator, "node": f.target}),
    ids.WI_SET_CAP: ("capacity", lambda f: {"node": f.cap_node, "capacity": f.cap_value}),
    ids.WI_REMOVE_NODE: ("remove_node", lambda f: {"node": f.cap_node}),
    ids.WI_ADD_NODE: ("add_node", lambda f: {"node": f.add_id, "capacity": f.add_cap}),
    ids.WI_APPLY_RATE: ("load", lambda f: {"rate_scale": f.rate, "factor": f.factor}),
    ids.WI_APPLY_TABLE: ("table", lambda f: {"rows": f.rows}),
    ids.WI_OPT_APPLY: ("placement", _optimized),
}
"""Which page action each button triggers, and the form values it takes."""

NOTE = {
    "note": Output(ids.WI_NOTE, "children", allow_duplicate=True),
    "note_open": Output(ids.WI_NOTE, "is_open", allow_duplicate=True),
}


def _notify(note: str) -> dict[str, Any]:
    """Outputs of a confirmation: the note shown, the error message closed."""
    return {"note": note, "note_open": bool(note), "text": "", "open": False}


def _failed(exc: Exception) -> dict[str, Any]:
    return {"note": "", "note_open": False, "text": str(exc), "open": True}


def _load_saved(form: whatif_view.EditForm) -> dict[str, Any]:
    if not form.saved:
        raise ScenarioError("load: select a saved scenario")
    with context.current().database.cursor() as cur:
        loaded = scenarios.load_scenario(cur, form.saved[0])
    scenario = scenario_to_json(scenario_from_json(loaded.scenario))
    return {"name": loaded.name, "scenario": scenario}


def _scenario(inputs: RunInputs, store: Any, run_id: str | None) -> dict[str, Any]:
    """The scenario JSON of the run's edit log in the session store."""
    return whatif_view.fold_edits(inputs, whatif_view.edits_for(store, run_id))


PROPOSALS = {ids.WI_AD_APPLY: "admitted", ids.WI_PV_APPLY: "provisioned"}
"""The planning tabs' buttons that load their proposal as the scenario, and its state."""


def _proposal(proposal: Any) -> dict[str, Any]:
    if not isinstance(proposal, Mapping) or not isinstance(proposal.get("scenario"), Mapping):
        raise ScenarioError("nothing to load: run the planner first")
    return {"name": str(proposal.get("label", "proposal")), "scenario": proposal["scenario"]}


@dash.callback(
    output={
        "scenario": Output(ids.WI_SCENARIO, "data"),
        "tab": Output(ids.WI_TABS, "active_tab"),
        **MESSAGE,
        **NOTE,
    },
    inputs={
        "clicks": {
            key: Input(key, "n_clicks") for key in [*EDITS, ids.WI_LOAD, ids.WI_RESET, *PROPOSALS]
        },
        "undo": Input({"type": ids.WI_UNDO, "index": ALL}, "n_clicks"),
        "tapped": Input(ids.WI_GRAPH, "tapNodeData"),
    },
    state={
        "run_id": State(ids.RUN, "value"),
        "data": State(ids.WI_SCENARIO, "data"),
        "proposals": {
            key: State(ids.WI_AD_RESULT if key == ids.WI_AD_APPLY else ids.WI_PV_RESULT, "data")
            for key in PROPOSALS
        },
        "form": {
            "operator": State(ids.WI_OPERATOR, "value"),
            "target": State(ids.WI_TARGET, "value"),
            "cap_node": State(ids.WI_CAP_NODE, "value"),
            "cap_value": State(ids.WI_CAP_VALUE, "value"),
            "add_id": State(ids.WI_ADD_NODE_ID, "value"),
            "add_cap": State(ids.WI_ADD_NODE_CAP, "value"),
            "rate": State(ids.WI_RATE, "value"),
            "factor": State(ids.WI_FACTOR, "value"),
            "rows": State(ids.WI_TABLE, "data"),
            "optimized": State(ids.WI_OPT_RESULT, "data"),
            "saved": State(ids.WI_SAVED, "value"),
        },
    },
    prevent_initial_call=True,
)
def edit(
    clicks: dict[str, Any],
    undo: list[Any],
    tapped: Any,
    run_id: str | None,
    data: dict[str, Any] | None,
    proposals: dict[str, Any],
    form: dict[str, Any],
) -> dict[str, Any]:
    """One more edit in the run's edit log (or an undo, or Reset, or a planning tab's
    proposal loaded as the scenario), with a confirmation."""
    trigger = ctx.triggered_id
    unchanged = {"scenario": no_update, "text": no_update, "note": no_update, "tab": no_update}
    if trigger == ids.WI_GRAPH:
        return {**unchanged, "open": False, "note_open": no_update}
    undoing = isinstance(trigger, Mapping) and trigger.get("type") == ids.WI_UNDO
    if undoing and not ctx.triggered[0]["value"]:  # the list was redrawn, nothing clicked
        return {**unchanged, "open": no_update, "note_open": no_update}
    values = whatif_view.EditForm(**form)
    edits = whatif_view.edits_for(data, run_id)
    try:
        inputs = _inputs(run_id)
        if trigger == ids.WI_RESET:
            result = whatif_view.EditResult([], "reset: no edits")
        elif undoing:
            result = whatif_view.undo_edit(inputs, edits, int(trigger["index"]))
        elif trigger == ids.WI_LOAD:
            result = whatif_view.add_edit(inputs, edits, "load_saved", _load_saved(values))
        elif trigger in PROPOSALS:
            proposal = _proposal(proposals.get(trigger))
            result = whatif_view.add_edit(inputs, edits, "load_saved", proposal)
        elif trigger in EDITS:
            action, read = EDITS[trigger]
            result = whatif_view.add_edit(inputs, edits, action, read(values))
        else:
            raise ScenarioError("unknown action")
    except MaceError as exc:
        return {"scenario": no_update, "tab": no_update, **_failed(exc)}
    store = whatif_view.with_edits(data, run_id or "", result.edits)
    tab = TAB_EDITOR if isinstance(trigger, str) and trigger in PROPOSALS else no_update
    return {"scenario": store, "tab": tab, **_notify(result.note)}


@dash.callback(
    Output(ids.WI_EDITS, "children"),
    Input(ids.WI_SCENARIO, "data"),
    Input(ids.RUN, "value"),
)
def edit_list(data: Any, run_id: str | None) -> Any:
    """The edits made so far on this run, each with its undo button."""
    edits = whatif_view.edits_for(data, run_id)
    if not edits:
        return html.Small("no edits yet", className="text-muted")
    return html.Ol(
        [
            html.Li(
                [
                    html.Span(edit["label"], className="me-2"),
                    dbc.Button(
                        "undo",
                        id={"type": ids.WI_UNDO, "index": k},
                        size="sm",
                        color="link",
                        className="p-0 align-baseline",
                    ),
                ]
            )
            for k, edit in enumerate(edits)
        ],
        className="mb-0 small",
    )


@dash.callback(
    output={
        "fields": {c: Output(c, prop, allow_duplicate=True) for c, (prop, _) in FIELDS.items()},
        "result": Output(ids.WI_OPT_RESULT, "data", allow_duplicate=True),
        "status": Output(ids.WI_OPT_STATUS, "children", allow_duplicate=True),
        "queries": Output(ids.WI_OPT_QUERIES, "data", allow_duplicate=True),
        "apply_disabled": Output(ids.WI_OPT_APPLY, "disabled", allow_duplicate=True),
    },
    inputs={"reset": Input(ids.WI_RESET, "n_clicks")},
    prevent_initial_call=True,
)
def reset_fields(reset: Any) -> dict[str, Any]:
    """Reset clears every field of the form, and the optimizer's result."""
    return {
        "fields": {c: value for c, (_, value) in FIELDS.items()},
        "result": None,
        "status": "",
        "queries": [],
        "apply_disabled": True,
    }


@dash.callback(
    output={
        "latency": Output(ids.WI_MACE, "figure"),
        "queries": Output(ids.WI_QUERIES, "figure"),
        "elements": Output(ids.WI_GRAPH, "elements"),
        "table": Output(ids.WI_TABLE, "data"),
        "summary": Output(ids.WI_MACE_WC, "children"),
        "operators": Output(ids.WI_OPERATOR, "options"),
        "targets": Output(ids.WI_TARGET, "options"),
        "cap_nodes": Output(ids.WI_CAP_NODE, "options"),
        "saved": Output(ids.WI_SAVED, "options"),
        "inputs_key": Output(ids.WI_INPUTS_KEY, "data"),
        **MESSAGE,
    },
    inputs={
        "run_id": Input(ids.RUN, "value"),
        "data": Input(ids.WI_SCENARIO, "data"),
        "selected": Input(ids.WI_OPERATOR, "value"),
        "estimator": Input(ids.ESTIMATOR, "value"),
    },
    prevent_initial_call="initial_duplicate",
)
def show(
    run_id: str | None, data: dict[str, Any] | None, selected: str | None, estimator: str | None
) -> dict[str, Any]:
    try:
        inputs = _inputs(run_id)
        app = context.current()
        scenario = _scenario(inputs, data, run_id)
        view = whatif_view.render(app.engine, inputs, scenario, selected, estimator or "mace")
        with app.database.cursor() as cur:
            saved = scenarios.list_scenarios(cur, run_id or "")
    except MaceError as exc:
        empty: dict[str, Any] = {}
        return {
            "latency": empty, "queries": empty, "elements": [], "table": [], "summary": "",
            "operators": [], "targets": [], "cap_nodes": [], "saved": [],
            "inputs_key": None, "text": str(exc), "open": True,
        }  # fmt: skip
    return {
        "latency": view.latency_figure,
        "queries": view.query_figure,
        "elements": view.graph.elements,
        "table": view.table_rows,
        "summary": view.summary,
        "operators": view.operator_options,
        "targets": view.node_options,
        "cap_nodes": view.node_options,
        "saved": _saved_options(saved),
        "inputs_key": inputs.key,
        "text": no_update,
        "open": no_update,
    }


def _saved_options(saved: list[scenarios.SavedScenario]) -> list[dict[str, str]]:
    return [
        {"label": f"{s.name} ({s.created_at:%Y-%m-%d %H:%M})", "value": s.scenario_id}
        for s in saved
    ]


@dash.callback(
    Output(ids.WI_GRAPH, "stylesheet"),
    Output(ids.WI_GRAPH_LEGEND, "children"),
    Input(ids.WI_GRAPH_MODE, "value"),
    Input(ids.WI_GRAPH, "elements"),
)
def graph_colours(mode: str | None, elements: list[dict[str, Any]] | None) -> tuple:
    """The operator graph's colours and legend for the chosen mode."""
    return graph_panel.styled(mode, elements, GRAPH_MODES)


@dash.callback(
    Output(ids.WI_GRAPH, "layout"),
    Input(ids.WI_GRAPH_FIT, "n_clicks"),
    prevent_initial_call=True,
)
def graph_fit(clicks: int | None) -> dict[str, Any]:
    return graph_panel.refit(clicks)


@dash.callback(
    Output(ids.WI_OPERATOR, "value"),
    Input(ids.WI_GRAPH, "tapNodeData"),
    prevent_initial_call=True,
)
def select_from_graph(tapped: dict[str, Any] | None) -> Any:
    if not tapped or "node" not in tapped:
        return no_update
    return tapped.get("id")


@dash.callback(
    output={
        "result": Output(ids.WI_OPT_RESULT, "data"),
        "status": Output(ids.WI_OPT_STATUS, "children"),
        "apply_disabled": Output(ids.WI_OPT_APPLY, "disabled"),
        "queries": Output(ids.WI_OPT_QUERIES, "data"),
        **MESSAGE,
    },
    inputs={"start": Input(ids.WI_OPT_START, "n_clicks")},
    state={
        "inputs_key": State(ids.WI_INPUTS_KEY, "data"),
        "run_id": State(ids.RUN, "value"),
        "data": State(ids.WI_SCENARIO, "data"),
        "algorithms": State(ids.WI_OPT_ALGO, "value"),
        "budget": State(ids.WI_OPT_BUDGET, "value"),
        "objective": State(ids.WI_OPT_OBJECTIVE, "value"),
        "max_worse": State(ids.WI_OPT_MAX_WORSE, "value"),
    },
    background=True,
    progress=[Output(ids.WI_OPT_PROGRESS, "value"), Output(ids.WI_OPT_PROGRESS, "label")],
    progress_default=[0, ""],
    running=[
        (Output(ids.WI_OPT_START, "disabled"), True, False),
        (Output(ids.WI_OPT_CANCEL, "disabled"), False, True),
    ],
    cancel=[Input(ids.WI_OPT_CANCEL, "n_clicks")],
    prevent_initial_call=True,
)
def optimize(
    set_progress: Callable[[tuple[int, str]], None],
    start: Any,
    inputs_key: str | None,
    run_id: str | None,
    data: Any,
    algorithms: Any,
    budget: Any,
    objective: str | None,
    max_worse: Any,
) -> dict[str, Any]:
    """Runs in a worker process: the run's inputs come from the engine's cache (filled
    when the page showed the run), never from the database."""
    try:
        seconds = parse_positive(budget, "time budget", upper=optimizer.MAX_BUDGET)
        limit = optimizer.parse_limit(objective, max_worse)
        engine = context.current().engine
        inputs = engine.cached_inputs(inputs_key or "")
        scenario = scenario_from_json(_scenario(inputs, data, run_id))
        evaluator = engine.evaluator(inputs, scenario)
        shown: list[tuple[int, str]] = []

        def report(progress: optimizer.Progress) -> None:
            update = (progress.percent, progress.label)
            if not shown or shown[-1] != update:  # one cache write per visible change
                shown.append(update)
                set_progress(update)

        outcome = optimizer.optimize(
            evaluator.topology,
            evaluator.model,
            list(algorithms or []),
            seconds,
            report,
            max_worse=limit,
        )
    except MaceError as exc:
        return {
            "result": no_update, "status": "", "apply_disabled": True, "queries": [],
            "text": str(exc), "open": True,
        }  # fmt: skip
    return {
        "result": {"placement": outcome.placement, "best_wc": outcome.best_wc},
        "status": outcome.label,
        "apply_disabled": False,
        "queries": outcome.query_rows(),
        "text": no_update,
        "open": no_update,
    }


@dash.callback(
    output={"options": Output(ids.WI_SAVED, "options", allow_duplicate=True), **MESSAGE, **NOTE},
    inputs={"save": Input(ids.WI_SAVE, "n_clicks")},
    state={
        "run_id": State(ids.RUN, "value"),
        "data": State(ids.WI_SCENARIO, "data"),
        "name": State(ids.WI_SAVE_NAME, "value"),
    },
    prevent_initial_call=True,
)
def save(save: Any, run_id: str | None, data: Any, name: str | None) -> dict[str, Any]:
    try:
        app = context.current()
        inputs = _inputs(run_id)
        scenario = _scenario(inputs, data, run_id)
        whatif_view.validate(app.engine, inputs, scenario)  # only valid scenarios
        with app.database.cursor() as cur:
            scenarios.save_scenario(cur, run_id or "", name or "", scenario)
            saved = scenarios.list_scenarios(cur, run_id or "")
    except MaceError as exc:
        return {"options": no_update, **_failed(exc)}
    return {"options": _saved_options(saved), **_notify(f"saved scenario '{(name or '').strip()}'")}


@dash.callback(
    output={
        "rows": Output(ids.WI_COMPARE_TABLE, "data"),
        "columns": Output(ids.WI_COMPARE_TABLE, "columns"),
        **MESSAGE,
    },
    inputs={"compare": Input(ids.WI_COMPARE, "n_clicks")},
    state={
        "run_id": State(ids.RUN, "value"),
        "data": State(ids.WI_SCENARIO, "data"),
        "saved": State(ids.WI_SAVED, "value"),
        "estimator": State(ids.ESTIMATOR, "value"),
    },
    prevent_initial_call=True,
)
def compare(
    compare: Any, run_id: str | None, data: Any, saved: list[str] | None, estimator: str | None
) -> dict[str, Any]:
    try:
        inputs = _inputs(run_id)
        named: list[tuple[str, Any]] = [("this scenario", _scenario(inputs, data, run_id))]
        with context.current().database.cursor() as cur:
            for scenario_id in saved or []:
                stored = scenarios.load_scenario(cur, scenario_id)
                named.append((stored.name, stored.scenario))
        rows = whatif_view.compare_rows(
            context.current().engine, inputs, named, estimator or "mace"
        )
    except MaceError as exc:
        return {"rows": no_update, "columns": no_update, "text": str(exc), "open": True}
    columns = [{"name": k, "id": k} for k in dict.fromkeys(k for r in rows for k in r)]
    return {"rows": rows, "columns": columns, "text": no_update, "open": no_update}


@dash.callback(
    output={"download": Output(ids.WI_DOWNLOAD, "data"), **MESSAGE},
    inputs={"export": Input(ids.WI_EXPORT, "n_clicks")},
    state={"run_id": State(ids.RUN, "value"), "data": State(ids.WI_SCENARIO, "data")},
    prevent_initial_call=True,
)
def export(export: Any, run_id: str | None, data: Any) -> dict[str, Any]:
    try:
        inputs = _inputs(run_id)
        scenario = _scenario(inputs, data, run_id)
        text = whatif_view.export_topology(context.current().engine, inputs, scenario)
    except MaceError as exc:
        return {"download": no_update, "text": str(exc), "open": True}
    content = {"content": text, "filename": f"{run_id}-scenario.yaml"}
    return {"download": content, "text": no_update, "open": no_update}


# -- planning tabs (issue 18) ------------------------------------------------------------


@dash.callback(
    output={
        "objectives": Output(ids.WI_OBJECTIVES, "data"),
        "objective": Output(ids.WI_PV_OBJECTIVE, "value"),
        "capacity": Output(ids.WI_PV_CAPACITY, "value"),
        "queries": Output(ids.WI_PL_QUERY, "options"),
        "query": Output(ids.WI_PL_QUERY, "value"),
    },
    inputs={"run_id": Input(ids.RUN, "value")},
)
def planning_defaults(run_id: str | None) -> dict[str, Any]:
    """The run's stored objectives (the background jobs never read the database), and
    defaults: the tightest stored objective (else the current MaceWC), the largest node
    capacity, the first query."""
    try:
        app = context.current()
        inputs = _inputs(run_id)
        with app.database.cursor() as cur:
            stored = scenarios.objectives(cur, run_id or "")
        defaults = planning_view.defaults(app.engine, inputs, stored)
    except MaceError:
        return {"objectives": {}, "objective": "", "capacity": "1", "queries": [], "query": None}
    return {
        "objectives": stored,
        "objective": defaults.objective,
        "capacity": defaults.capacity,
        "queries": defaults.queries,
        "query": defaults.queries[0] if defaults.queries else None,
    }


DECISION = {
    "decision": Output(ids.WI_AD_DECISION, "children"),
    "color": Output(ids.WI_AD_DECISION, "color"),
    "open": Output(ids.WI_AD_DECISION, "is_open"),
}


@dash.callback(
    output={"text": Output(ids.WI_AD_TEXT, "value"), **DECISION},
    inputs={"contents": Input(ids.WI_AD_UPLOAD, "contents")},
    state={"filename": State(ids.WI_AD_UPLOAD, "filename")},
    prevent_initial_call=True,
)
def admit_upload(contents: str | None, filename: str | None) -> dict[str, Any]:
    """An uploaded query file goes into the text box (to read, edit, then check)."""
    try:
        text = planning_view.upload_text(contents, filename)
    except MaceError as exc:
        return {"text": no_update, "decision": str(exc), "color": "danger", "open": True}
    return {"text": text, "decision": f"loaded {filename}", "color": "secondary", "open": True}


@dash.callback(
    output={
        **DECISION,
        "queries": Output(ids.WI_AD_QUERIES, "data"),
        "placement": Output(ids.WI_AD_PLACEMENT, "data"),
        "result": Output(ids.WI_AD_RESULT, "data"),
        "apply_disabled": Output(ids.WI_AD_APPLY, "disabled"),
    },
    inputs={"start": Input(ids.WI_AD_START, "n_clicks")},
    state={
        "inputs_key": State(ids.WI_INPUTS_KEY, "data"),
        "run_id": State(ids.RUN, "value"),
        "data": State(ids.WI_SCENARIO, "data"),
        "text": State(ids.WI_AD_TEXT, "value"),
        "filename": State(ids.WI_AD_UPLOAD, "filename"),
        "objective": State(ids.WI_AD_OBJECTIVE, "value"),
        "algorithm": State(ids.WI_AD_ALGO, "value"),
        "budget": State(ids.WI_AD_BUDGET, "value"),
        "objectives": State(ids.WI_OBJECTIVES, "data"),
    },
    background=True,
    running=[
        (Output(ids.WI_AD_START, "disabled"), True, False),
        (Output(ids.WI_AD_BUSY, "children"), "placing the new operators…", ""),
    ],
    prevent_initial_call=True,
)
def admit(
    start: Any,
    inputs_key: str | None,
    run_id: str | None,
    data: Any,
    text: str | None,
    filename: str | None,
    objective: Any,
    algorithm: str | None,
    budget: Any,
    objectives: Any,
) -> dict[str, Any]:
    """Admission control of the query in the text box against the scenario (a worker
    process: inputs from the engine's cache, objectives from the page's store)."""
    try:
        if not (text or "").strip():
            raise ScenarioError("admit: upload or paste a query file first")
        query = planning_view.added_query_from_text(text or "", filename or "query file")
        engine = context.current().engine
        inputs = engine.cached_inputs(inputs_key or "")
        view = planning_view.admission(
            engine,
            inputs,
            _scenario(inputs, data, run_id),
            query,
            planning_view.stored_objectives(objectives),
            new_objective=(
                None
                if not str(objective or "").strip()
                else planning_view.parse_objective(objective, "objective of the new query")
            ),
            algorithm=algorithm or "mace-hc",
            budget=parse_positive(budget, "time budget", upper=planning_view.MAX_PLANNING_BUDGET),
        )
    except MaceError as exc:
        return {
            "decision": str(exc), "color": "danger", "open": True, "queries": [],
            "placement": [], "result": None, "apply_disabled": True,
        }  # fmt: skip
    return {
        "decision": view.message,
        "color": "success" if view.admitted else "warning",
        "open": True,
        "queries": view.rows,
        "placement": view.placement,
        "result": {"scenario": view.scenario, "label": f"admitted {view.query}"},
        "apply_disabled": not view.admitted,
    }


@dash.callback(
    output={
        "decision": Output(ids.WI_PV_DECISION, "children"),
        "color": Output(ids.WI_PV_DECISION, "color"),
        "open": Output(ids.WI_PV_DECISION, "is_open"),
        "queries": Output(ids.WI_PV_QUERIES, "data"),
        "nodes": Output(ids.WI_PV_NODES, "data"),
        "result": Output(ids.WI_PV_RESULT, "data"),
        "apply_disabled": Output(ids.WI_PV_APPLY, "disabled"),
    },
    inputs={"start": Input(ids.WI_PV_START, "n_clicks")},
    state={
        "inputs_key": State(ids.WI_INPUTS_KEY, "data"),
        "run_id": State(ids.RUN, "value"),
        "data": State(ids.WI_SCENARIO, "data"),
        "objective": State(ids.WI_PV_OBJECTIVE, "value"),
        "mode": State(ids.WI_PV_MODE, "value"),
        "capacity": State(ids.WI_PV_CAPACITY, "value"),
        "budget": State(ids.WI_PV_BUDGET, "value"),
    },
    background=True,
    progress=Output(ids.WI_PV_BUSY, "children"),
    progress_default="",
    running=[
        (Output(ids.WI_PV_START, "disabled"), True, False),
        (Output(ids.WI_PV_CANCEL, "disabled"), False, True),
    ],
    cancel=[Input(ids.WI_PV_CANCEL, "n_clicks")],
    prevent_initial_call=True,
)
def provision(
    set_progress: Callable[[str], None],
    start: Any,
    inputs_key: str | None,
    run_id: str | None,
    data: Any,
    objective: Any,
    mode: str | None,
    capacity: Any,
    budget: Any,
) -> dict[str, Any]:
    """Nodes or capacity the objective needs on the scenario (a worker process)."""
    try:
        seconds = planning_view.parse_objective(objective)
        engine = context.current().engine
        inputs = engine.cached_inputs(inputs_key or "")
        view = planning_view.provisioning(
            engine,
            inputs,
            _scenario(inputs, data, run_id),
            seconds,
            mode=mode or "nodes",
            node_capacity=parse_positive(capacity, "node capacity", upper=MAX_CAPACITY),
            budget=parse_positive(budget, "search budget", upper=planning_view.MAX_PLANNING_BUDGET),
            progress=lambda count: set_progress(
                f"searching placements on {count} node{'s' * (count != 1)}…"
            ),
        )
    except MaceError as exc:
        return {
            "decision": str(exc), "color": "danger", "open": True, "queries": [],
            "nodes": [], "result": None, "apply_disabled": True,
        }  # fmt: skip
    return {
        "decision": view.message,
        "color": "success" if view.feasible else "warning",
        "open": True,
        "queries": view.rows,
        "nodes": view.nodes,
        "result": {"scenario": view.scenario, "label": f"provisioned: {view.label}"},
        "apply_disabled": not view.feasible,
    }


@dash.callback(
    output={
        "rows": Output(ids.WI_PL_TABLE, "data"),
        "chosen": Output(ids.WI_PL_CHOSEN, "children"),
        "color": Output(ids.WI_PL_CHOSEN, "color"),
        "open": Output(ids.WI_PL_CHOSEN, "is_open"),
    },
    inputs={
        "contents": Input(ids.WI_PL_UPLOAD, "contents"),
        "criterion": Input(ids.WI_PL_CRITERION, "value"),
        "query": Input(ids.WI_PL_QUERY, "value"),
    },
    state={"filenames": State(ids.WI_PL_UPLOAD, "filename"), "run_id": State(ids.RUN, "value")},
    prevent_initial_call=True,
)
def compare_plans(
    contents: list[str] | None,
    criterion: str | None,
    query: str | None,
    filenames: list[str] | None,
    run_id: str | None,
) -> dict[str, Any]:
    """Rank the running plan of the query against the uploaded plans."""
    if not contents:
        return {"rows": [], "chosen": "", "color": "secondary", "open": False}
    try:
        names = list(filenames or [])
        files = [
            (name, planning_view.upload_text(content, name))
            for name, content in zip(names, contents, strict=False)
        ]
        ranking = planning_view.plan_ranking(_inputs(run_id), query, files, criterion or "mace_wc")
    except MaceError as exc:
        return {"rows": [], "chosen": str(exc), "color": "danger", "open": True}
    return {"rows": ranking.rows, "chosen": ranking.message, "color": "success", "open": True}


# ---------------------------------------------------------------------------
# "Apply to the running system" (issue 15): a self-contained block. The button sends the
# scenario's placement as a request (storage.placement_requests) that the live simulator
# of `mace demo` polls and applies; dashboard.live_view decides when it is available.
# ---------------------------------------------------------------------------


def live_apply_block() -> html.Div:
    """The button and the sentence saying what it does, or why it is not available."""
    return html.Div(
        [
            dbc.Button(
                "Apply to the running system",
                id=ids.WI_LIVE_APPLY,
                size="sm",
                color="primary",
                disabled=True,
                className="text-nowrap",
            ),
            html.Small(id=ids.WI_LIVE_STATUS, className="text-muted"),
        ],
        className="d-flex align-items-center gap-3 mb-2",
    )


def _live_state(run_id: str | None) -> tuple[bool, str]:
    """(enabled, the sentence shown under the button) for the selected run."""
    app = context.current()
    counters = False
    if run_id:
        try:
            counters = app.runs.get(run_id).info.counters
        except MaceError:
            return False, "Select a run."
    enabled, why = live_view.availability(run_id, app.live_run, counters)
    if enabled:
        with app.database.cursor() as cur:
            latest = placement_requests.latest_request(cur, run_id or "")
        why = live_view.request_status(latest) or why
    return enabled, why


@dash.callback(
    Output(ids.WI_LIVE_APPLY, "disabled"),
    Output(ids.WI_LIVE_STATUS, "children"),
    Input(ids.RUN, "value"),
    Input(ids.RUN_REFRESH, "n_intervals"),
)
def live_state(run_id: str | None, _: Any) -> tuple[bool, str]:
    """The button is enabled only for the run a live simulator listens to."""
    try:
        enabled, why = _live_state(run_id)
    except MaceError as exc:
        return True, str(exc)
    return not enabled, why


@dash.callback(
    output={"status": Output(ids.WI_LIVE_STATUS, "children", allow_duplicate=True), **MESSAGE},
    inputs={"apply": Input(ids.WI_LIVE_APPLY, "n_clicks")},
    state={"run_id": State(ids.RUN, "value"), "data": State(ids.WI_SCENARIO, "data")},
    prevent_initial_call=True,
)
def apply_live(apply: Any, run_id: str | None, data: Any) -> dict[str, Any]:
    """Store the scenario's placement as a request to the live simulator."""
    try:
        enabled, why = _live_state(run_id)
        if not enabled:
            raise ScenarioError(why)
        inputs = _inputs(run_id)
        app = context.current()
        deployment, _ = app.engine.applied(
            inputs, scenario_from_json(_scenario(inputs, data, run_id))
        )
        placement = live_view.requested_placement(inputs.topology, deployment)
        with app.database.cursor() as cur:
            placement_requests.request_placement(cur, run_id or "", placement)
            latest = placement_requests.latest_request(cur, run_id or "")
    except MaceError as exc:
        return {"status": no_update, "text": str(exc), "open": True}
    return {"status": live_view.request_status(latest), "text": "", "open": False}
