"""What-if: move operators, change nodes and load, optimize, save and export scenarios."""

from __future__ import annotations

from typing import Any

import dash
import dash_bootstrap_components as dbc
import dash_cytoscape as cyto
from dash import Input, Output, State, ctx, dcc, html, no_update
from dash.dash_table.DataTable import DataTable

from dashboard import context, ids, whatif_view
from dashboard.scenario import ScenarioError
from estimator.errors import MaceError
from estimator.placement import ALGORITHMS
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
                ),
                dbc.Progress(id=ids.WI_OPT_PROGRESS, value=0, label="", className="mb-2"),
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
            dcc.Store(id=ids.WI_OPT_JOB),
            dcc.Interval(id=ids.WI_OPT_POLL, interval=500, disabled=True),
            dcc.Download(id=ids.WI_DOWNLOAD),
            dbc.Alert(id=ids.WI_MESSAGE, is_open=False, color="danger", dismissable=True),
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


def _inputs(run_id: str | None) -> whatif_view.RunInputs:
    if not run_id:
        raise ScenarioError("select a run")
    return whatif_view.inputs_for_run(context.current().runs.get(run_id))


@dash.callback(
    Output(ids.WI_SCENARIO, "data"),
    Output(ids.WI_MESSAGE, "children"),
    Output(ids.WI_MESSAGE, "is_open"),
    Input(ids.WI_MOVE, "n_clicks"),
    Input(ids.WI_SET_CAP, "n_clicks"),
    Input(ids.WI_REMOVE_NODE, "n_clicks"),
    Input(ids.WI_ADD_NODE, "n_clicks"),
    Input(ids.WI_APPLY_RATE, "n_clicks"),
    Input(ids.WI_RESET, "n_clicks"),
    Input(ids.WI_APPLY_TABLE, "n_clicks"),
    Input(ids.WI_OPT_APPLY, "n_clicks"),
    Input(ids.WI_LOAD, "n_clicks"),
    Input(ids.WI_GRAPH, "tapNodeData"),
    State(ids.RUN, "value"),
    State(ids.WI_SCENARIO, "data"),
    State(ids.WI_OPERATOR, "value"),
    State(ids.WI_TARGET, "value"),
    State(ids.WI_CAP_NODE, "value"),
    State(ids.WI_CAP_VALUE, "value"),
    State(ids.WI_ADD_NODE_ID, "value"),
    State(ids.WI_ADD_NODE_CAP, "value"),
    State(ids.WI_RATE, "value"),
    State(ids.WI_FACTOR, "value"),
    State(ids.WI_TABLE, "data"),
    State(ids.WI_OPT_JOB, "data"),
    State(ids.WI_SAVED, "value"),
    prevent_initial_call=True,
)
def edit(*args: Any) -> tuple[Any, Any, bool]:
    (_, _, _, _, _, _, _, _, _, _, run_id, data, operator, target, cap_node, cap_value,
     add_id, add_cap, rate, factor, rows, job, saved) = args  # fmt: skip
    trigger = ctx.triggered_id
    if trigger == ids.WI_GRAPH:
        return no_update, no_update, False
    form = {
        "operator": operator,
        "target": target,
        "cap_node": cap_node,
        "cap_value": cap_value,
        "add_id": add_id,
        "add_cap": add_cap,
        "rate": rate,
        "factor": factor,
        "rows": rows,
        "job": job,
    }
    try:
        inputs = _inputs(run_id)
        if trigger == ids.WI_LOAD:
            if not saved:
                raise ScenarioError("load: select a saved scenario")
            with context.current().database.cursor() as cur:
                loaded = scenarios.load_scenario(cur, saved[0])
            scenario = whatif_view.scenario_to_json(whatif_view.scenario_from_json(loaded.scenario))
            return scenario, f"loaded scenario '{loaded.name}'", False
        action, values = _action(trigger, form)
        return whatif_view.apply_edit(inputs, data, action, values), "", False
    except MaceError as exc:
        return no_update, str(exc), True


