"""Overview (live): measured, estimated and predicted latency, KPI cards, automatic refresh."""

from __future__ import annotations

from typing import Any

import dash
import dash_bootstrap_components as dbc
from dash import Input, Output, State, clientside_callback, ctx, dcc, html, no_update
from dash.dash_table.DataTable import DataTable
from dash.dash_table.Format import Format, Scheme, Sign
from dash.dash_table.FormatTemplate import percentage
from dash.exceptions import PreventUpdate

from dashboard import context, graph_panel, ids, operator_graph, views
from dashboard.glossary import GLOSSARY, term
from dashboard.timeaxis import (
    LOCAL,
    OFF,
    PRESET_LABELS,
    PRESETS,
    SINCE,
    WALL,
    Clock,
    Refresh,
    TimeRange,
    clock_from_query,
    clock_query,
    picked_range,
    refresh_rates,
    relayout_range,
    time_zone,
    wall_start,
    window,
)
from dashboard.urlquery import merged
from estimator.drift import DEFAULT_K
from estimator.errors import MaceError
from storage.alerts import list_alerts
from storage.scenarios import objectives, set_training_window, training_window_of

DEFAULT_REFIT_MINUTES = 1
GRAPH_MODES = (operator_graph.BLAME, operator_graph.NODE, operator_graph.UTILISATION)
CUSTOM = "custom"

dash.register_page(__name__, path="/", name="Overview", order=0)


def _card(label: str, component_id: str, explanation: str) -> dbc.Card:
    """A KPI card whose label shows ``explanation`` (glossary sentences) on hover."""
    return dbc.Card(
        dbc.CardBody(
            [
                html.Div(label, className="kpi-label glossary-term", title=explanation),
                html.H5(id=component_id),
            ]
        ),
        className="kpi-card",
    )


def _explain(*terms: str) -> str:
    """The glossary definitions of ``terms``, one line each."""
    return "\n".join(f"{name}: {GLOSSARY[name]}" for name in terms)


ROW = {"display": "flex", "alignItems": "center", "gap": "0.5rem", "flexWrap": "wrap"}
CLOCK_LABELS = {WALL: "wall clock (UTC)", LOCAL: "local time", SINCE: "since start"}


def _rate_options(default: float) -> list[dict[str, Any]]:
    return [{"label": f"every {r:g} s", "value": r} for r in refresh_rates(default)] + [
        {"label": "off", "value": OFF}
    ]


def _time_controls(shown: TimeRange, clock: str, refresh: float) -> html.Div:
    """Time range (presets, or a custom start and end), clock and live refresh."""
    range_choice = dbc.RadioItems(
        id=ids.OV_RANGE,
        options=[
            *({"label": PRESET_LABELS[k], "value": k} for k in PRESETS),
            {"label": "custom", "value": CUSTOM},
        ],
        value=CUSTOM if shown.custom else shown.preset,
        inline=True,
    )
    field = {"width": "12.5rem"}
    picker = html.Div(
        [
            html.Span("from", className="small text-muted"),
            dbc.Input(id=ids.OV_RANGE_FROM, type="text", debounce=True, size="sm", style=field),
            html.Span("to", className="small text-muted"),
            dbc.Input(id=ids.OV_RANGE_TO, type="text", debounce=True, size="sm", style=field),
            dbc.Button("Apply", id=ids.OV_RANGE_APPLY, size="sm", color="secondary"),
        ],
        style=ROW,
        title="Seconds since the start (90, or 1:30), or on the wall clock a time of day "
        "(12:03:04) or date and time (2026-11-22 12:03:04) in the clock's zone. A drag on "
        "the chart sets the range too; a double-click shows the whole run.",
    )
    clock_choice = dbc.RadioItems(
        id=ids.OV_CLOCK,
        options=[{"label": CLOCK_LABELS[c], "value": c} for c in (WALL, LOCAL, SINCE)],
        value=clock,
        inline=True,
    )
    live = html.Div(
        [
            dcc.Dropdown(
                id=ids.OV_RATE,
                options=_rate_options(refresh),
                value=refresh,
                clearable=False,
                searchable=False,
                style={"width": "8.5rem"},
            ),
            dbc.Button("Pause", id=ids.OV_PAUSE, size="sm", color="secondary"),
            html.Span(id=ids.OV_LIVE_STATUS, className="small text-muted"),
        ],
        style=ROW,
        title="How often the Overview reloads the newest data; pause to study a moment "
        "while data keeps arriving.",
    )
    return html.Div(
        [
            html.Div(
                [range_choice, picker, clock_choice, live],
                style={**ROW, "gap": "0.6rem 1.6rem"},
            ),
            dbc.Alert(id=ids.OV_RANGE_MESSAGE, is_open=False, color="danger", className="mt-2"),
        ],
        className="mb-2",
    )


