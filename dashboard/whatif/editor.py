"""The What-if page's "Scenario editor" tab: move operators, change nodes and load,
optimize, undo, save, compare and export scenarios.

Callbacks are thin: they read the form into typed view models (dict-grouped
``inputs=``/``state=``), ask :mod:`dashboard.whatif_view` (which asks the estimator's
what-if engine) and lay out the answer. The optimizer is a Dash background callback
with progress and a Cancel button (:mod:`dashboard.optimizer`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import dash_bootstrap_components as dbc
from dash import ALL, Input, Output, State, ctx, dcc, html, no_update
from dash.dash_table.DataTable import DataTable

from dashboard import context, graph_panel, ids, operator_graph, optimizer, whatif_view
from dashboard.glossary import term
from dashboard.jobs import background_job, job_buttons
from dashboard.whatif import baseline
from dashboard.whatif.common import (
    MESSAGE,
    NOTE,
    SCENARIO,
    SCENARIO_STATE,
    TAB_EDITOR,
    CallbackSet,
    cached_scenario,
    failed,
    inputs_of,
    notify,
    row,
    run_inputs,
    scenario_of,
)
from estimator.errors import MaceError
from estimator.placement import ALGORITHMS
from estimator.whatif import ScenarioError, parse_positive, scenario_from_json, scenario_to_json
from storage import scenarios

callbacks = CallbackSet()
GRAPH_MODES = (operator_graph.NODE, operator_graph.UTILISATION, operator_graph.CHANGE)


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


def tab() -> html.Div:
    """The scenario editor: the form, the operator graph, the charts and the tables."""
    controls = dbc.Card(
        dbc.CardBody(
            [
                row(
                    "Move an operator",
                    dcc.Dropdown(id=ids.WI_OPERATOR, placeholder="operator"),
                    dcc.Dropdown(id=ids.WI_TARGET, placeholder="node"),
                    dbc.Button("Move", id=ids.WI_MOVE, size="sm"),
                ),
                row(
                    "Node capacity (CPU-s/s)",
                    dcc.Dropdown(id=ids.WI_CAP_NODE, placeholder="node"),
                    dbc.Input(id=ids.WI_CAP_VALUE, type="text", placeholder="capacity", size="sm"),
                    dbc.Button("Set", id=ids.WI_SET_CAP, size="sm"),
                    dbc.Button("Remove node", id=ids.WI_REMOVE_NODE, size="sm", color="danger"),
                ),
                row(
                    "Add a node",
                    dbc.Input(id=ids.WI_ADD_NODE_ID, placeholder="node id", size="sm"),
                    dbc.Input(id=ids.WI_ADD_NODE_CAP, placeholder="capacity", size="sm"),
                    dbc.Button("Add", id=ids.WI_ADD_NODE, size="sm"),
                ),
                row(
                    ["Source rate scale · ", term("subinterval factor")],
                    dbc.Input(id=ids.WI_RATE, value=_default(ids.WI_RATE), size="sm"),
                    dbc.Input(id=ids.WI_FACTOR, value=_default(ids.WI_FACTOR), size="sm"),
                    dbc.Button("Apply", id=ids.WI_APPLY_RATE, size="sm"),
                    dbc.Button("Reset", id=ids.WI_RESET, size="sm", color="secondary"),
                ),
                row(
                    "Optimize placement (algorithms, budget in s)",
                    dcc.Dropdown(
                        id=ids.WI_OPT_ALGO,
                        options=list(ALGORITHMS),
                        value=_default(ids.WI_OPT_ALGO),
                        multi=True,
                    ),
                    dbc.Input(id=ids.WI_OPT_BUDGET, value=_default(ids.WI_OPT_BUDGET), size="sm"),
                    *job_buttons("Optimize", ids.WI_OPT_START, ids.WI_OPT_CANCEL),
                ),
                row(
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
                dcc.Store(id=ids.WI_UNDO_CLICK),
                row(
                    "Scenarios",
                    dbc.Input(id=ids.WI_SAVE_NAME, placeholder="name", size="sm"),
                    dbc.Button("Save", id=ids.WI_SAVE, size="sm"),
                ),
                row(
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
                            hint=f"{graph_panel.HINT} Tap an operator, then a box: Move moves "
                            "it there.",
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


def _load_saved(form: whatif_view.EditForm) -> dict[str, Any]:
    if not form.saved:
        raise ScenarioError("load: select a saved scenario")
    with context.current().database.cursor() as cur:
        loaded = scenarios.load_scenario(cur, form.saved[0])
    scenario = scenario_to_json(scenario_from_json(loaded.scenario))
    return {"name": loaded.name, "scenario": scenario}


PROPOSALS = {ids.WI_AD_APPLY: "admitted", ids.WI_PV_APPLY: "provisioned"}
"""The planning tabs' buttons that load their proposal as the scenario, and its state."""


