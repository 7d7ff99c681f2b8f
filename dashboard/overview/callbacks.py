"""The Overview page's callbacks: the chart and its cards (over the shared time range,
on the shared clock), a drag on the chart, refresh, refit, explanation, alerts."""

from __future__ import annotations

from typing import Any

from dash import Input, Output, State, ctx, no_update
from dash.exceptions import PreventUpdate

from dashboard import context
from dashboard.core.estimators import estimate_caption, shown_estimator
from dashboard.core.timeaxis import OFF, Clock, Refresh, TimeRange, relayout_range
from dashboard.overview import explain as overview_explain
from dashboard.overview import ids, views
from dashboard.overview.blame_figures import CONTRIBUTION_HEIGHT, CONTRIBUTION_TITLE
from dashboard.overview.cards import (
    GRAPH_MODES,
    alert_columns,
    changes_columns,
    drift_columns,
)
from dashboard.shell import ids as shell_ids
from dashboard.shell.callbacks import Callbacks, answers, chosen_run
from dashboard.shell.figures import message_figure
from dashboard.shell.graph import panel
from dashboard.shell.timerange import CUSTOM
from dashboard.shell.urlquery import merged
from storage.alerts import list_alerts
from storage.scenarios import objectives, set_training_window, training_window_of

callbacks = Callbacks()


def _unchanged(_: str) -> Any:
    """Leave the outputs as they are (the page's other callbacks say what is wrong)."""
    raise PreventUpdate


def _no_figures(message: str) -> tuple:
    """The chart says what is missing (no empty axes), the cards a dash, the tables stay."""
    error = message_figure("Prediction error", message, 260)
    unchanged = (no_update,) * 5
    return (
        message_figure("", message), "-", "-", "-", message, True, *unchanged, error,
        *unchanged,
    )  # fmt: skip


@callbacks.callback(
    Output(ids.OV_LATENCY, "figure"),
    Output(ids.OV_KPI_WC, "children"),
    Output(ids.OV_KPI_COVERAGE, "children"),
    Output(ids.OV_KPI_BOTTLENECK, "children"),
    Output(ids.OV_MESSAGE, "children"),
    Output(ids.OV_MESSAGE, "is_open"),
    Output(ids.OV_DRIFT_BANNER, "children"),
    Output(ids.OV_DRIFT_BANNER, "is_open"),
    Output(ids.OV_DRIFT_TABLE, "data"),
    Output(ids.OV_CHANGES_TABLE, "data"),
    Output(ids.OV_CHANGES_NOTE, "children"),
    Output(ids.OV_ERROR_GRAPH, "figure"),
    Output(ids.OV_MODEL_NOTE, "children"),
    Output(ids.OV_VIOLATIONS, "data"),
    Output(ids.OV_VIOLATIONS_NOTE, "children"),
    Output(ids.OV_DRIFT_TABLE, "columns"),
    Output(ids.OV_CHANGES_TABLE, "columns"),
    Input(shell_ids.RUN, "value"),
    Input(shell_ids.TIME_RANGE, "data"),
    Input(ids.OV_REFRESH, "n_intervals"),
    Input(shell_ids.ESTIMATOR, "value"),
    Input(ids.OV_EXPLAIN_AT, "data"),
    Input(ids.OV_DRIFT_K, "value"),
    Input(ids.OV_REFIT, "data"),
    Input(shell_ids.CLOCK, "value"),
    Input(shell_ids.ZONE, "data"),
)
@answers(_no_figures)
def update(
    run_id: str | None,
    shown: dict[str, Any] | None,
    _: Any,
    estimator: str | None,
    selection: dict[str, Any] | None,
    k: Any,
    _refit: Any,
    clock: str | None,
    zone: str | None,
) -> tuple:
    run = chosen_run(run_id, "select a run (none ingested yet?)")
    with context.current().database.cursor() as cur:
        training = views.stored_training(run, training_window_of(cur, run.info.run_id))
        goals = objectives(cur, run.info.run_id)
    view = views.overview(
        run,
        TimeRange.from_store(shown),
        shown_estimator(run, estimator).name,
        overview_explain.selected_interval(run, selection),
        k=views.drift_k(k),
        training=training,
        clock=clock,
        objectives=goals,
        zone=zone,
    )
    worst, coverage, bottleneck = view.kpis()
    banner = views.drift_banner(run, view, views.drift_k(k))
    listed = views.violation_rows(view)
    return (
        view.figure,
        worst,
        coverage,
        bottleneck,
        view.range_note,
        bool(view.range_note),
        banner,
        bool(banner),
        views.drift_rows(run, view.drift, view.clock),
        views.change_rows(run, view.changes, view.clock),
        "" if view.changes else "No placement change in this run.",
        view.error_figure,
        views.model_note(run, view, training is not None),
        listed,
        views.violations_note(goals, len(listed)),
        drift_columns(view.clock),
        changes_columns(view.clock),
    )