def layout(**query: Any) -> html.Div:
    """The Overview; ``query`` is the URL's query string (range, from, to, clock,
    refresh, paused)."""
    default = context.current().refresh_seconds
    refresh = Refresh.from_query(query, default)
    shown = TimeRange.from_query(query)
    return html.Div(
        [
            dcc.Interval(
                id=ids.OV_REFRESH,
                interval=int((refresh.seconds or default) * 1000),
                disabled=not refresh.running,
            ),
            dcc.Store(id=ids.OV_TIME_RANGE, data=shown.store()),
            dcc.Store(id=ids.OV_PAUSED, data=refresh.paused),
            dcc.Store(id=ids.OV_ZONE),
            _time_controls(shown, clock_from_query(query), refresh.seconds),
            dbc.Alert(id=ids.OV_MESSAGE, is_open=False, color="warning"),
            dbc.Alert(id=ids.OV_DRIFT_BANNER, is_open=False, color="danger"),
            dbc.Row(
                [
                    dbc.Col(
                        _card(
                            "worst case: estimated, predicted, measured",
                            ids.OV_KPI_WC,
                            _explain("MaceWC", "estimated", "predicted", "measured"),
                        ),
                        md=6,
                    ),
                    dbc.Col(
                        _card(
                            "bound coverage (measured inside the bounds)",
                            ids.OV_KPI_COVERAGE,
                            "Share of measured subintervals inside the estimator's band "
                            "[Mace, estimated + w + eps] (burst-aware: + 2w/k + eps, per-origin: "
                            "+ (h + 2)w/k + w/4 + eps; the chart's legend names it).\n"
                            + _explain("Mace", "w", "eps"),
                        ),
                        md=3,
                    ),
                    dbc.Col(
                        _card(
                            "current bottleneck",
                            ids.OV_KPI_BOTTLENECK,
                            "The node with the largest CE/C in the newest subinterval with a "
                            "backlog.\n" + _explain("CE/C"),
                        ),
                        md=3,
                    ),
                ],
                className="mb-2 g-2",
            ),
            dcc.Graph(id=ids.OV_LATENCY, config={"doubleClick": "autosize"}),
            _violations_card(),
            dcc.Store(id=ids.OV_EXPLAIN_AT),
            dcc.Store(id=ids.OV_EXPLAIN_SHOWN),
            dcc.Store(id=ids.OV_REFIT),
            _explanation_card(),
            _changes_card(),
            _drift_card(),
            _alerts_card(),
        ]
    )


TABLE_STYLE: dict[str, Any] = {
    "style_cell": {"fontSize": 13, "padding": "2px 6px"},
    "style_cell_conditional": [{"if": {"column_type": "text"}, "textAlign": "left"}],
    "style_header": {"whiteSpace": "normal", "height": "auto", "fontWeight": "bold"},
    "style_table": {"overflowX": "auto"},
}
SECONDS = Format(precision=3, scheme=Scheme.fixed).to_plotly_json()
SIGNED_PERCENT = Format(precision=0, scheme=Scheme.percentage, sign=Sign.positive).to_plotly_json()


def _seconds(name: str, column: str) -> dict[str, Any]:
    return {"name": name, "id": column, "type": "numeric", "format": SECONDS}


def _time(clock: Clock, prefix: str, column: str) -> dict[str, Any]:
    """A column of times on ``clock`` (its heading names the clock)."""
    kind = "text" if clock.wall else "numeric"
    return {"name": clock.heading(prefix), "id": column, "type": kind}


