"""The What-if page's Flink deployment card: on a run whose topology has TaskManagers,
the knobs a Flink user turns (an operator's parallelism, slots per TaskManager, the
number of TaskManagers and their cores), their predicted latency next to the recorded
deployment, and an honest Apply.

The edits are kept as ``mace whatif --set`` values (``{run id: ["KEY=VALUE", ...]}`` in a
session store), and the figures come from :func:`dashboard.core.deployment.whatif_document`,
which ``mace whatif`` prints too: the page and the command give the same numbers for
the same edits, and the page shows the command. Apply shows the exact REST call
(:mod:`dashboard.whatif.flink_rest`) and sends it only when the dashboard was started
with the job's REST URL and the user confirms.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from typing import Any

import dash_bootstrap_components as dbc
import numpy as np
from dash import ALL, Input, Output, State, ctx, dcc, html, no_update
from dash.dash_table.DataTable import DataTable

from dashboard import context
from dashboard.core import deployment
from dashboard.core.data import RunData
from dashboard.core.timeaxis import Clock, TimeRange, window
from dashboard.shell import ids as shell_ids
from dashboard.shell.callbacks import Callbacks, answers, chosen_run
from dashboard.shell.figures import message_figure
from dashboard.whatif import flink_rest, ids
from dashboard.whatif.common import MESSAGE, TABLE_STYLE, field, row
from dashboard.whatif.figures import DEPLOYMENT_TITLE, deployment_figure
from dashboard.whatif.link import clock
from estimator.errors import ScenarioError
from estimator.model import Topology
from estimator.parallelism import shape_of

callbacks = Callbacks()

MAX_EDITS = 50
HIDDEN = {"display": "none"}
COLUMNS = (
    ("query", "query"),
    ("recorded worst (s)", "recorded_wc"),
    ("changed worst (s)", "changed_wc"),
    ("change", "change"),
    ("recorded p99 (s)", "recorded_p99"),
    ("changed p99 (s)", "changed_p99"),
    ("recorded mean (s)", "recorded_mean"),
    ("changed mean (s)", "changed_mean"),
)


def card() -> dbc.Card:
    """The card (hidden until a Flink run is chosen)."""
    number = {"size": "sm", "type": "text", "inputMode": "numeric"}
    return dbc.Card(
        dbc.CardBody(
            [
                dcc.Store(id=ids.WI_FL_EDITS, storage_type="session"),
                html.H5("Flink deployment: parallelism, slots, TaskManagers"),
                html.P(
                    "Predicted with the model fitted on the whole run, over the run's "
                    "recorded arrivals: each subtask a thread, subtasks sharing slots and "
                    "filling TaskManagers one after another, a TaskManager's cores shared "
                    "by its subtasks, a vertex's load split evenly over its subtasks "
                    "(docs/commands/whatif.md).",
                    className="text-muted small mb-2",
                ),
                row(
                    "Parallelism of an operator's vertex",
                    field("vertex (its operators)", dcc.Dropdown(id=ids.WI_FL_UNIT)),
                    field("parallelism", dbc.Input(id=ids.WI_FL_PARALLELISM, **number)),
                    dbc.Button("Set", id=ids.WI_FL_SET_PARALLELISM, size="sm", className="mt-3"),
                ),
                row(
                    "Cluster (empty: as recorded)",
                    field("slots per TaskManager", dbc.Input(id=ids.WI_FL_SLOTS, **number)),
                    field("TaskManagers", dbc.Input(id=ids.WI_FL_TASKMANAGERS, **number)),
                    field("cores per TaskManager", dbc.Input(id=ids.WI_FL_CORES, **number)),
                    dbc.Button("Set", id=ids.WI_FL_SET_CLUSTER, size="sm", className="mt-3"),
                    dbc.Button(
                        "Reset", id=ids.WI_FL_RESET, size="sm", color="secondary", className="mt-3"
                    ),
                ),
                html.Small("Edits"),
                html.Div(id=ids.WI_FL_LIST, className="mb-2"),
                html.Div(id=ids.WI_FL_SUMMARY, className="fw-bold mb-1"),
                html.Div(id=ids.WI_FL_DEPLOYMENTS, className="small mb-2"),
                html.Div(id=ids.WI_FL_RESTART, className="small mb-2"),
                DataTable(
                    id=ids.WI_FL_TABLE,
                    columns=[{"name": name, "id": key} for name, key in COLUMNS],
                    data=[],
                    style_cell=TABLE_STYLE,
                    style_table={"overflowX": "auto"},
                ),
                dcc.Graph(id=ids.WI_FL_CHART, figure=message_figure(DEPLOYMENT_TITLE, "")),
                html.Small("The same prediction on the command line:", className="d-block mt-2"),
                html.Pre(id=ids.WI_FL_COMMAND, className="small bg-light p-2 mb-2"),
                html.Div(
                    [
                        dbc.Button("Apply to the Flink job…", id=ids.WI_FL_PREPARE, size="sm"),
                        dbc.Button(
                            "Confirm: send it",
                            id=ids.WI_FL_CONFIRM,
                            size="sm",
                            color="danger",
                            disabled=True,
                        ),
                    ],
                    className="d-flex gap-2 mb-2",
                ),
                html.Div(id=ids.WI_FL_APPLY_NOTE, className="small"),
                html.Pre(id=ids.WI_FL_CALL, className="small bg-light p-2 mb-1"),
                html.Div(id=ids.WI_FL_STATUS, className="small"),
            ]
        ),
        id=ids.WI_FL_CARD,
        className="mb-3",
        style=HIDDEN,
    )


def edits_of(store: Any, run_id: str | None) -> list[str]:
    """The run's ``--set`` values in the session store (malformed: none)."""
    if not run_id or not isinstance(store, Mapping):
        return []
    edits = store.get(run_id)
    if not isinstance(edits, list) or len(edits) > MAX_EDITS:
        return []
    return [e for e in edits if isinstance(e, str)]