def _action(trigger: Any, v: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    if trigger == ids.WI_MOVE:
        return "move", {"operator": v["operator"], "node": v["target"]}
    if trigger == ids.WI_SET_CAP:
        return "capacity", {"node": v["cap_node"], "capacity": v["cap_value"]}
    if trigger == ids.WI_REMOVE_NODE:
        return "remove_node", {"node": v["cap_node"]}
    if trigger == ids.WI_ADD_NODE:
        return "add_node", {"node": v["add_id"], "capacity": v["add_cap"]}
    if trigger == ids.WI_APPLY_RATE:
        return "load", {"rate_scale": v["rate"], "factor": v["factor"]}
    if trigger == ids.WI_RESET:
        return "reset", {}
    if trigger == ids.WI_APPLY_TABLE:
        return "table", {"rows": v["rows"]}
    if trigger == ids.WI_OPT_APPLY:
        status = context.current().jobs.status(v["job"])
        if not status or not status.get("placement"):
            raise ScenarioError("optimize: no optimized placement yet")
        return "placement", {"placement": status["placement"]}
    raise ScenarioError("unknown action")


@dash.callback(
    Output(ids.WI_MACE, "figure"),
    Output(ids.WI_QUERIES, "figure"),
    Output(ids.WI_GRAPH, "elements"),
    Output(ids.WI_TABLE, "data"),
    Output(ids.WI_MACE_WC, "children"),
    Output(ids.WI_OPERATOR, "options"),
    Output(ids.WI_TARGET, "options"),
    Output(ids.WI_CAP_NODE, "options"),
    Output(ids.WI_SAVED, "options"),
    Output(ids.WI_MESSAGE, "children", allow_duplicate=True),
    Output(ids.WI_MESSAGE, "is_open", allow_duplicate=True),
    Input(ids.RUN, "value"),
    Input(ids.WI_SCENARIO, "data"),
    Input(ids.WI_OPERATOR, "value"),
    Input(ids.ESTIMATOR, "value"),
    prevent_initial_call="initial_duplicate",
)
def show(
    run_id: str | None, data: dict[str, Any] | None, selected: str | None, estimator: str | None
) -> tuple:
    try:
        inputs = _inputs(run_id)
        view = whatif_view.render(
            context.current().engine, inputs, data, selected, estimator or "mace"
        )
        with context.current().database.cursor() as cur:
            saved = scenarios.list_scenarios(cur, run_id or "")
    except MaceError as exc:
        empty: dict[str, Any] = {}
        return (empty, empty, [], [], "", [], [], [], [], str(exc), True)
    saved_options = [
        {"label": f"{s.name} ({s.created_at:%Y-%m-%d %H:%M})", "value": s.scenario_id}
        for s in saved
    ]
    return (
        view.mace_figure,
        view.query_figure,
        view.elements,
        view.table_rows,
        view.summary,
        view.operator_options,
        view.node_options,
        view.node_options,
        saved_options,
        no_update,
        no_update,
    )


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
    Output(ids.WI_OPT_JOB, "data"),
    Output(ids.WI_OPT_POLL, "disabled"),
    Output(ids.WI_MESSAGE, "children", allow_duplicate=True),
    Output(ids.WI_MESSAGE, "is_open", allow_duplicate=True),
    Input(ids.WI_OPT_START, "n_clicks"),
    State(ids.RUN, "value"),
    State(ids.WI_SCENARIO, "data"),
    State(ids.WI_OPT_ALGO, "value"),
    State(ids.WI_OPT_BUDGET, "value"),
    prevent_initial_call=True,
)
def optimize(_: Any, run_id: str | None, data: Any, algorithms: Any, budget: Any) -> tuple:
    try:
        inputs = _inputs(run_id)
        seconds = whatif_view.parse_positive(budget, "time budget", upper=120)
        app = context.current()
        evaluator = app.engine.evaluator(inputs, whatif_view.scenario_from_json(data))
        job = app.jobs.start((evaluator.topology, evaluator.model), list(algorithms or []), seconds)
    except MaceError as exc:
        return no_update, True, str(exc), True
    return job, False, no_update, no_update