@callbacks.callback(
    Output(shell_ids.TIME_RANGE, "data", allow_duplicate=True),
    Output(shell_ids.TIME_PRESET, "value", allow_duplicate=True),
    Input(ids.OV_LATENCY, "relayoutData"),
    State(shell_ids.CLOCK, "value"),
    State(shell_ids.ZONE, "data"),
    State(shell_ids.RUN, "value"),
    prevent_initial_call=True,
)
@answers(_unchanged)
def zoom(
    relayout: dict[str, Any] | None, clock: str | None, zone: str | None, run_id: str | None
) -> tuple:
    """A drag on the chart sets the shared range (a double-click: the whole run)."""
    if not run_id:
        raise PreventUpdate
    run = chosen_run(run_id, statistics=False)
    chosen = relayout_range(relayout, Clock.of(run.info.origin, clock, zone))
    if chosen is None:  # a resize, not a zoom
        raise PreventUpdate
    return chosen.store(), CUSTOM if chosen.custom else chosen.preset


@callbacks.callback(
    Output(shell_ids.URL, "search", allow_duplicate=True),
    Input(ids.OV_RATE, "value"),
    Input(ids.OV_PAUSED, "data"),
    State(shell_ids.URL, "search"),
    prevent_initial_call=True,
)
def view_to_url(rate: Any, paused: bool | None, search: str | None) -> Any:
    """The refresh in the URL (defaults are left out; the shell keeps the time range)."""
    default = context.current().refresh_seconds
    query = merged(search, _refresh(rate, paused).query(default))
    return query if query != (search or "") else no_update


def _refresh(rate: Any, paused: bool | None) -> Refresh:
    seconds = float(rate) if isinstance(rate, int | float) and rate > 0 else OFF
    return Refresh(seconds, bool(paused))


@callbacks.callback(
    Output(ids.OV_REFRESH, "interval"),
    Output(ids.OV_REFRESH, "disabled"),
    Output(ids.OV_PAUSED, "data"),
    Output(ids.OV_PAUSE, "children"),
    Output(ids.OV_LIVE_STATUS, "children"),
    Input(ids.OV_RATE, "value"),
    Input(ids.OV_PAUSE, "n_clicks"),
    State(ids.OV_PAUSED, "data"),
)
def live_refresh(rate: Any, _: Any, paused: bool | None) -> tuple:
    """Pause or resume the automatic refresh, and how often it runs (the paused store
    changes on a click only: the URL follows it)."""
    clicked = ctx.triggered_id == ids.OV_PAUSE
    refresh = _refresh(rate, not paused if clicked else paused)
    if refresh.paused:
        status = "paused: the chart stays as it is"
    elif refresh.seconds == OFF:
        status = "automatic refresh off"
    else:
        status = f"live: refreshes every {refresh.seconds:g} s"
    interval = int(refresh.seconds * 1000) if refresh.seconds > 0 else no_update
    return (
        interval,
        not refresh.running,
        refresh.paused if clicked else no_update,
        "Resume" if refresh.paused else "Pause",
        status,
    )


@callbacks.callback(
    Output(ids.OV_REFIT, "data"),
    Output(ids.OV_REFIT_MESSAGE, "children"),
    Output(ids.OV_REFIT_MESSAGE, "is_open"),
    Input(ids.OV_REFIT_APPLY, "n_clicks"),
    Input(ids.OV_REFIT_RESET, "n_clicks"),
    State(ids.OV_REFIT_MINUTES, "value"),
    State(shell_ids.RUN, "value"),
    prevent_initial_call=True,
)
@answers(lambda message: (no_update, message, bool(message)))
def refit(_: Any, __: Any, minutes: Any, run_id: str | None) -> tuple:
    """One click fits the run's predictive model on its last minutes, the other goes back
    to the original model; the window is stored (the alert pass uses it too) and the
    page store changes to redraw the Overview."""
    run = chosen_run(run_id, "")
    window = None
    if ctx.triggered_id == ids.OV_REFIT_APPLY:
        window = views.refit_window(run, minutes)
    with context.current().database.cursor() as cur:
        set_training_window(cur, run.info.run_id, window)
    return {"run": run_id, "window": window, "clicks": ctx.triggered_id}, "", False