def _key(edit: str) -> str:
    return edit.partition("=")[0].strip()


def with_edit(edits: Sequence[str], edit: str) -> list[str]:
    """``edits`` with ``edit`` (``KEY=VALUE``) replacing an earlier value of its key."""
    return [e for e in edits if _key(e) != _key(edit)] + [edit]


def document(run_id: str | None, edits: Sequence[str], restart: bool = False) -> dict[str, Any]:
    """``mace whatif --json``'s document of the run and ``edits`` (ScenarioError), its
    ``restart`` only when asked (it predicts the changed deployment ten times more)."""
    fitted = deployment.fit_run(chosen_run(run_id))
    parsed = deployment.parse_edits(list(edits), fitted.topology, shape_of(fitted.topology))
    out = deployment.whatif_document(fitted, parsed)
    if restart:
        out["restart"] = deployment.restart_json(fitted, parsed)
    return out


def _change(before: float, after: float) -> str:
    if before > 0:
        return f"{after / before - 1:+.1%}"
    return "no change" if after == before else "new delay"


def table_rows(doc: Mapping[str, Any]) -> list[dict[str, str]]:
    """One row per query and one for the system: worst case, p99 and mean, recorded and
    changed, in seconds (4 decimals, as ``mace whatif`` prints them)."""
    rows = []
    recorded, changed = doc["recorded"], doc["changed"]
    names = [*changed["queries"], "system"]
    for name in names:
        old = recorded["system"] if name == "system" else recorded["queries"].get(name)
        new = changed["system"] if name == "system" else changed["queries"].get(name)
        if old is None or new is None:
            continue
        entry = {"query": name, "change": _change(old["wc"], new["wc"])}
        for stat in ("wc", "p99", "mean"):
            entry[f"recorded_{stat}"] = f"{old[stat]:.4f}"
            entry[f"changed_{stat}"] = f"{new[stat]:.4f}"
        rows.append(entry)
    return rows


