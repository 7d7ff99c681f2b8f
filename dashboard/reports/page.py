"""Reports: per-query latency report, editable objectives, CSV and a printable view."""

from __future__ import annotations

from typing import Any, cast

import dash_bootstrap_components as dbc
from dash import Input, Output, State, dcc, html, no_update
from dash.dash_table.DataTable import DataTable

from dashboard import context
from dashboard.core import violations
from dashboard.core.data import RunData
from dashboard.core.estimators import shown_estimator
from dashboard.core.report import report_csv
from dashboard.core.timeaxis import Clock, TimeRange
from dashboard.reports import ids, views
from dashboard.shell import ids as shell_ids
from dashboard.shell.callbacks import Callbacks, Page, answers, chosen_run
from dashboard.shell.figures import message_figure
from dashboard.shell.glossary import term
from estimator.errors import ScenarioError
from estimator.whatif import parse_positive
from storage import scenarios

callbacks = Callbacks()
MAX_OBJECTIVE = 1.0e6


def layout(**_: Any) -> html.Div:
    columns: list[Any] = views.report_columns()
    return html.Div(
        [
            dcc.Store(id=ids.RP_OBJ_SAVED),
            dcc.Download(id=ids.RP_DOWNLOAD),
            dbc.Alert(id=ids.RP_MESSAGE, is_open=False, color="danger", dismissable=True),
            html.H4("Latency report (seconds, across time)"),
            html.P(
                [
                    term("estimated"),
                    ": the estimator chosen in the top bar (auto: the most accurate one the "
                    "run's size allows, the Overview says which; ",
                    term("Mace"),
                    ": the lower bound) applied to the measured load, the ",
                    term("DLTS"),
                    " (for a run measured by an engine's counters, such as Flink: each "
                    "operator's measured arrivals times its fitted cost); ",
                    term("predicted"),
                    ": the same estimator on a model fitted on the first 10% of the run and "
                    "the arrivals; ",
                    term("measured"),
                    ": max latency per subinterval at the sinks. WC: worst case. Compliance: "
                    "share of measured subintervals meeting the objective; bound coverage: "
                    "share of measured subintervals inside the estimator's band [Mace, "
                    "estimated + ",
                    term("w"),
                    " + ",
                    term("eps"),
                    "] (burst-aware and per-origin: + 2",
                    term("w"),
                    "/k + ",
                    term("eps"),
                    ", docs/accuracy.md).",
                ],
                className="text-muted",
            ),
            DataTable(
                id=ids.RP_TABLE,
                columns=columns,
                style_cell={"fontSize": 13},
                # headers with units wrap, so the whole table fits a 1500 px window
                style_header={"whiteSpace": "normal", "height": "auto", "fontWeight": "bold"},
                style_table={"overflowX": "auto"},
            ),
            dbc.Row(
                [
                    dbc.Col(dcc.Dropdown(id=ids.RP_OBJ_QUERY, placeholder="query"), md=3),
                    dbc.Col(
                        dbc.Input(id=ids.RP_OBJ_VALUE, placeholder="objective (s)", size="sm"),
                        md=2,
                    ),
                    dbc.Col(dbc.Button("Save objective", id=ids.RP_OBJ_SAVE, size="sm"), md=2),
                    dbc.Col(dbc.Button("Download CSV", id=ids.RP_CSV, size="sm"), md=2),
                    dbc.Col(dbc.Button("Print", id=ids.RP_PRINT, size="sm"), md=1),
                ],
                className="my-2 no-print",
            ),
            dcc.Graph(id=ids.RP_FIGURE, figure=message_figure(views.COMPLIANCE_TITLE, "loading…")),
            html.Div(id=ids.RP_VIOLATIONS),
            html.Div(id=ids.RP_THREADS),
        ]
    )


def threads_section(report: dict[str, Any]) -> list[Any]:
    """An engine run's threads: how each operator's cost was read and whether its busy
    time is work (nothing for a run without threads)."""
    rows = views.thread_rows(report)
    if not rows:
        return []
    return [
        html.H5("Engine threads: how each cost was read", className="mt-3"),
        html.P(
            "Busy time that differs by 2x or more between the calmest and the busiest "
            "third of the run is waiting (for a core, a Python worker, a service), not "
            "work: such an operator's cost is read from the rate it served a queue at, "
            "or from a line through its busy time, never from busy time per record "
            '(docs/flink.md, "Busy time is not work"). A Python operator costs its '
            "worker's CPU a record; read over a first part that took fewer records a "
            "second than the run, that cost also holds the worker's time a second that no "
            "record causes, and is marked so.",
            className="text-muted",
        ),
        DataTable(
            columns=[{"name": name, "id": key} for name, key in views.THREAD_COLUMNS],
            data=cast(Any, rows),  # Dash's stub has no None in a cell; the table shows blank
            style_cell={"fontSize": 13, "whiteSpace": "normal", "height": "auto"},
            style_cell_conditional=[
                {"if": {"column_id": key}, "maxWidth": "22em"}
                for key in ("operator", "predicted_reading", "python_worker")
            ],
            style_header={"whiteSpace": "normal", "height": "auto", "fontWeight": "bold"},
            style_table={"overflowX": "auto"},
        ),
    ]