@callbacks.callback(
    Output(ids.OV_EXPLAIN_AT, "data"),
    Input(ids.OV_LATENCY, "clickData"),
    Input(ids.OV_EXPLAIN_WORST, "n_clicks"),
    State(shell_ids.RUN, "value"),
    State(shell_ids.CLOCK, "value"),
    State(shell_ids.ZONE, "data"),
    prevent_initial_call=True,
)
@answers(lambda _: None)
def choose(
    click: dict[str, Any] | None,
    _: Any,
    run_id: str | None,
    clock: str | None,
    zone: str | None,
) -> dict[str, Any] | None:
    """A click on the chart explains the clicked subinterval; the button the worst one."""
    if ctx.triggered_id == ids.OV_LATENCY and run_id:
        origin = chosen_run(run_id).info.origin
        return overview_explain.clicked_point(run_id, click, Clock.of(origin, clock, zone))
    return None


@callbacks.callback(
    Output(ids.OV_EXPLAIN_TEXT, "children"),
    Output(ids.OV_EXPLAIN_NOTE, "children"),
    Output(ids.OV_EXPLAIN_NOTE, "is_open"),
    Output(ids.OV_BLAME_BARS, "figure"),
    Output(ids.OV_BLAME_GRAPH, "elements"),
    Output(ids.OV_BLAME_SOURCES, "data"),
    Output(ids.OV_EXPLAIN_SHOWN, "data"),
    Output(ids.OV_GRAPH_LEGEND, "children"),
    Input(shell_ids.RUN, "value"),
    Input(ids.OV_EXPLAIN_AT, "data"),
    Input(shell_ids.ESTIMATOR, "value"),
    Input(ids.OV_REFRESH, "n_intervals"),
    Input(shell_ids.CLOCK, "value"),
    Input(shell_ids.ZONE, "data"),
    State(ids.OV_EXPLAIN_SHOWN, "data"),
    State(ids.OV_GRAPH_MODE, "value"),
)
@answers(lambda message, *args: _no_explanation(message, args[-1]), arguments=True)
def explain(
    run_id: str | None,
    selection: dict[str, Any] | None,
    estimator: str | None,
    _: Any,
    clock: str | None,
    zone: str | None,
    shown: str | None,
    mode: str | None,
) -> tuple:
    run = chosen_run(run_id, "")
    interval = overview_explain.selected_interval(run, selection)
    axis = Clock.of(run.info.origin, clock, zone)
    # a refresh without new data leaves the panel alone (redrawing it resizes the page)
    key = f"{run.key}|{interval}|{estimator}|{axis.key}"
    if key == shown:
        raise PreventUpdate
    view = overview_explain.explanation(run, interval, shown_estimator(run, estimator).name, axis)
    note = view.coverage_note or ""
    elements = view.graph.elements
    legend = panel.styled(mode, elements, GRAPH_MODES)[1]
    return view.headline, note, bool(note), view.figure, elements, view.source_rows, key, legend


@callbacks.callback(
    Output(ids.OV_ESTIMATE_NOTE, "children"),
    Input(shell_ids.RUN, "value"),
    Input(shell_ids.ESTIMATOR, "value"),
    Input(ids.OV_REFRESH, "n_intervals"),
)
@answers(lambda _: "")
def estimate_note(run_id: str | None, estimator: str | None, _: Any) -> str:
    """Which estimate the chart and the cards show, and why (``auto``: the reason it
    picked that one for this run's size)."""
    return estimate_caption(shown_estimator(chosen_run(run_id, ""), estimator))


def _no_explanation(message: str, mode: str | None) -> tuple:
    """The explanation panel empty, with ``message`` in place of the headline and on the
    contribution chart (not empty axes)."""
    bars = message_figure(CONTRIBUTION_TITLE, message, CONTRIBUTION_HEIGHT)
    return message, "", False, bars, [], [], None, panel.styled(mode, [], GRAPH_MODES)[1]


panel.wire(
    callbacks.callback,
    ids.OV_BLAME_GRAPH,
    ids.OV_GRAPH_MODE,
    ids.OV_GRAPH_LEGEND,
    ids.OV_GRAPH_FIT,
    GRAPH_MODES,
)


@callbacks.callback(
    Output(ids.OV_ALERTS, "data"),
    Output(ids.OV_ALERTS_NOTE, "children"),
    Output(ids.OV_ALERTS, "columns"),
    Input(shell_ids.RUN, "value"),
    Input(ids.OV_REFRESH, "n_intervals"),
    Input(shell_ids.CLOCK, "value"),
    Input(shell_ids.ZONE, "data"),
)
@answers(lambda message: ([], message, no_update))
def alerts(run_id: str | None, _: Any, clock: str | None, zone: str | None) -> tuple:
    run = chosen_run(run_id, "")
    with context.current().database.cursor() as cur:
        stored = list_alerts(cur, run.info.run_id)
    axis = Clock.of(run.info.origin, clock, zone)
    if not stored:
        return [], "No alert stored for this run.", alert_columns(axis)
    rows = views.alert_rows(run, stored, axis)
    return rows, f"{len(stored)} alert(s), newest first.", alert_columns(axis)
