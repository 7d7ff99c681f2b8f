"""The Nodes page's callbacks: the run's figures, the chosen node's, and the hosts
needed over time (a background job)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dash import Input, Output, Patch, State, ctx, no_update

from dashboard import context
from dashboard.core import data
from dashboard.core.timeaxis import Clock, TimeRange
from dashboard.nodes import figures, ids, views
from dashboard.shell import ids as shell_ids
from dashboard.shell.callbacks import Callbacks, answers, chosen_run
from dashboard.shell.figures import message_figure
from dashboard.shell.jobs import background_job
from storage import scenarios

callbacks = Callbacks()


def _no_run_figures(message: str) -> tuple:
    """The run-wide charts say what is missing (no empty axes)."""
    return (
        message_figure(figures.HEATMAP_TITLE, message),
        message_figure(figures.BOTTLENECK_TITLE, message),
        no_update,
        message,
        True,
    )


@callbacks.callback(
    Output(ids.ND_HEATMAP, "figure"),
    Output(ids.ND_BOTTLENECK, "figure"),
    Output(ids.ND_NODE, "options"),
    Output(ids.ND_MESSAGE, "children"),
    Output(ids.ND_MESSAGE, "is_open"),
    Input(shell_ids.RUN, "value"),
    Input(shell_ids.TIME_RANGE, "data"),
    Input(shell_ids.CLOCK, "value"),
    Input(shell_ids.ZONE, "data"),
    Input(ids.ND_REFRESH, "n_intervals"),
    State(ids.ND_NODE, "value"),
)
@answers(_no_run_figures)
def update_run(
    run_id: str | None,
    shown: dict[str, Any] | None,
    clock: str | None,
    zone: str | None,
    _: Any,
    node: str | None,
) -> tuple:
    """The run-wide figures over the shared time range, on the shared clock; a node
    switch does not redraw them (see :func:`update_node`)."""
    run = chosen_run(run_id)
    axis = Clock.of(run.info.origin, clock, zone)
    heat, bottleneck = views.nodes_run_view(run, TimeRange.from_store(shown), node, axis)
    return heat, bottleneck, list(run.topology.node_ids), "", False


@callbacks.callback(
    Output(ids.ND_DLTS, "figure"),
    Output(ids.ND_BUSY, "figure"),
    Output(ids.ND_HEATMAP, "figure", allow_duplicate=True),
    Input(shell_ids.RUN, "value"),
    Input(ids.ND_NODE, "value"),
    Input(shell_ids.TIME_RANGE, "data"),
    Input(shell_ids.CLOCK, "value"),
    Input(shell_ids.ZONE, "data"),
    Input(ids.ND_REFRESH, "n_intervals"),
    prevent_initial_call="initial_duplicate",
)
@answers(
    lambda message: (
        message_figure(figures.DLTS_TITLE, message),
        message_figure(figures.BUSY_TITLE, message),
        no_update,
    )
)
def update_node(
    run_id: str | None,
    node: str | None,
    shown: dict[str, Any] | None,
    clock: str | None,
    zone: str | None,
    _: Any,
) -> tuple:
    """The chosen node's figures, and, when the node was switched, its outline on the
    heatmap (a patch: the heatmap itself is not sent again; otherwise :func:`update_run`
    draws the outline with the heatmap, and says what is wrong)."""
    run = chosen_run(run_id)
    axis = Clock.of(run.info.origin, clock, zone)
    dlts, busy, shapes = views.node_view(run, node, TimeRange.from_store(shown), axis)
    if ctx.triggered_id != ids.ND_NODE:
        return dlts, busy, no_update
    outline = Patch()
    outline["layout"]["shapes"] = shapes
    return dlts, busy, outline


@callbacks.callback(
    Output(ids.ND_NODE, "value"),
    Input(ids.ND_HEATMAP, "clickData"),
    State(ids.ND_NODE, "options"),
    prevent_initial_call=True,
)
def choose_node(click: dict[str, Any] | None, options: list[Any] | None) -> Any:
    """A click on a row of the heatmap chooses that node."""
    node = views.clicked_node(click, options or [])
    return no_update if node is None else node


UNCHANGED = {"objective": no_update, "window": no_update, "capacity": no_update}
"""The hosts fields left as they are."""


@callbacks.callback(
    output={
        "request": Output(ids.ND_HOSTS_REQUEST, "data"),
        "objective": Output(ids.ND_HOSTS_OBJECTIVE, "value"),
        "window": Output(ids.ND_HOSTS_WINDOW, "value"),
        "capacity": Output(ids.ND_HOSTS_CAPACITY, "value"),
        "caption": Output(ids.ND_HOSTS_CAPTION, "children", allow_duplicate=True),
    },
    inputs={
        "run_id": Input(shell_ids.RUN, "value"),
        "start": Input(ids.ND_HOSTS_START, "n_clicks"),
    },
    prevent_initial_call="initial_duplicate",
)
@answers(lambda message: {"request": None, "caption": message, **UNCHANGED})
def hosts_request(run_id: str | None, start: int | None) -> dict[str, Any]:
    """A computation request for the worker: the run's model fitted on its latest data
    (the worker reads it from the engine's cache, never the database). A new run also
    fills the fields with its defaults."""
    run = chosen_run(run_id)
    app = context.current()
    inputs = data.inputs_for_run(app.engine, run)
    request = {"key": inputs.key, "clicks": start or 0}
    if ctx.triggered_id == ids.ND_HOSTS_START:
        return {"request": request, "caption": "computing…", **UNCHANGED}
    with app.database.cursor() as cur:
        stored = scenarios.objectives(cur, run.info.run_id)
    defaults = views.hosts_defaults(run, stored)
    return {
        "request": request,
        "objective": defaults.objective,
        "window": defaults.window,
        "capacity": defaults.capacity,
        "caption": f"objective {defaults.objective} s ({defaults.source}): computing…",
    }


@callbacks.callback(
    output={
        "figure": Output(ids.ND_HOSTS, "figure"),
        "caption": Output(ids.ND_HOSTS_CAPTION, "children"),
    },
    inputs={"request": Input(ids.ND_HOSTS_REQUEST, "data")},
    state={
        "objective": State(ids.ND_HOSTS_OBJECTIVE, "value"),
        "window": State(ids.ND_HOSTS_WINDOW, "value"),
        "capacity": State(ids.ND_HOSTS_CAPACITY, "value"),
    },
    **background_job(ids.ND_HOSTS_START, cancel=ids.ND_HOSTS_CANCEL, bar=ids.ND_HOSTS_PROGRESS),
)
@answers(lambda message: {"figure": no_update, "caption": message})
def hosts(
    set_progress: Callable[[tuple[int, str]], None],
    request: Any,
    objective: Any,
    window: Any,
    capacity: Any,
) -> dict[str, Any]:
    """Hosts needed per window, by Mace and by FUGU (a worker process, with progress)."""
    if not isinstance(request, dict) or not request.get("key"):
        return {"figure": no_update, "caption": no_update}

    def report(done: int, total: int) -> None:
        set_progress((round(100 * done / total), f"window {done} of {total}"))

    inputs = context.current().engine.cached_inputs(str(request["key"]))
    timeline = views.hosts_timeline(inputs, objective, window, capacity, report)
    figure, caption = views.hosts_view(timeline)
    return {"figure": figure, "caption": caption}