def _objectives(run: RunData) -> dict[str, float]:
    """The run's stored latency objectives."""
    with context.current().database.cursor() as cur:
        return scenarios.objectives(cur, run.info.run_id)


@callbacks.callback(
    Output(ids.RP_TABLE, "data"),
    Output(ids.RP_FIGURE, "figure"),
    Output(ids.RP_VIOLATIONS, "children"),
    Output(ids.RP_THREADS, "children"),
    Output(ids.RP_OBJ_QUERY, "options"),
    Output(ids.RP_MESSAGE, "children"),
    Output(ids.RP_MESSAGE, "is_open"),
    Input(shell_ids.RUN, "value"),
    Input(ids.RP_OBJ_QUERY, "value"),
    Input(ids.RP_OBJ_SAVED, "data"),
    Input(shell_ids.ESTIMATOR, "value"),
    Input(shell_ids.TIME_RANGE, "data"),
    Input(shell_ids.CLOCK, "value"),
    Input(shell_ids.ZONE, "data"),
)
@answers(
    lambda message: (
        no_update,
        message_figure(views.COMPLIANCE_TITLE, message),
        "",
        [],
        [],
        message,
        True,
    )
)
def update(
    run_id: str | None,
    query: str | None,
    _: Any,
    estimator: str | None,
    time_range: dict[str, Any] | None,
    clock_choice: str | None,
    zone: str | None,
) -> tuple:
    """The report, and the compliance figure over the shared time range on the shared
    clock (which the violations' times use too)."""
    run = chosen_run(run_id)
    goals = _objectives(run)
    clock = Clock.of(run.info.origin, clock_choice, zone)
    report, fig, violating = views.report_view(
        run,
        goals,
        query,
        estimator=shown_estimator(run, estimator).name,
        shown=TimeRange.from_store(time_range),
        clock=clock,
    )
    shown = query if query in run.latency else run.topology.queries[0]
    text = violations.violations_summary(shown, goals.get(shown), violating, clock)
    return (
        views.report_rows(report),
        fig,
        text,
        threads_section(report),
        list(run.topology.queries),
        "",
        False,
    )


@callbacks.callback(
    Output(ids.RP_OBJ_SAVED, "data"),
    Output(ids.RP_MESSAGE, "children", allow_duplicate=True),
    Output(ids.RP_MESSAGE, "is_open", allow_duplicate=True),
    Input(ids.RP_OBJ_SAVE, "n_clicks"),
    State(shell_ids.RUN, "value"),
    State(ids.RP_OBJ_QUERY, "value"),
    State(ids.RP_OBJ_VALUE, "value"),
    prevent_initial_call=True,
)
@answers(lambda message: (no_update, message, True))
def save_objective(clicks: Any, run_id: str | None, query: str | None, value: Any) -> tuple:
    run = chosen_run(run_id)
    if not query:
        raise ScenarioError("objective: select a query")
    if query not in run.topology.queries:
        raise ScenarioError(f"objective: unknown query '{query}'")
    seconds = parse_positive(value, f"objective of '{query}'", upper=MAX_OBJECTIVE)
    with context.current().database.cursor() as cur:
        scenarios.set_objective(cur, run.info.run_id, query, seconds)
    return clicks, "", False


@callbacks.callback(
    Output(ids.RP_DOWNLOAD, "data"),
    Input(ids.RP_CSV, "n_clicks"),
    State(shell_ids.RUN, "value"),
    State(shell_ids.ESTIMATOR, "value"),
    prevent_initial_call=True,
)
@answers(lambda _: no_update)
def download(_: Any, run_id: str | None, estimator: str | None) -> Any:
    run = chosen_run(run_id)
    chosen = shown_estimator(run, estimator).name
    report, _fig, _v = views.report_view(run, _objectives(run), None, estimator=chosen)
    return dict(content=report_csv(report), filename=f"{run_id}-latency-report.csv")


callbacks.clientside_callback(
    "function(n) { if (n) { window.print(); } return ''; }",
    Output(ids.RP_PRINT, "title"),
    Input(ids.RP_PRINT, "n_clicks"),
    prevent_initial_call=True,
)


PAGE = Page(
    "dashboard.reports",
    path="/reports",
    name="Reports",
    order=3,
    layout=layout,
    callbacks=[callbacks],
)