def _changes_columns(clock: Clock) -> list[Any]:
    return [
        _time(clock, "", "time"),
        {"name": "version", "id": "version", "type": "numeric"},
        {"name": "operators moved", "id": "moved", "type": "text"},
        _seconds("predicted worst case before (s)", "predicted_wc_before"),
        _seconds("predicted worst case after (s)", "predicted_wc_after"),
        {
            "name": "predicted change",
            "id": "predicted_change",
            "type": "numeric",
            "format": SIGNED_PERCENT,
        },
        _seconds("measured worst case before (s)", "measured_wc_before"),
        _seconds("measured worst case after (s)", "measured_wc_after"),
        {
            "name": "measured change",
            "id": "measured_change",
            "type": "numeric",
            "format": SIGNED_PERCENT,
        },
    ]


def _changes_card() -> dbc.Card:
    """Each placement change checked: the model fitted before it against what happened."""
    return dbc.Card(
        dbc.CardBody(
            [
                html.H5("Changes"),
                html.P(
                    [
                        "Each placement change (a dashed marker on the chart), checked: the ",
                        term("predicted"),
                        " worst case of a model fitted before the change only, for the "
                        "periods before and after it, against the ",
                        term("measured"),
                        " worst case of the same periods. Empty cells: no data yet.",
                    ],
                    className="text-muted small mb-2",
                ),
                html.Div(id=ids.OV_CHANGES_NOTE, className="small mb-2"),
                DataTable(
                    id=ids.OV_CHANGES_TABLE,
                    columns=_changes_columns(Clock()),
                    page_size=8,
                    **TABLE_STYLE,
                ),
            ]
        ),
        className="mb-3",
    )


def _alert_columns(clock: Clock) -> list[Any]:
    return [
        {"name": "alert", "id": "kind", "type": "text"},
        {"name": "query", "id": "query", "type": "text"},
        _time(clock, "from", "start"),
        _time(clock, "to", "end"),
        _seconds("peak (s)", "value"),
        _seconds("objective (s)", "objective"),
        {"name": "detail", "id": "detail", "type": "text"},
        {"name": "sent to webhook", "id": "delivered", "type": "text"},
    ]


def _alerts_card() -> dbc.Card:
    """The run's stored alerts (raised by the alert pass of mace ingest or serve)."""
    return dbc.Card(
        dbc.CardBody(
            [
                html.H5("Alerts"),
                html.P(
                    "Raised after each ingestion pass (mace ingest, mace serve --landing): a "
                    "query's measured or predicted latency above its objective (set on the "
                    "Reports page; predicted: before it happens), and model drift. Peak: the "
                    "largest latency of a breach, or the largest distance outside the band "
                    "of a drift.",
                    className="text-muted small mb-2",
                ),
                html.Div(id=ids.OV_ALERTS_NOTE, className="small mb-2"),
                DataTable(
                    id=ids.OV_ALERTS, columns=_alert_columns(Clock()), page_size=8, **TABLE_STYLE
                ),
            ]
        ),
        className="mb-3",
    )


def _violations_card() -> dbc.Card:
    """The objectives' violations in the shown range, as time ranges (shaded on the chart)."""
    columns: list[Any] = [
        {"name": "query", "id": "query", "type": "text"},
        {"name": "time range", "id": "range", "type": "text"},
        {"name": "duration (s)", "id": "duration", "type": "numeric"},
        _seconds("peak latency (s)", "peak"),
        _seconds("objective (s)", "objective"),
    ]
    return dbc.Card(
        dbc.CardBody(
            [
                html.H5("Objective violations"),
                html.P(
                    [
                        "Stretches where a query's ",
                        term("measured"),
                        " max latency was above its objective (set on the Reports "
                        "page), in the shown range, newest first; shaded red on the chart.",
                    ],
                    className="text-muted small mb-2",
                ),
                html.Div(id=ids.OV_VIOLATIONS_NOTE, className="small mb-2"),
                DataTable(id=ids.OV_VIOLATIONS, columns=columns, page_size=6, **TABLE_STYLE),
            ]
        ),
        className="mb-3",
    )


