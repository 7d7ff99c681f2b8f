"""The time picker every page shares, in the top bar: one range (a relative preset such
as "last 5 minutes", or a fixed start and end) and one clock (wall clock in UTC, local
time, or seconds since the run's start), kept in one store and in the URL.

A page reads the store and the clock as Inputs (:data:`ids.TIME_RANGE`,
:data:`ids.CLOCK`, :data:`ids.ZONE`), turns them into a range with
``TimeRange.from_store`` and a clock with ``Clock.of(origin, clock, zone)``, and draws
its x axes with :func:`dashboard.shell.figures.on_clock`. The shell stays on screen
when the page changes, so the choice goes along from page to page.
"""

from __future__ import annotations

from typing import Any

import dash
import dash_bootstrap_components as dbc
from dash import Input, Output, State, dcc, html, no_update
from dash.exceptions import PreventUpdate

from dashboard.core.timeaxis import (
    LOCAL,
    PRESET_LABELS,
    PRESETS,
    SINCE,
    WALL,
    Clock,
    TimeRange,
    clock_from_query,
    clock_query,
    picked_range,
    time_zone,
    wall_start,
    window,
)
from dashboard.shell import ids
from dashboard.shell.callbacks import Callbacks, answers, chosen_run
from dashboard.shell.urlquery import merged

callbacks = Callbacks()

CUSTOM = "custom"
"""The range choice of a fixed start and end (typed, or dragged on a chart)."""
CLOCK_LABELS = {WALL: "wall clock (UTC)", LOCAL: "local time", SINCE: "since start"}
ROW = {"display": "flex", "alignItems": "center", "gap": "0.5rem", "flexWrap": "wrap"}


def controls() -> html.Div:
    """The picker: presets or a custom start and end, and the clock; the store holds
    the range (the URL sets both once the page has loaded)."""
    shown = TimeRange()
    range_choice = dbc.RadioItems(
        id=ids.TIME_PRESET,
        options=[
            *({"label": PRESET_LABELS[k], "value": k} for k in PRESETS),
            {"label": "custom", "value": CUSTOM},
        ],
        value=shown.preset,
        inline=True,
    )
    field = {"width": "12.5rem"}
    picker = html.Div(
        [
            html.Span("from", className="small text-muted"),
            dbc.Input(id=ids.TIME_FROM, type="text", debounce=True, size="sm", style=field),
            html.Span("to", className="small text-muted"),
            dbc.Input(id=ids.TIME_TO, type="text", debounce=True, size="sm", style=field),
            dbc.Button("Apply", id=ids.TIME_APPLY, size="sm", color="secondary"),
        ],
        style=ROW,
        title="Seconds since the start (90, or 1:30), or on the wall clock a time of day "
        "(12:03:04) or date and time (2026-11-22 12:03:04) in the clock's zone. A drag on "
        "the Overview's chart sets the range too; a double-click shows the whole run.",
    )
    clock_choice = dbc.RadioItems(
        id=ids.CLOCK,
        options=[{"label": CLOCK_LABELS[c], "value": c} for c in (WALL, LOCAL, SINCE)],
        value=WALL,
        inline=True,
    )
    return html.Div(
        [
            dcc.Store(id=ids.TIME_RANGE, data=shown.store()),
            dcc.Store(id=ids.ZONE),
            html.Div(
                [range_choice, picker, clock_choice],
                style={**ROW, "gap": "0.4rem 1.6rem"},
                className="time-picker",
            ),
            dbc.Alert(id=ids.TIME_MESSAGE, is_open=False, color="danger", className="mt-2 mb-0"),
        ],
        className="pt-1",
        style={"flexBasis": "100%"},
    )