def summary(doc: Mapping[str, Any]) -> str:
    """The system's predicted worst case, recorded and changed, and the bottlenecks."""
    recorded, changed = doc["recorded"], doc["changed"]
    before, after = recorded["system"]["wc"], changed["system"]["wc"]
    text = (
        f"Predicted worst case: {after:.4f} s changed, {before:.4f} s recorded "
        f"({_change(before, after)}); bottleneck {changed['bottleneck'] or 'none'} "
        f"(recorded: {recorded['bottleneck'] or 'none'})"
    )
    spread = changed.get("spread")
    if spread is None:
        return text
    low, high = spread["system"]["lower"], spread["system"]["higher"]
    return (
        f"{text}. With every record's work {spread['share']:.0%} lower or higher, as a "
        f"cost read from counters can be: {low:.4f}-{high:.4f} s changed"
    )


def restart_note(doc: Mapping[str, Any], subinterval: float) -> list[Any]:
    """What applying the edits costs once: a rescale stops the job until its new subtasks
    run (``mace whatif``'s ``restart``: the run's measured stop, at its worst moment)."""
    if doc["changed"]["deployment"] == doc["recorded"]["deployment"]:
        return [html.Strong("Restart: "), "none, the edits leave the recorded deployment."]
    restart = doc["restart"]
    if restart is None:
        return [
            html.Strong("Restart to apply it: "),
            "a rescale stops the job until its new subtasks run; no restart was measured "
            "on this run, so its cost is not predicted.",
        ]
    after, worst = doc["changed"]["system"]["wc"], restart["system"]["wc"]
    measured = deployment.count_text(restart["measured"], "restart")
    return [
        html.Strong("Restart to apply it: "),
        f"the job stops for {restart['downtime']:.2f} s (assumed: the median of {measured} "
        f"measured on this run). Once, at its worst moment tried (stopping at "
        f"{clock(restart['interval'] * subinterval)}, subinterval {restart['interval']}), "
        f"the predicted worst case is {worst:.4f} s: "
        f"{worst - after:+.4f} s over the {after:.4f} s after the change; bottleneck "
        f"{restart['bottleneck'] or 'none'}.",
    ]


def command(db: str, run_id: str, edits: Sequence[str]) -> str:
    """The ``mace whatif`` command printing the same figures."""
    sets = " ".join(f"--set {shlex.quote(e)}" for e in edits) or "--set SLOTS_OR_PARALLELISM"
    return f"mace whatif --db {shlex.quote(db)} --run {shlex.quote(run_id)} {sets} --json"


def _unit_options(topology: Topology) -> list[dict[str, str]]:
    """The vertices whose parallelism can be set, each named with its operators."""
    shape = shape_of(topology)
    by_node = _operators(topology)
    return [
        {
            "label": f"{u.node} ({', '.join(by_node.get(u.node, [])) or 'no operator'}) · "
            f"parallelism {u.parallelism}",
            "value": u.node,
        }
        for u in shape.units
        if u.host is not None
    ]


def _operators(topology: Topology) -> dict[str, list[str]]:
    """Each node's operators."""
    by_node: dict[str, list[str]] = {}
    for op, node in topology.placement.items():
        by_node.setdefault(node, []).append(op)
    return by_node