def _undone(click: Any) -> int:
    """The index of the edit an undo click names (see the clientside filter below)."""
    index = click.get("index") if isinstance(click, Mapping) else None
    if not isinstance(index, int) or isinstance(index, bool):
        raise ScenarioError("undo: no edit chosen")
    return index


def _proposal(proposal: Any) -> dict[str, Any]:
    if not isinstance(proposal, Mapping) or not isinstance(proposal.get("scenario"), Mapping):
        raise ScenarioError("nothing to load: run the planner first")
    return {"name": str(proposal.get("label", "proposal")), "scenario": proposal["scenario"]}


@callbacks.callback(
    output={
        "scenario": Output(ids.WI_SCENARIO, "data"),
        "query": Output(ids.WI_URL_QUERY, "data", allow_duplicate=True),
        "tab": Output(ids.WI_TABS, "active_tab"),
        **MESSAGE,
        **NOTE,
    },
    inputs={
        "clicks": {
            key: Input(key, "n_clicks") for key in [*EDITS, ids.WI_LOAD, ids.WI_RESET, *PROPOSALS]
        },
        "undo": Input(ids.WI_UNDO_CLICK, "data"),
        "tapped": Input(ids.WI_GRAPH, "tapNodeData"),
    },
    state={
        **SCENARIO,
        "search": State(ids.URL, "search"),
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
    undo: Any,
    tapped: Any,
    run_id: str | None,
    data: dict[str, Any] | None,
    windows: Any,
    search: str | None,
    proposals: dict[str, Any],
    form: dict[str, Any],
) -> dict[str, Any]:
    """One more edit in the run's edit log (or an undo, or Reset, or a planning tab's
    proposal loaded as the scenario), with a confirmation; the scenario goes into the
    URL at once, while the view draws it."""
    trigger = ctx.triggered_id
    unchanged = dict.fromkeys(("scenario", "query", "text", "note", "tab"), no_update)
    if trigger == ids.WI_GRAPH:
        return {**unchanged, "open": False, "note_open": no_update}
    undoing = trigger == ids.WI_UNDO_CLICK
    values = whatif_view.EditForm(**form)
    edits = whatif_view.edits_for(data, run_id)
    try:
        inputs = run_inputs(run_id, windows)
        if trigger == ids.WI_RESET:
            result = whatif_view.EditResult([], "reset: no edits")
        elif undoing:
            result = whatif_view.undo_edit(inputs, edits, _undone(undo))
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
        return {"scenario": no_update, "query": no_update, "tab": no_update, **failed(exc)}
    store = whatif_view.with_edits(data, run_id or "", result.edits)
    tab = TAB_EDITOR if isinstance(trigger, str) and trigger in PROPOSALS else no_update
    query = baseline.query(search, run_id, store, windows)
    return {"scenario": store, "query": query, "tab": tab, **notify(result.note)}


# A click on an undo button, as {index, at} (the page's edit callback takes it from here):
# redrawing the list makes new buttons, which the browser reports as a change of them
# all; this filter keeps that from reaching the server.
callbacks.clientside_callback(
    """function(clicks) {
        const hit = (window.dash_clientside.callback_context.triggered || [])
            .find(t => t.value);
        if (!hit) { return window.dash_clientside.no_update; }
        const id = JSON.parse(hit.prop_id.slice(0, hit.prop_id.lastIndexOf(".")));
        return {index: id.index, at: Date.now()};
    }""",
    Output(ids.WI_UNDO_CLICK, "data"),
    Input({"type": ids.WI_UNDO, "index": ALL}, "n_clicks"),
    prevent_initial_call=True,
)


def edit_items(edits: list[dict[str, Any]]) -> Any:
    """The edits made so far on this run, each with its undo button."""
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


@callbacks.callback(
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


@callbacks.callback(
    output={
        "latency": Output(ids.WI_MACE, "figure"),
        "queries": Output(ids.WI_QUERIES, "figure"),
        "elements": Output(ids.WI_GRAPH, "elements"),
        "legend": Output(ids.WI_GRAPH_LEGEND, "children", allow_duplicate=True),
        "table": Output(ids.WI_TABLE, "data"),
        "summary": Output(ids.WI_MACE_WC, "children"),
        "operators": Output(ids.WI_OPERATOR, "options"),
        "targets": Output(ids.WI_TARGET, "options"),
        "cap_nodes": Output(ids.WI_CAP_NODE, "options"),
        "saved": Output(ids.WI_SAVED, "options"),
        "inputs_key": Output(ids.WI_INPUTS_KEY, "data"),
        "edits": Output(ids.WI_EDITS, "children"),
        "label": Output(ids.WI_BASELINE_LABEL, "children"),
        "windows": Output(ids.WI_BASELINE, "data"),
        "scenario": Output(ids.WI_SCENARIO, "data", allow_duplicate=True),
        "link": Output(ids.WI_LINK, "data"),
        **MESSAGE,
    },
    inputs={
        "run_id": Input(ids.RUN, "value"),
        "data": Input(ids.WI_SCENARIO, "data"),
        "selected": Input(ids.WI_OPERATOR, "value"),
        "estimator": Input(ids.ESTIMATOR, "value"),
        "windows": Input(ids.WI_BASELINE, "data"),
        "repin": Input(ids.WI_REPIN, "n_clicks"),
    },
    state={
        "link": State(ids.WI_LINK, "data"),
        "mode": State(ids.WI_GRAPH_MODE, "value"),
        "shown": State(ids.WI_SAVED, "options"),
    },
    prevent_initial_call="initial_duplicate",
)
def show(
    run_id: str | None,
    data: dict[str, Any] | None,
    selected: str | None,
    estimator: str | None,
    windows: Any,
    repin: Any,
    link: Any,
    mode: str | None,
    shown: Any,
) -> dict[str, Any]:
    """The page's one view of the scenario: every figure, table, list and text of it in
    one response, so that the page is drawn once per change. It also takes over the
    scenario of a link the page was opened from (once), pins the run's window and
    re-pins it on request (:func:`dashboard.whatif.baseline.settle`); the saved
    scenarios are read when the page opens and for another run."""
    problems: list[str] = []
    stores: dict[str, Any] = {"windows": no_update, "scenario": no_update, "link": no_update}
    run = None
    try:
        app = context.current()
        if not run_id:
            raise ScenarioError("select a run")
        run = app.runs.get(run_id)
        settled = baseline.settle(link, baseline.repinned(), run, data, windows)
        problems = settled.problems
        if settled.changed:
            data, windows = settled.data, settled.windows
            stores.update(windows=windows, scenario=data)
        if link:
            stores["link"] = None  # taken over: later draws keep the session's edits
        inputs = inputs_of(run, windows)
        scenario = scenario_of(inputs, data, run_id)
        view = whatif_view.render(app.engine, inputs, scenario, selected, estimator or "mace")
        saved: Any = no_update
        if shown is None or f"{ids.RUN}.value" in ctx.triggered_prop_ids:
            with app.database.cursor() as cur:
                saved = _saved_options(scenarios.list_scenarios(cur, run_id))
    except MaceError as exc:
        empty: dict[str, Any] = {}
        return {
            "latency": empty, "queries": empty, "elements": [],
            "legend": graph_panel.styled(mode, [], GRAPH_MODES)[1], "table": [], "summary": "",
            "operators": [], "targets": [], "cap_nodes": [], "saved": [], "inputs_key": None,
            "edits": edit_items(whatif_view.edits_for(data, run_id)),
            "label": "" if run is None else baseline.label(windows, run), **stores,
            "text": "; ".join([*problems, str(exc)]), "open": True,
        }  # fmt: skip
    return {
        "latency": view.latency_figure,
        "queries": view.query_figure,
        "elements": view.graph.elements,
        "legend": graph_panel.styled(mode, view.graph.elements, GRAPH_MODES)[1],
        "table": view.table_rows,
        "summary": view.summary,
        "operators": view.operator_options,
        "targets": view.node_options,
        "cap_nodes": view.node_options,
        "saved": saved,
        "inputs_key": inputs.key,
        "edits": edit_items(whatif_view.edits_for(data, run_id)),
        "label": baseline.label(windows, run),
        **stores,
        "text": "; ".join(problems) if problems else no_update,
        "open": True if problems else no_update,
    }


def _saved_options(saved: list[scenarios.SavedScenario]) -> list[dict[str, str]]:
    return [
        {"label": f"{s.name} ({s.created_at:%Y-%m-%d %H:%M})", "value": s.scenario_id}
        for s in saved
    ]


graph_panel.wire(
    callbacks.callback,
    ids.WI_GRAPH,
    ids.WI_GRAPH_MODE,
    ids.WI_GRAPH_LEGEND,
    ids.WI_GRAPH_FIT,
    GRAPH_MODES,
)


@callbacks.callback(
    Output(ids.WI_OPERATOR, "value"),
    Output(ids.WI_TARGET, "value"),
    Input(ids.WI_GRAPH, "tapNodeData"),
    prevent_initial_call=True,
)
def select_from_graph(tapped: dict[str, Any] | None) -> tuple[Any, Any]:
    """A tapped operator is the one to move; a tapped machine box is where to."""
    tap = operator_graph.tapped(tapped)
    return tap.operator or no_update, tap.machine or no_update


@callbacks.callback(
    output={
        "result": Output(ids.WI_OPT_RESULT, "data"),
        "status": Output(ids.WI_OPT_STATUS, "children"),
        "apply_disabled": Output(ids.WI_OPT_APPLY, "disabled"),
        "queries": Output(ids.WI_OPT_QUERIES, "data"),
        **MESSAGE,
    },
    inputs={"start": Input(ids.WI_OPT_START, "n_clicks")},
    state={
        **SCENARIO_STATE,
        "algorithms": State(ids.WI_OPT_ALGO, "value"),
        "budget": State(ids.WI_OPT_BUDGET, "value"),
        "objective": State(ids.WI_OPT_OBJECTIVE, "value"),
        "max_worse": State(ids.WI_OPT_MAX_WORSE, "value"),
    },
    **background_job(ids.WI_OPT_START, cancel=ids.WI_OPT_CANCEL, bar=ids.WI_OPT_PROGRESS),
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
        engine, inputs, scenario = cached_scenario(inputs_key, run_id, data)
        evaluator = engine.evaluator(inputs, scenario_from_json(scenario))
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


@callbacks.callback(
    output={"options": Output(ids.WI_SAVED, "options", allow_duplicate=True), **MESSAGE, **NOTE},
    inputs={"save": Input(ids.WI_SAVE, "n_clicks")},
    state={
        **SCENARIO,
        "name": State(ids.WI_SAVE_NAME, "value"),
    },
    prevent_initial_call=True,
)
def save(
    save: Any, run_id: str | None, data: Any, windows: Any, name: str | None
) -> dict[str, Any]:
    try:
        app = context.current()
        inputs = run_inputs(run_id, windows)
        scenario = scenario_of(inputs, data, run_id)
        whatif_view.validate(app.engine, inputs, scenario)  # only valid scenarios
        with app.database.cursor() as cur:
            scenarios.save_scenario(cur, run_id or "", name or "", scenario)
            saved = scenarios.list_scenarios(cur, run_id or "")
    except MaceError as exc:
        return {"options": no_update, **failed(exc)}
    return {"options": _saved_options(saved), **notify(f"saved scenario '{(name or '').strip()}'")}


@callbacks.callback(
    output={
        "rows": Output(ids.WI_COMPARE_TABLE, "data"),
        "columns": Output(ids.WI_COMPARE_TABLE, "columns"),
        **MESSAGE,
    },
    inputs={"compare": Input(ids.WI_COMPARE, "n_clicks")},
    state={
        **SCENARIO,
        "saved": State(ids.WI_SAVED, "value"),
        "estimator": State(ids.ESTIMATOR, "value"),
    },
    prevent_initial_call=True,
)
def compare(
    compare: Any,
    run_id: str | None,
    data: Any,
    windows: Any,
    saved: list[str] | None,
    estimator: str | None,
) -> dict[str, Any]:
    try:
        inputs = run_inputs(run_id, windows)
        named: list[tuple[str, Any]] = [("this scenario", scenario_of(inputs, data, run_id))]
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


@callbacks.callback(
    output={"download": Output(ids.WI_DOWNLOAD, "data"), **MESSAGE},
    inputs={"export": Input(ids.WI_EXPORT, "n_clicks")},
    state=SCENARIO,
    prevent_initial_call=True,
)
def export(export: Any, run_id: str | None, data: Any, windows: Any) -> dict[str, Any]:
    try:
        inputs = run_inputs(run_id, windows)
        scenario = scenario_of(inputs, data, run_id)
        text = whatif_view.export_topology(context.current().engine, inputs, scenario)
    except MaceError as exc:
        return {"download": no_update, "text": str(exc), "open": True}
    content = {"content": text, "filename": f"{run_id}-scenario.yaml"}
    return {"download": content, "text": no_update, "open": no_update}