def _drift_columns(clock: Clock) -> list[Any]:
    return [
        {"name": "query", "id": "query", "type": "text"},
        _time(clock, "from", "start"),
        _time(clock, "to", "end"),
        {"name": "duration (s)", "id": "duration", "type": "numeric"},
        {"name": "measured latency", "id": "direction", "type": "text"},
        _time(clock, "flagged at", "flagged"),
        _seconds("largest distance to the band (s)", "peak"),
    ]


def _drift_card() -> dbc.Card:
    """When the model stops holding: drift events, k, the rolling error and a refit."""
    controls = dbc.Row(
        [
            dbc.Col(
                [
                    html.Label("k (consecutive subintervals outside the band)", className="small"),
                    dbc.Input(
                        id=ids.OV_DRIFT_K,
                        type="number",
                        min=1,
                        step=1,
                        value=DEFAULT_K,
                        debounce=True,
                        size="sm",
                    ),
                ],
                md=4,
            ),
            dbc.Col(
                [
                    html.Label("recent window (minutes)", className="small"),
                    dbc.Input(
                        id=ids.OV_REFIT_MINUTES,
                        type="number",
                        min=0,
                        value=DEFAULT_REFIT_MINUTES,
                        debounce=True,
                        size="sm",
                    ),
                ],
                md=3,
            ),
            dbc.Col(
                [
                    dbc.Button(
                        "Refit on recent window", id=ids.OV_REFIT_APPLY, size="sm", className="me-1"
                    ),
                    dbc.Button(
                        "Original model", id=ids.OV_REFIT_RESET, size="sm", color="secondary"
                    ),
                ],
                md=5,
                style={"alignSelf": "flex-end"},
            ),
        ],
        className="mb-2",
    )
    return dbc.Card(
        dbc.CardBody(
            [
                html.H5("Model drift"),
                html.P(
                    [
                        "A ",
                        term("drift event"),
                        ": the measured max latency stays outside the ",
                        term("predicted band"),
                        " ([",
                        term("Mace"),
                        ", path-aware predicted + ",
                        term("w"),
                        " + ",
                        term("eps"),
                        "] widened by one w on each side) for k consecutive subintervals or "
                        "more; only subintervals whose outputs are all in count. The model no "
                        "longer matches the system: refit it on a recent window (stored for "
                        "the run: the alert pass predicts with it too).",
                    ],
                    className="text-muted small mb-2",
                ),
                dbc.Row(
                    [
                        dbc.Col(
                            [
                                controls,
                                dbc.Alert(id=ids.OV_REFIT_MESSAGE, is_open=False, color="danger"),
                                html.Div(id=ids.OV_MODEL_NOTE, className="small mb-2"),
                                DataTable(
                                    id=ids.OV_DRIFT_TABLE,
                                    columns=_drift_columns(Clock()),
                                    page_size=6,
                                    **TABLE_STYLE,
                                ),
                            ],
                            md=6,
                        ),
                        dbc.Col(
                            dcc.Graph(id=ids.OV_ERROR_GRAPH, config={"displayModeBar": False}),
                            md=6,
                        ),
                    ]
                ),
            ]
        ),
        className="mb-3",
    )