def edit_list(edits: Sequence[str]) -> Any:
    """The edits, each with its undo button."""
    if not edits:
        return html.Small("no edits yet: the recorded deployment", className="text-muted")
    return html.Ol(
        [
            html.Li(
                [
                    html.Code(edit, className="me-2"),
                    dbc.Button(
                        "undo",
                        id={"type": ids.WI_FL_UNDO, "index": k},
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
    output={"store": Output(ids.WI_FL_EDITS, "data"), **MESSAGE},
    inputs={
        "set_p": Input(ids.WI_FL_SET_PARALLELISM, "n_clicks"),
        "set_cluster": Input(ids.WI_FL_SET_CLUSTER, "n_clicks"),
        "reset": Input(ids.WI_FL_RESET, "n_clicks"),
        "undo": Input({"type": ids.WI_FL_UNDO, "index": ALL}, "n_clicks"),
    },
    state={
        "run_id": State(shell_ids.RUN, "value"),
        "store": State(ids.WI_FL_EDITS, "data"),
        "unit": State(ids.WI_FL_UNIT, "value"),
        "parallelism": State(ids.WI_FL_PARALLELISM, "value"),
        "slots": State(ids.WI_FL_SLOTS, "value"),
        "taskmanagers": State(ids.WI_FL_TASKMANAGERS, "value"),
        "cores": State(ids.WI_FL_CORES, "value"),
    },
    prevent_initial_call=True,
)
@answers(lambda message: {"store": no_update, "text": message, "open": True})
def edit(
    set_p: Any,
    set_cluster: Any,
    reset: Any,
    undo: Any,
    run_id: str | None,
    store: Any,
    unit: str | None,
    parallelism: Any,
    slots: Any,
    taskmanagers: Any,
    cores: Any,
) -> dict[str, Any]:
    """One more edit (a new value of its key replaces the old one), an undo or Reset;
    an edit the model refuses is not kept, and the page says why in one line."""
    trigger = ctx.triggered_id
    edits = edits_of(store, run_id)
    if trigger == ids.WI_FL_RESET:
        edits = []
    elif isinstance(trigger, Mapping):  # an undo button; redrawn buttons report None
        if not any(undo or []):
            return {"store": no_update, "text": no_update, "open": no_update}
        edits = [e for k, e in enumerate(edits) if k != trigger.get("index")]
    elif trigger == ids.WI_FL_SET_PARALLELISM:
        if not unit:
            raise ScenarioError("parallelism: choose a vertex")
        edits = with_edit(edits, f"{unit}.parallelism={str(parallelism or '').strip()}")
    elif trigger == ids.WI_FL_SET_CLUSTER:
        given = {"slots": slots, "taskmanagers": taskmanagers, "cores": cores}
        values = {k: str(v).strip() for k, v in given.items() if str(v or "").strip()}
        if not values:
            raise ScenarioError("cluster: enter slots, TaskManagers or cores")
        for key, value in values.items():
            edits = with_edit(edits, f"{key}={value}")
    if len(edits) > MAX_EDITS:
        raise ScenarioError(f"at most {MAX_EDITS} edits: press Reset")
    document(run_id, edits)  # refused edits are not kept
    out = dict(store) if isinstance(store, Mapping) else {}
    out[run_id or ""] = edits
    return {"store": out, "text": "", "open": False}


SHOW_FAILED: dict[str, Any] = {
    "style": no_update, "units": no_update, "list": no_update, "deployments": "",
    "restart": "", "rows": [], "chart": no_update, "command": "", "call": "", "note": "",
    "confirm": True,
}  # fmt: skip
"""The card's outputs when the run cannot be shown (the message is its summary)."""


@callbacks.callback(
    output={
        "style": Output(ids.WI_FL_CARD, "style"),
        "units": Output(ids.WI_FL_UNIT, "options"),
        "list": Output(ids.WI_FL_LIST, "children"),
        "summary": Output(ids.WI_FL_SUMMARY, "children"),
        "deployments": Output(ids.WI_FL_DEPLOYMENTS, "children"),
        "restart": Output(ids.WI_FL_RESTART, "children"),
        "rows": Output(ids.WI_FL_TABLE, "data"),
        "chart": Output(ids.WI_FL_CHART, "figure"),
        "command": Output(ids.WI_FL_COMMAND, "children"),
        "call": Output(ids.WI_FL_CALL, "children", allow_duplicate=True),
        "note": Output(ids.WI_FL_APPLY_NOTE, "children", allow_duplicate=True),
        "confirm": Output(ids.WI_FL_CONFIRM, "disabled", allow_duplicate=True),
    },
    inputs={
        "run_id": Input(shell_ids.RUN, "value"),
        "store": Input(ids.WI_FL_EDITS, "data"),
        "time": {
            "picked": Input(shell_ids.TIME_RANGE, "data"),
            "clock": Input(shell_ids.CLOCK, "value"),
            "zone": Input(shell_ids.ZONE, "data"),
        },
    },
    prevent_initial_call="initial_duplicate",
)
@answers(lambda message: {**SHOW_FAILED, "summary": message})
def show(run_id: str | None, store: Any, time: dict[str, Any]) -> dict[str, Any]:
    """The card on a Flink run (hidden on any other): the edits, the predicted figures
    recorded and changed, the restart applying them costs, the equivalent command; a
    prepared call is cleared."""
    cleared = {"call": "", "note": "", "confirm": True}
    run = chosen_run(run_id)
    if not deployment.is_flink(run.topology):
        return {
            "style": HIDDEN, "units": [], "list": "", "summary": "", "deployments": "",
            "restart": "", "rows": [], "chart": no_update, "command": "", **cleared,
        }  # fmt: skip
    edits = edits_of(store, run_id)
    doc = document(run_id, edits, restart=True)
    fitted = deployment.fit_run(run)
    delays = " Each query's pipeline delay, calibrated on the run, is included." * bool(
        doc["delays"]
    )
    return {
        "style": {},
        "units": _unit_options(fitted.topology),
        "list": edit_list(edits),
        "summary": summary(doc),
        "deployments": (
            f"Recorded: {deployment.deployment_text(doc['recorded']['deployment'])}. "
            f"Changed: {deployment.deployment_text(doc['changed']['deployment'])}.{delays}"
        ),
        "restart": restart_note(doc, run.subinterval),
        "rows": table_rows(doc),
        "chart": chart(run, fitted, edits, time),
        "command": command(str(context.current().database.path), run.info.run_id, edits),
        **cleared,
    }


def chart(
    run: RunData, fitted: deployment.FittedRun, edits: Sequence[str], time: dict[str, Any]
) -> dict[str, Any]:
    """The system's latency over the run on the shared time range and clock: measured,
    predicted as recorded and with the edits (with its work spread on a real engine)."""
    shape = shape_of(fitted.topology)
    series = deployment.deployment_series(
        fitted, deployment.parse_edits(list(edits), fitted.topology, shape)
    )
    _, x_range = window(TimeRange.from_store(time.get("picked")), run.intervals, run.subinterval)
    n = series.recorded.size
    spread = None
    if series.lower is not None and series.higher is not None:
        spread = (series.lower, series.higher)
    return deployment_figure(
        np.arange(n) * run.subinterval,
        run.measured_system().lat_max[:n],
        series.recorded,
        series.changed,
        spread,
        Clock.of(run.info.origin, time.get("clock"), time.get("zone")),
        x_range,
    )


def _changed_parallelism(doc: Mapping[str, Any]) -> dict[str, int]:
    old = doc["recorded"]["deployment"]["parallelism"]
    new = doc["changed"]["deployment"]["parallelism"]
    return {unit: int(p) for unit, p in new.items() if old.get(unit) != p}


def _cluster_note(doc: Mapping[str, Any]) -> str:
    old, new = doc["recorded"]["deployment"], doc["changed"]["deployment"]
    changes = []
    if new["slots"] != old["slots"]:
        changes.append(f"taskmanager.numberOfTaskSlots: {new['slots']}")
    if new["taskmanagers"] != old["taskmanagers"]:
        changes.append(deployment.count_text(new["taskmanagers"], "TaskManager"))
    if set(new["cores"]) != set(old["cores"]):
        cores = "/".join(f"{c:g}" for c in sorted(set(new["cores"])))
        changes.append(f"{cores} cores per TaskManager")
    if not changes:
        return ""
    return (
        "This call sets parallelism only: the cluster must also have "
        + ", ".join(changes)
        + " (the TaskManagers' configuration and replicas, e.g. the FlinkDeployment's "
        "spec). "
    )


@callbacks.callback(
    output={
        "call": Output(ids.WI_FL_CALL, "children", allow_duplicate=True),
        "note": Output(ids.WI_FL_APPLY_NOTE, "children", allow_duplicate=True),
        "confirm": Output(ids.WI_FL_CONFIRM, "disabled", allow_duplicate=True),
        "status": Output(ids.WI_FL_STATUS, "children", allow_duplicate=True),
    },
    inputs={"prepare": Input(ids.WI_FL_PREPARE, "n_clicks")},
    state={"run_id": State(shell_ids.RUN, "value"), "store": State(ids.WI_FL_EDITS, "data")},
    prevent_initial_call=True,
)
@answers(lambda message: {"call": "", "note": message, "confirm": True, "status": ""})
def prepare(prepare: Any, run_id: str | None, store: Any) -> dict[str, Any]:
    """The exact call for the edits. With the dashboard's Flink REST URL it reads the
    job and arms Confirm; without one it shows the call to make by hand."""
    edits = edits_of(store, run_id)
    doc = document(run_id, edits)
    parallelism = _changed_parallelism(doc)
    cluster = _cluster_note(doc)
    if not parallelism:
        raise ScenarioError(
            (cluster or "No edit changes the parallelism: nothing to send. ")
            + "The REST call changes the parallelism of vertices only."
        )
    base = context.current().flink_rest
    if base is None:
        call = flink_rest.template_call(None, parallelism)
        note = (
            "No Flink REST URL is configured for this dashboard (mace serve --flink-rest "
            "URL), so nothing will be sent. To apply it yourself on a job that runs with "
            "the adaptive scheduler (jobmanager.scheduler: adaptive), list its vertex ids "
            "with GET /jobs/<job id>, add every other vertex with its current bounds "
            "(GET /jobs/<job id>/resource-requirements), and run: "
        )
        return {"call": call.curl, "note": cluster + note, "confirm": True, "status": ""}
    topology = deployment.fit_run(chosen_run(run_id)).topology
    call = flink_rest.prepare(base, run_id or "", _operators(topology), parallelism)
    note = (
        f"This request will be sent to {base} when you confirm; the adaptive scheduler "
        "then rescales the job from its latest checkpoint. "
    )
    return {"call": call.text, "note": cluster + note, "confirm": False, "status": ""}


@callbacks.callback(
    output={
        "status": Output(ids.WI_FL_STATUS, "children", allow_duplicate=True),
        "confirm": Output(ids.WI_FL_CONFIRM, "disabled", allow_duplicate=True),
    },
    inputs={"confirm": Input(ids.WI_FL_CONFIRM, "n_clicks")},
    state={"run_id": State(shell_ids.RUN, "value"), "store": State(ids.WI_FL_EDITS, "data")},
    prevent_initial_call=True,
)
@answers(lambda message: {"status": f"not sent: {message}", "confirm": True})
def confirm(confirm: Any, run_id: str | None, store: Any) -> dict[str, Any]:
    """Send the call, built again on the server from the run and its edits (never from
    the browser's copy), to the dashboard's Flink REST URL."""
    base = context.current().flink_rest
    if base is None:
        raise ScenarioError("no Flink REST URL is configured for this dashboard")
    doc = document(run_id, edits_of(store, run_id))
    parallelism = _changed_parallelism(doc)
    if not parallelism:
        raise ScenarioError("no edit changes the parallelism")
    topology = deployment.fit_run(chosen_run(run_id)).topology
    call = flink_rest.prepare(base, run_id or "", _operators(topology), parallelism)
    flink_rest.put_json(call.url, call.body)
    return {"status": f"sent: {call.method} {call.url} was accepted", "confirm": True}
