"""What-if: move operators, change nodes and load, optimize, save and export scenarios.

Callbacks are thin: they read the form into typed view models (dict-grouped
``inputs=``/``state=``), ask :mod:`dashboard.whatif_view` (which asks the
estimator's what-if engine) and lay out the answer. The optimizer is a Dash
background callback with progress and a Cancel button (:mod:`dashboard.optimizer`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import dash
import dash_bootstrap_components as dbc
import dash_cytoscape as cyto
from dash import Input, Output, State, ctx, dcc, html, no_update
from dash.dash_table.DataTable import DataTable

from dashboard import context, ids, optimizer, whatif_view
from estimator.errors import MaceError
from estimator.placement import ALGORITHMS
from estimator.whatif import (
    RunInputs,
    ScenarioError,
    parse_positive,
    scenario_from_json,
    scenario_to_json,
)
from storage import scenarios

dash.register_page(__name__, path="/whatif", name="What-if", order=2)


def _row(label: str, *children: Any) -> dbc.Row:
    return dbc.Row(
        [dbc.Col(html.Small(label), width=12), *[dbc.Col(c) for c in children]],
        className="g-1 mb-2",
    )


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
                    "Source rate scale · subinterval factor",
                    dbc.Input(id=ids.WI_RATE, value="1", size="sm"),
                    dbc.Input(id=ids.WI_FACTOR, value="1", size="sm"),
                    dbc.Button("Apply", id=ids.WI_APPLY_RATE, size="sm"),
                    dbc.Button("Reset", id=ids.WI_RESET, size="sm", color="secondary"),
                ),
                _row(
                    "Optimize placement (algorithms, budget in s)",
                    dcc.Dropdown(
                        id=ids.WI_OPT_ALGO,
                        options=list(ALGORITHMS),
                        value=["mace-hc"],
                        multi=True,
                    ),
                    dbc.Input(id=ids.WI_OPT_BUDGET, value="3", size="sm"),
                    dbc.Button("Optimize", id=ids.WI_OPT_START, size="sm", color="success"),
                    dbc.Button(
                        "Cancel", id=ids.WI_OPT_CANCEL, size="sm", color="warning", disabled=True
                    ),
                ),
                dbc.Progress(id=ids.WI_OPT_PROGRESS, value=0, label="", className="mb-2"),
                html.Small(id=ids.WI_OPT_STATUS, className="d-block mb-2"),
                dbc.Button(
                    "Use optimized placement", id=ids.WI_OPT_APPLY, size="sm", disabled=True
                ),
                html.Hr(),
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
    return html.Div(
        [
            dcc.Store(id=ids.WI_SCENARIO, data={}),
            dcc.Store(id=ids.WI_INPUTS_KEY),
            dcc.Store(id=ids.WI_OPT_RESULT),
            dcc.Download(id=ids.WI_DOWNLOAD),
            dbc.Alert(id=ids.WI_MESSAGE, is_open=False, color="danger", dismissable=True),
            dbc.Alert(COUNTER_RUN_NOTE, id=ids.WI_ENGINE_NOTE, is_open=False, color="info"),
            html.H4(id=ids.WI_MACE_WC, className="mb-2"),
            dbc.Row(
                [
                    dbc.Col(controls, md=4),
                    dbc.Col(
                        cyto.Cytoscape(
                            id=ids.WI_GRAPH,
                            elements=[],
                            layout={"name": "breadthfirst", "directed": True},
                            stylesheet=whatif_view.figures.GRAPH_STYLESHEET,
                            style={"width": "100%", "height": "420px"},
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
        ]
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
    ids.WI_RESET: ("reset", lambda f: {}),
    ids.WI_APPLY_TABLE: ("table", lambda f: {"rows": f.rows}),
    ids.WI_OPT_APPLY: ("placement", _optimized),
}
"""Which page action each button triggers, and the form values it takes."""


def _load_saved(form: whatif_view.EditForm) -> tuple[dict[str, Any], str]:
    if not form.saved:
        raise ScenarioError("load: select a saved scenario")
    with context.current().database.cursor() as cur:
        loaded = scenarios.load_scenario(cur, form.saved[0])
    scenario = scenario_to_json(scenario_from_json(loaded.scenario))
    return scenario, f"loaded scenario '{loaded.name}'"


@dash.callback(
    output={"scenario": Output(ids.WI_SCENARIO, "data"), **MESSAGE},
    inputs={
        "clicks": {key: Input(key, "n_clicks") for key in [*EDITS, ids.WI_LOAD]},
        "tapped": Input(ids.WI_GRAPH, "tapNodeData"),
    },
    state={
        "run_id": State(ids.RUN, "value"),
        "data": State(ids.WI_SCENARIO, "data"),
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
    tapped: Any,
    run_id: str | None,
    data: dict[str, Any] | None,
    form: dict[str, Any],
) -> dict[str, Any]:
    trigger = ctx.triggered_id
    if trigger == ids.WI_GRAPH:
        return {"scenario": no_update, "text": no_update, "open": False}
    values = whatif_view.EditForm(**form)
    try:
        inputs = _inputs(run_id)
        if trigger == ids.WI_LOAD:
            scenario, note = _load_saved(values)
            return {"scenario": scenario, "text": note, "open": False}
        if trigger not in EDITS:
            raise ScenarioError("unknown action")
        action, read = EDITS[trigger]
        scenario = whatif_view.apply_edit(inputs, data, action, read(values))
        return {"scenario": scenario, "text": "", "open": False}
    except MaceError as exc:
        return {"scenario": no_update, "text": str(exc), "open": True}


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
        view = whatif_view.render(app.engine, inputs, data, selected, estimator or "mace")
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
        "elements": view.elements,
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
        **MESSAGE,
    },
    inputs={"start": Input(ids.WI_OPT_START, "n_clicks")},
    state={
        "inputs_key": State(ids.WI_INPUTS_KEY, "data"),
        "data": State(ids.WI_SCENARIO, "data"),
        "algorithms": State(ids.WI_OPT_ALGO, "value"),
        "budget": State(ids.WI_OPT_BUDGET, "value"),
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
    data: Any,
    algorithms: Any,
    budget: Any,
) -> dict[str, Any]:
    """Runs in a worker process: the run's inputs come from the engine's cache (filled
    when the page showed the run), never from the database."""
    try:
        seconds = parse_positive(budget, "time budget", upper=optimizer.MAX_BUDGET)
        engine = context.current().engine
        inputs = engine.cached_inputs(inputs_key or "")
        evaluator = engine.evaluator(inputs, scenario_from_json(data))
        shown: list[tuple[int, str]] = []

        def report(progress: optimizer.Progress) -> None:
            update = (progress.percent, progress.label)
            if not shown or shown[-1] != update:  # one cache write per visible change
                shown.append(update)
                set_progress(update)

        outcome = optimizer.optimize(
            evaluator.topology, evaluator.model, list(algorithms or []), seconds, report
        )
    except MaceError as exc:
        return {
            "result": no_update, "status": "", "apply_disabled": True,
            "text": str(exc), "open": True,
        }  # fmt: skip
    return {
        "result": {"placement": outcome.placement, "best_wc": outcome.best_wc},
        "status": outcome.label,
        "apply_disabled": False,
        "text": no_update,
        "open": no_update,
    }


@dash.callback(
    output={"options": Output(ids.WI_SAVED, "options", allow_duplicate=True), **MESSAGE},
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
        whatif_view.validate(app.engine, _inputs(run_id), data)  # only valid scenarios
        with app.database.cursor() as cur:
            scenarios.save_scenario(cur, run_id or "", name or "", data or {})
            saved = scenarios.list_scenarios(cur, run_id or "")
    except MaceError as exc:
        return {"options": no_update, "text": str(exc), "open": True}
    return {"options": _saved_options(saved), "text": no_update, "open": no_update}


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
        named: list[tuple[str, Any]] = [("this scenario", data or {})]
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
        text = whatif_view.export_topology(context.current().engine, _inputs(run_id), data)
    except MaceError as exc:
        return {"download": no_update, "text": str(exc), "open": True}
    content = {"content": text, "filename": f"{run_id}-scenario.yaml"}
    return {"download": content, "text": no_update, "open": no_update}