def _explanation_card() -> dbc.Card:
    """Latency blame of the clicked (or the worst) subinterval."""
    intro = html.P(
        [
            "Click a point of the chart to explain that subinterval. The ",
            term("bottleneck"),
            " is the node with the largest ",
            term("CE/C"),
            " there; its backlog has been building since the start of its ",
            term("busy period"),
            " (the shaded span). Each operator placed on it gets a part of the backlog in "
            "proportion to its ",
            term("DLTS"),
            " over that period, and each source the part its events caused; the parts add "
            "up to the CE/C, in seconds. With the path-aware estimator, every node of the "
            "critical path gets its part the same way over its own window, and the parts "
            "add up to the estimate.",
        ],
        className="text-muted small mb-2",
    )
    return dbc.Card(
        dbc.CardBody(
            [
                dbc.Row(
                    [
                        dbc.Col(html.H5("Why is latency high here?"), md=8),
                        dbc.Col(
                            dbc.Button(
                                "Explain the worst subinterval", id=ids.OV_EXPLAIN_WORST, size="sm"
                            ),
                            md=4,
                            style={"textAlign": "right"},
                        ),
                    ]
                ),
                intro,
                html.P(id=ids.OV_EXPLAIN_TEXT, className="mb-2", style={"fontWeight": 600}),
                dbc.Alert(id=ids.OV_EXPLAIN_NOTE, is_open=False, color="warning"),
                dbc.Row(
                    [
                        dbc.Col(
                            dcc.Graph(id=ids.OV_BLAME_BARS, config={"displayModeBar": False}), md=7
                        ),
                        dbc.Col(
                            [
                                html.H6("Share of the backlog per source"),
                                DataTable(
                                    id=ids.OV_BLAME_SOURCES,
                                    columns=[
                                        {"name": "source", "id": "source", "type": "text"},
                                        {
                                            "name": "CE/C (s)",
                                            "id": "seconds",
                                            "type": "numeric",
                                            "format": Format(
                                                precision=3, scheme=Scheme.fixed
                                            ).to_plotly_json(),
                                        },
                                        {
                                            "name": "share",
                                            "id": "share",
                                            "type": "numeric",
                                            "format": percentage(1),
                                        },
                                    ],
                                    style_cell={"fontSize": 13, "padding": "2px 6px"},
                                ),
                            ],
                            md=5,
                        ),
                    ]
                ),
                graph_panel.panel(
                    ids.OV_BLAME_GRAPH,
                    ids.OV_GRAPH_MODE,
                    ids.OV_GRAPH_LEGEND,
                    ids.OV_GRAPH_FIT,
                    GRAPH_MODES,
                    operator_graph.WIDE,
                    "Operator graph",
                ),
            ]
        ),
        className="mb-3",
    )


@dash.callback(
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
    Input(ids.RUN, "value"),
    Input(ids.OV_TIME_RANGE, "data"),
    Input(ids.OV_REFRESH, "n_intervals"),
    Input(ids.ESTIMATOR, "value"),
    Input(ids.OV_EXPLAIN_AT, "data"),
    Input(ids.OV_DRIFT_K, "value"),
    Input(ids.OV_REFIT, "data"),
    Input(ids.OV_CLOCK, "value"),
    Input(ids.OV_ZONE, "data"),
)
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
    unchanged = (no_update,) * 11
    if not run_id:
        return no_update, "-", "-", "-", "select a run (none ingested yet?)", True, *unchanged
    try:
        app = context.current()
        run = app.runs.get(run_id)
        with app.database.cursor() as cur:
            training = views.stored_training(run, training_window_of(cur, run_id))
            goals = objectives(cur, run_id)
        view = views.overview(
            run,
            TimeRange.from_store(shown),
            estimator or "mace",
            views.selected_interval(run, selection),
            k=views.drift_k(k),
            training=training,
            clock=clock,
            objectives=goals,
            zone=zone,
        )
    except MaceError as exc:
        return no_update, "-", "-", "-", str(exc), True, *unchanged
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
        _drift_columns(view.clock),
        _changes_columns(view.clock),
    )


@dash.callback(
    Output(ids.OV_TIME_RANGE, "data"),
    Output(ids.OV_RANGE, "value"),
    Output(ids.OV_RANGE_MESSAGE, "children"),
    Output(ids.OV_RANGE_MESSAGE, "is_open"),
    Input(ids.OV_RANGE, "value"),
    Input(ids.OV_RANGE_APPLY, "n_clicks"),
    Input(ids.OV_RANGE_FROM, "n_submit"),
    Input(ids.OV_RANGE_TO, "n_submit"),
    Input(ids.OV_LATENCY, "relayoutData"),
    State(ids.OV_RANGE_FROM, "value"),
    State(ids.OV_RANGE_TO, "value"),
    State(ids.OV_CLOCK, "value"),
    State(ids.OV_ZONE, "data"),
    State(ids.RUN, "value"),
    prevent_initial_call=True,
)
def choose_range(
    preset: str | None,
    _apply: Any,
    _submit_from: Any,
    _submit_to: Any,
    relayout: dict[str, Any] | None,
    start: Any,
    end: Any,
    clock: str | None,
    zone: str | None,
    run_id: str | None,
) -> tuple:
    """The shown range: a preset, the custom start and end (checked, with a message
    naming what is wrong), or what a drag on the chart chose (a double-click: all)."""
    if ctx.triggered_id == ids.OV_RANGE and preset in PRESETS:
        return TimeRange(preset).store(), no_update, "", False
    if not run_id:
        raise PreventUpdate
    try:
        run = context.current().runs.get(run_id)
        axis = Clock.of(run.info.origin, clock, zone)
        if ctx.triggered_id == ids.OV_LATENCY:
            chosen = relayout_range(relayout, axis)
            if chosen is None:  # a resize, not a zoom
                raise PreventUpdate
        else:
            chosen = picked_range(axis, start, end, run.intervals * run.subinterval)
    except MaceError as exc:
        return no_update, CUSTOM, str(exc), True
    return chosen.store(), CUSTOM if chosen.custom else chosen.preset, "", False