@callbacks.callback(
    Output(ids.TIME_RANGE, "data"),
    Output(ids.TIME_PRESET, "value"),
    Output(ids.TIME_MESSAGE, "children"),
    Output(ids.TIME_MESSAGE, "is_open"),
    Input(ids.TIME_PRESET, "value"),
    Input(ids.TIME_APPLY, "n_clicks"),
    Input(ids.TIME_FROM, "n_submit"),
    Input(ids.TIME_TO, "n_submit"),
    State(ids.TIME_FROM, "value"),
    State(ids.TIME_TO, "value"),
    State(ids.CLOCK, "value"),
    State(ids.ZONE, "data"),
    State(ids.TIME_RANGE, "data"),
    State(ids.RUN, "value"),
    prevent_initial_call=True,
)
@answers(lambda message: (no_update, CUSTOM, message, True))
def choose_range(
    preset: str | None,
    _apply: Any,
    _submit_from: Any,
    _submit_to: Any,
    start: Any,
    end: Any,
    clock: str | None,
    zone: str | None,
    stored: dict[str, Any] | None,
    run_id: str | None,
) -> tuple:
    """The shown range: a preset, or the custom start and end (checked, with a message
    naming what is wrong; choosing "custom" fixes the bounds the fields show)."""
    picked = dash.ctx.triggered_id == ids.TIME_PRESET
    if picked and preset in PRESETS:
        return TimeRange(preset).store(), no_update, "", False
    if picked and TimeRange.from_store(stored).custom:  # a URL or a drag set it already
        raise PreventUpdate
    if not run_id:
        raise PreventUpdate
    # the page's message says what a run without statistics waits for, not this one's
    run = chosen_run(run_id, statistics=False)
    axis = Clock.of(run.info.origin, clock, zone)
    chosen = picked_range(axis, start, end, run.intervals * run.subinterval)
    return chosen.store(), CUSTOM, "", False


@callbacks.callback(
    Output(ids.TIME_FROM, "value"),
    Output(ids.TIME_TO, "value"),
    Output(ids.CLOCK, "options"),
    Input(ids.TIME_RANGE, "data"),
    Input(ids.CLOCK, "value"),
    Input(ids.RUN, "value"),
    Input(ids.ZONE, "data"),
)
@answers(lambda _: (no_update, no_update, no_update))
def show_range(
    shown: dict[str, Any] | None, clock: str | None, run_id: str | None, zone: str | None
) -> tuple:
    """The picker shows the range in the chosen clock (a preset: its bounds now); the
    wall clocks are offered only for runs with a wall-clock start, the local one with
    the browser's zone in its label."""
    run = chosen_run(run_id, statistics=False)
    axis = Clock.of(run.info.origin, clock, zone)
    has_wall = wall_start(run.info.origin) is not None
    local = CLOCK_LABELS[LOCAL] if zone is None else f"local time ({time_zone(zone)})"
    labels = {**CLOCK_LABELS, LOCAL: local}
    if not has_wall:
        labels[SINCE] = "since start (the only clock of this run: it has no wall-clock start)"
    offered = [
        {"value": choice, "disabled": choice != SINCE and not has_wall, "label": labels[choice]}
        for choice in (WALL, LOCAL, SINCE)
    ]
    if run.intervals == 0:
        return no_update, no_update, offered
    _, (start, end) = window(TimeRange.from_store(shown), run.intervals, run.subinterval)
    return axis.text(start), axis.text(end), offered


@callbacks.callback(
    Output(ids.URL, "search", allow_duplicate=True),
    Output(ids.TIME_RANGE, "data", allow_duplicate=True),
    Output(ids.TIME_PRESET, "value", allow_duplicate=True),
    Output(ids.CLOCK, "value"),
    Input(ids.URL, "search"),
    Input(ids.TIME_RANGE, "data"),
    Input(ids.CLOCK, "value"),
    prevent_initial_call="initial_duplicate",
)
def sync_time(search: str | None, stored: dict[str, Any] | None, clock: str | None) -> tuple:
    """The range and the clock in the URL (``?range=5m``, ``?from=120&to=300``,
    ``?clock=since``; defaults left out): a URL that is opened (a link, the back button)
    sets the picker, a choice in the picker rewrites the URL."""
    from urllib.parse import parse_qs

    if dash.ctx.triggered_id in (None, ids.URL):
        asked = parse_qs((search or "").lstrip("?"))
        wanted = TimeRange.from_query(asked)
        wanted_clock = clock_from_query(asked)
        same_range = wanted == TimeRange.from_store(stored)
        return (
            no_update,
            no_update if same_range else wanted.store(),
            no_update if same_range else (CUSTOM if wanted.custom else wanted.preset),
            no_update if wanted_clock == clock else wanted_clock,
        )
    query = merged(search, {**TimeRange.from_store(stored).query(), **clock_query(clock)})
    return query if query != (search or "") else no_update, no_update, no_update, no_update


callbacks.clientside_callback(
    "function(id) { try { return Intl.DateTimeFormat().resolvedOptions().timeZone || null; }"
    " catch (e) { return null; } }",
    Output(ids.ZONE, "data"),
    Input(ids.ZONE, "id"),
)
"""The browser's time zone (an IANA name) for the local clock: only the browser knows it."""