@dash.callback(
    Output(ids.WI_OPT_PROGRESS, "value"),
    Output(ids.WI_OPT_PROGRESS, "label"),
    Output(ids.WI_OPT_APPLY, "disabled"),
    Output(ids.WI_OPT_POLL, "disabled", allow_duplicate=True),
    Input(ids.WI_OPT_POLL, "n_intervals"),
    State(ids.WI_OPT_JOB, "data"),
    prevent_initial_call=True,
)
def poll(_: Any, job: str | None) -> tuple:
    status = context.current().jobs.status(job)
    if status is None:
        return 0, "", True, True
    percent = round(100 * status["fraction"])
    if status["error"]:
        return percent, f"failed: {status['error']}", True, True
    best = status["best_wc"]
    label = f"{status['current']} {percent}%" + (
        f" · best {best:.4f} s" if best is not None else ""
    )
    if status["done"]:
        label = (
            f"done · best {status['best_algorithm']} {best:.4f} s" if best is not None else "done"
        )
    return percent, label, status["placement"] is None, bool(status["done"])


@dash.callback(
    Output(ids.WI_SAVED, "options", allow_duplicate=True),
    Output(ids.WI_MESSAGE, "children", allow_duplicate=True),
    Output(ids.WI_MESSAGE, "is_open", allow_duplicate=True),
    Input(ids.WI_SAVE, "n_clicks"),
    State(ids.RUN, "value"),
    State(ids.WI_SCENARIO, "data"),
    State(ids.WI_SAVE_NAME, "value"),
    prevent_initial_call=True,
)
def save(_: Any, run_id: str | None, data: Any, name: str | None) -> tuple:
    try:
        inputs = _inputs(run_id)
        whatif_view.render(context.current().engine, inputs, data)  # only valid scenarios
        with context.current().database.cursor() as cur:
            scenarios.save_scenario(cur, run_id or "", name or "", data or {})
            saved = scenarios.list_scenarios(cur, run_id or "")
    except MaceError as exc:
        return no_update, str(exc), True
    options = [{"label": s.name, "value": s.scenario_id} for s in saved]
    return options, no_update, no_update


@dash.callback(
    Output(ids.WI_COMPARE_TABLE, "data"),
    Output(ids.WI_COMPARE_TABLE, "columns"),
    Output(ids.WI_MESSAGE, "children", allow_duplicate=True),
    Output(ids.WI_MESSAGE, "is_open", allow_duplicate=True),
    Input(ids.WI_COMPARE, "n_clicks"),
    State(ids.RUN, "value"),
    State(ids.WI_SCENARIO, "data"),
    State(ids.WI_SAVED, "value"),
    State(ids.ESTIMATOR, "value"),
    prevent_initial_call=True,
)
def compare(
    _: Any, run_id: str | None, data: Any, saved: list[str] | None, estimator: str | None
) -> tuple:
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
        return no_update, no_update, str(exc), True
    columns = [{"name": k, "id": k} for k in dict.fromkeys(k for r in rows for k in r)]
    return rows, columns, no_update, no_update


@dash.callback(
    Output(ids.WI_DOWNLOAD, "data"),
    Output(ids.WI_MESSAGE, "children", allow_duplicate=True),
    Output(ids.WI_MESSAGE, "is_open", allow_duplicate=True),
    Input(ids.WI_EXPORT, "n_clicks"),
    State(ids.RUN, "value"),
    State(ids.WI_SCENARIO, "data"),
    prevent_initial_call=True,
)
def export(_: Any, run_id: str | None, data: Any) -> tuple:
    try:
        text = whatif_view.export_topology(_inputs(run_id), data)
    except MaceError as exc:
        return no_update, str(exc), True
    return dict(content=text, filename=f"{run_id}-scenario.yaml"), no_update, no_update