@dash.callback(
    Output(ids.OV_RANGE_FROM, "value"),
    Output(ids.OV_RANGE_TO, "value"),
    Output(ids.OV_CLOCK, "options"),
    Input(ids.OV_TIME_RANGE, "data"),
    Input(ids.OV_CLOCK, "value"),
    Input(ids.RUN, "value"),
    Input(ids.OV_ZONE, "data"),
)
def show_range(
    shown: dict[str, Any] | None, clock: str | None, run_id: str | None, zone: str | None
) -> tuple:
    """The picker shows the range in the chosen clock (a preset: its bounds now); the
    wall clocks are offered only for runs with a wall-clock start, the local one with
    the browser's zone in its label."""
    if not run_id:
        raise PreventUpdate
    try:
        run = context.current().runs.get(run_id)
    except MaceError:
        raise PreventUpdate from None
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


@dash.callback(
    Output(ids.URL, "search", allow_duplicate=True),
    Input(ids.OV_TIME_RANGE, "data"),
    Input(ids.OV_CLOCK, "value"),
    Input(ids.OV_RATE, "value"),
    Input(ids.OV_PAUSED, "data"),
    State(ids.URL, "search"),
    prevent_initial_call=True,
)
def view_to_url(
    shown: dict[str, Any] | None,
    clock: str | None,
    rate: Any,
    paused: bool | None,
    search: str | None,
) -> Any:
    """The range, the clock and the refresh in the URL (defaults are left out)."""
    default = context.current().refresh_seconds
    updates = {
        **TimeRange.from_store(shown).query(),
        **clock_query(clock),
        **_refresh(rate, paused).query(default),
    }
    query = merged(search, updates)
    return query if query != (search or "") else no_update


def _refresh(rate: Any, paused: bool | None) -> Refresh:
    seconds = float(rate) if isinstance(rate, int | float) and rate > 0 else OFF
    return Refresh(seconds, bool(paused))


