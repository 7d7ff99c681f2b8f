"""The What-if page's "Scenario editor" tab: move operators, change nodes and load,
undo and reset; the optimizer, save, compare and export are in
:mod:`dashboard.whatif.editor_tools`.

Callbacks are thin: they read the form into typed view models (dict-grouped
``inputs=``/``state=``), ask :mod:`dashboard.whatif.scenario` (which asks the estimator's
what-if engine) and lay out the answer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import dash_bootstrap_components as dbc
from dash import ALL, Input, Output, State, ctx, html, no_update

from dashboard import context
from dashboard.core.data import RunData
from dashboard.core.estimators import shown_estimator
from dashboard.core.timeaxis import DEFAULT_PRESET, Clock, TimeRange, window
from dashboard.shell import ids as shell_ids
from dashboard.shell.callbacks import Callbacks, answers, chosen_run
from dashboard.shell.figures import message_figure
from dashboard.shell.graph import elements, panel
from dashboard.whatif import baseline, ids
from dashboard.whatif import link as whatif_link
from dashboard.whatif import scenario as whatif_scenario
from dashboard.whatif.common import (
    MESSAGE,
    NOTE,
    SCENARIO,
    TAB_EDITOR,
    failed,
    inputs_of,
    notify,
    run_inputs,
    scenario_of,
)
from dashboard.whatif.editor_layout import FIELDS, GRAPH_MODES
from dashboard.whatif.figures import LATENCY_TITLE, QUERY_TITLE
from estimator.errors import MaceError
from estimator.whatif import ScenarioError, scenario_from_json, scenario_to_json
from storage import scenarios

callbacks = Callbacks()


def _optimized(form: whatif_scenario.EditForm) -> dict[str, Any]:
    placement = (form.optimized or {}).get("placement")
    if not placement:
        raise ScenarioError("optimize: no optimized placement yet")
    return {"placement": placement}


EDITS: dict[str, tuple[str, Callable[[whatif_scenario.EditForm], dict[str, Any]]]] = {
    ids.WI_MOVE: ("move", lambda f: {"operator": f.operator, "node": f.target}),
    ids.WI_SET_CAP: ("capacity", lambda f: {"node": f.cap_node, "capacity": f.cap_value}),
    ids.WI_REMOVE_NODE: ("remove_node", lambda f: {"node": f.cap_node}),
    ids.WI_ADD_NODE: ("add_node", lambda f: {"node": f.add_id, "capacity": f.add_cap}),
    ids.WI_APPLY_RATE: ("load", lambda f: {"rate_scale": f.rate, "factor": f.factor}),
    ids.WI_APPLY_TABLE: ("table", lambda f: {"rows": f.rows}),
    ids.WI_OPT_APPLY: ("placement", _optimized),
}
"""Which page action each button triggers, and the form values it takes."""


def _load_saved(form: whatif_scenario.EditForm) -> dict[str, Any]:
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


EDIT_UNCHANGED = dict.fromkeys(("scenario", "query", "tab"), no_update)
"""The edit callback's stores and tab, left as they are."""


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
        "search": State(shell_ids.URL, "search"),
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
@answers(
    lambda message: {**dict.fromkeys(("scenario", "query", "tab"), no_update), **failed(message)}
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
    values = whatif_scenario.EditForm(**form)
    inputs = run_inputs(run_id, windows)
    # Reset reads no log: it also clears one the server refuses to read
    edits = [] if trigger == ids.WI_RESET else whatif_scenario.edits_for(data, run_id)
    if trigger == ids.WI_RESET:
        result = whatif_scenario.EditResult(
            [], "reset: no edits", whatif_scenario.fold_edits(inputs, [])
        )
    elif undoing:
        result = whatif_scenario.undo_edit(inputs, edits, _undone(undo))
    elif trigger == ids.WI_LOAD:
        result = whatif_scenario.add_edit(inputs, edits, "load_saved", _load_saved(values))
    elif trigger in PROPOSALS:
        proposal = _proposal(proposals.get(trigger))
        result = whatif_scenario.add_edit(inputs, edits, "load_saved", proposal)
    elif trigger in EDITS:
        action, read = EDITS[trigger]
        result = whatif_scenario.add_edit(inputs, edits, action, read(values))
    else:
        raise ScenarioError("unknown action")
    store = whatif_scenario.with_edits(data, run_id or "", result.edits)
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


def listed_edits(data: Any, run_id: str | None) -> Any:
    """The run's edit list (:func:`edit_items`), or why its log cannot be read."""
    try:
        return edit_items(whatif_scenario.edits_for(data, run_id))
    except ScenarioError as exc:
        return html.Small(str(exc), className="text-danger")


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
        "run_id": Input(shell_ids.RUN, "value"),
        "data": Input(ids.WI_SCENARIO, "data"),
        "selected": Input(ids.WI_OPERATOR, "value"),
        "estimator": Input(shell_ids.ESTIMATOR, "value"),
        "windows": Input(ids.WI_BASELINE, "data"),
        "repin": Input(ids.WI_REPIN, "n_clicks"),
        "time": {
            "picked": Input(shell_ids.TIME_RANGE, "data"),
            "clock": Input(shell_ids.CLOCK, "value"),
            "zone": Input(shell_ids.ZONE, "data"),
        },
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
    time: dict[str, Any],
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
        run = chosen_run(run_id)
        settled = baseline.settle(link, baseline.repinned(), run, data, windows)
        problems = settled.problems
        if settled.changed:
            data, windows = settled.data, settled.windows
            stores.update(windows=windows, scenario=data)
        if link:
            stores["link"] = None  # taken over: later draws keep the session's edits
        inputs = inputs_of(run, windows)
        scenario = scenario_of(inputs, data, run_id)
        shown_at = _shown(run, windows, time)
        view = whatif_scenario.render(
            app.engine, inputs, scenario, selected, shown_estimator(run, estimator).name, shown_at
        )
        saved: Any = no_update
        if shown is None or f"{shell_ids.RUN}.value" in ctx.triggered_prop_ids:
            with app.database.cursor() as cur:
                saved = saved_options(scenarios.list_scenarios(cur, run.info.run_id))
    except MaceError as exc:
        return {
            "latency": message_figure(LATENCY_TITLE, str(exc)),
            "queries": message_figure(QUERY_TITLE, str(exc)), "elements": [],
            "legend": panel.styled(mode, [], GRAPH_MODES)[1], "table": [], "summary": "",
            "operators": [], "targets": [], "cap_nodes": [], "saved": [], "inputs_key": None,
            "edits": listed_edits(data, run_id),
            "label": "" if run is None else baseline.label(windows, run), **stores,
            "text": "; ".join([*problems, str(exc)]), "open": True,
        }  # fmt: skip
    return {
        "latency": view.latency_figure,
        "queries": view.query_figure,
        "elements": view.graph.elements,
        "legend": panel.styled(mode, view.graph.elements, GRAPH_MODES)[1],
        "table": view.table_rows,
        "summary": view.summary,
        "operators": view.operator_options,
        "targets": view.node_options,
        "cap_nodes": view.node_options,
        "saved": saved,
        "inputs_key": inputs.key,
        "edits": listed_edits(data, run_id),
        "label": baseline.label(windows, run, shown_at.clock),
        **stores,
        "text": "; ".join(problems) if problems else no_update,
        "open": True if problems else no_update,
    }


def _shown(run: RunData, windows: Any, time: dict[str, Any]) -> whatif_scenario.Shown:
    """Where the figures look: the shared time picker's range and clock (the top bar's
    ``time`` inputs) on the run's baseline window."""
    picked = TimeRange.from_store(time.get("picked"))
    _, x_range = window(picked, run.intervals, run.subinterval)
    start, _ = whatif_link.window_for(windows, run.info.run_id) or (0, run.intervals)
    return whatif_scenario.Shown(
        offset=start * run.subinterval,
        x_range=x_range,
        clock=Clock.of(run.info.origin, time.get("clock"), time.get("zone")),
        whole=picked.preset == DEFAULT_PRESET,
    )


def saved_options(saved: list[scenarios.SavedScenario]) -> list[dict[str, str]]:
    return [
        {"label": f"{s.name} ({s.created_at:%Y-%m-%d %H:%M})", "value": s.scenario_id}
        for s in saved
    ]


panel.wire(
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
    tap = elements.tapped(tapped)
    return tap.operator or no_update, tap.machine or no_update