@dash.callback(
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


@dash.callback(
    Output(ids.OV_REFIT, "data"),
    Output(ids.OV_REFIT_MESSAGE, "children"),
    Output(ids.OV_REFIT_MESSAGE, "is_open"),
    Input(ids.OV_REFIT_APPLY, "n_clicks"),
    Input(ids.OV_REFIT_RESET, "n_clicks"),
    State(ids.OV_REFIT_MINUTES, "value"),
    State(ids.RUN, "value"),
    prevent_initial_call=True,
)
def refit(_: Any, __: Any, minutes: Any, run_id: str | None) -> tuple:
    """One click fits the run's predictive model on its last minutes, the other goes back
    to the original model; the window is stored (the alert pass uses it too) and the
    page store changes to redraw the Overview."""
    if not run_id:
        return no_update, "", False
    try:
        app = context.current()
        window = None
        if ctx.triggered_id == ids.OV_REFIT_APPLY:
            window = views.refit_window(app.runs.get(run_id), minutes)
        with app.database.cursor() as cur:
            set_training_window(cur, run_id, window)
    except MaceError as exc:
        return no_update, str(exc), True
    return {"run": run_id, "window": window, "clicks": ctx.triggered_id}, "", False


@dash.callback(
    Output(ids.OV_EXPLAIN_AT, "data"),
    Input(ids.OV_LATENCY, "clickData"),
    Input(ids.OV_EXPLAIN_WORST, "n_clicks"),
    State(ids.RUN, "value"),
    State(ids.OV_CLOCK, "value"),
    State(ids.OV_ZONE, "data"),
    prevent_initial_call=True,
)
def choose(
    click: dict[str, Any] | None,
    _: Any,
    run_id: str | None,
    clock: str | None,
    zone: str | None,
) -> dict[str, Any] | None:
    """A click on the chart explains the clicked subinterval; the button the worst one."""
    if ctx.triggered_id == ids.OV_LATENCY and run_id:
        try:
            origin = context.current().runs.get(run_id).info.origin
        except MaceError:
            return None
        return views.clicked_point(run_id, click, Clock.of(origin, clock, zone))
    return None


@dash.callback(
    Output(ids.OV_EXPLAIN_TEXT, "children"),
    Output(ids.OV_EXPLAIN_NOTE, "children"),
    Output(ids.OV_EXPLAIN_NOTE, "is_open"),
    Output(ids.OV_BLAME_BARS, "figure"),
    Output(ids.OV_BLAME_GRAPH, "elements"),
    Output(ids.OV_BLAME_SOURCES, "data"),
    Output(ids.OV_EXPLAIN_SHOWN, "data"),
    Output(ids.OV_GRAPH_LEGEND, "children"),
    Input(ids.RUN, "value"),
    Input(ids.OV_EXPLAIN_AT, "data"),
    Input(ids.ESTIMATOR, "value"),
    Input(ids.OV_REFRESH, "n_intervals"),
    Input(ids.OV_CLOCK, "value"),
    Input(ids.OV_ZONE, "data"),
    State(ids.OV_EXPLAIN_SHOWN, "data"),
    State(ids.OV_GRAPH_MODE, "value"),
)
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
    if not run_id:
        return "", "", False, no_update, [], [], None, graph_panel.styled(mode, [], GRAPH_MODES)[1]
    try:
        run = context.current().runs.get(run_id)
        interval = views.selected_interval(run, selection)
        axis = Clock.of(run.info.origin, clock, zone)
        # a refresh without new data leaves the panel alone (redrawing it resizes the page)
        key = f"{run.key}|{interval}|{estimator}|{axis.key}"
        if key == shown:
            raise PreventUpdate
        view = views.explanation(run, interval, estimator or "mace", axis)
    except MaceError as exc:
        legend = graph_panel.styled(mode, [], GRAPH_MODES)[1]
        return str(exc), "", False, no_update, [], [], None, legend
    note = view.coverage_note or ""
    elements = view.graph.elements
    legend = graph_panel.styled(mode, elements, GRAPH_MODES)[1]
    return view.headline, note, bool(note), view.figure, elements, view.source_rows, key, legend


graph_panel.wire(
    dash.callback,
    ids.OV_BLAME_GRAPH,
    ids.OV_GRAPH_MODE,
    ids.OV_GRAPH_LEGEND,
    ids.OV_GRAPH_FIT,
    GRAPH_MODES,
)


@dash.callback(
    Output(ids.OV_ALERTS, "data"),
    Output(ids.OV_ALERTS_NOTE, "children"),
    Output(ids.OV_ALERTS, "columns"),
    Input(ids.RUN, "value"),
    Input(ids.OV_REFRESH, "n_intervals"),
    Input(ids.OV_CLOCK, "value"),
    Input(ids.OV_ZONE, "data"),
)
def alerts(run_id: str | None, _: Any, clock: str | None, zone: str | None) -> tuple:
    if not run_id:
        return [], "", no_update
    try:
        app = context.current()
        run = app.runs.get(run_id)
        with app.database.cursor() as cur:
            stored = list_alerts(cur, run_id)
    except MaceError as exc:
        return [], str(exc), no_update
    axis = Clock.of(run.info.origin, clock, zone)
    if not stored:
        return [], "No alert stored for this run.", _alert_columns(axis)
    rows = views.alert_rows(run, stored, axis)
    return rows, f"{len(stored)} alert(s), newest first.", _alert_columns(axis)


clientside_callback(
    "function(id) { try { return Intl.DateTimeFormat().resolvedOptions().timeZone || null; }"
    " catch (e) { return null; } }",
    Output(ids.OV_ZONE, "data"),
    Input(ids.OV_ZONE, "id"),
)
"""The browser's time zone (an IANA name) for the local clock: only the browser knows it."""
