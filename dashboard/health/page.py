"""Data health: how fresh the selected run's data is, the last ingest batches, the runs
ingestion marked as failed, files waiting for a retry and the quarantined rows with their
reasons."""

from __future__ import annotations

import time
from typing import Any

import dash_bootstrap_components as dbc
import pandas as pd
from dash import Input, Output, dcc, html
from dash.dash_table.DataTable import DataTable

from dashboard import context
from dashboard.health import ids, views
from dashboard.health.views import describe_age, freshness, utc_text
from dashboard.shell import ids as shell_ids
from dashboard.shell.callbacks import Callbacks, Page
from dashboard.shell.figures import message_figure
from storage import health, pending, reads
from storage.errors import StorageError

callbacks = Callbacks()

TABLE_STYLE: dict[str, Any] = {
    "style_cell": {"fontSize": 13, "textAlign": "left", "maxWidth": "520px"},
    "style_header": {"fontWeight": "bold"},
    "style_table": {"overflowX": "auto"},
    "style_data": {"whiteSpace": "normal", "height": "auto"},
    "page_size": 10,
}


def layout(**_: Any) -> html.Div:
    refresh = int(context.current().refresh_seconds * 1000)
    return html.Div(
        [
            dcc.Interval(id=ids.HL_REFRESH, interval=refresh),
            dbc.Alert(id=ids.HL_MESSAGE, is_open=False, color="warning"),
            html.H4("Data health"),
            html.P(
                "Is the data behind the other pages current and complete? Newest data: how "
                "far the selected live run's newest subinterval is behind now. Rows that "
                "fail validation are kept aside (quarantined) with the reason; files that "
                "cannot be read yet (still being written) wait for a retry.",
                className="text-muted",
            ),
            html.Div(id=ids.HL_KPIS),
            dcc.Graph(
                id=ids.HL_BATCHES, figure=message_figure(views.BATCHES_TITLE, "loading…", 320)
            ),
            html.H5("Runs that could not be ingested (all runs)", className="mt-3"),
            DataTable(id=ids.HL_FAILED, **TABLE_STYLE),
            html.H5("Quarantined rows of this run, by reason", className="mt-3"),
            DataTable(id=ids.HL_REASONS, **TABLE_STYLE),
            html.H5("Files waiting for a retry (all runs)", className="mt-3"),
            DataTable(id=ids.HL_PENDING, **TABLE_STYLE),
            html.H5("Newest quarantined rows of this run", className="mt-3"),
            DataTable(id=ids.HL_ROWS, **TABLE_STYLE),
        ]
    )


def _card(title: str, value: str, note: str) -> dbc.Col:
    return dbc.Col(
        dbc.Card(
            dbc.CardBody(
                [
                    html.Div(title, className="text-muted small"),
                    html.H5(value, className="mb-0"),
                    html.Div(note, className="small text-muted"),
                ]
            )
        ),
        md=3,
    )


def _table(frame: Any) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    columns = [{"name": str(c).replace("_", " "), "id": str(c)} for c in frame.columns]
    return frame.astype(object).where(frame.notna(), None).to_dict("records"), columns


@callbacks.callback(
    Output(ids.HL_KPIS, "children"),
    Output(ids.HL_BATCHES, "figure"),
    Output(ids.HL_FAILED, "data"),
    Output(ids.HL_FAILED, "columns"),
    Output(ids.HL_REASONS, "data"),
    Output(ids.HL_REASONS, "columns"),
    Output(ids.HL_PENDING, "data"),
    Output(ids.HL_PENDING, "columns"),
    Output(ids.HL_ROWS, "data"),
    Output(ids.HL_ROWS, "columns"),
    Output(ids.HL_MESSAGE, "children"),
    Output(ids.HL_MESSAGE, "is_open"),
    Input(shell_ids.RUN, "value"),
    Input(ids.HL_REFRESH, "n_intervals"),
)
def update(run_id: str | None, _: Any) -> tuple:
    database = context.current().database
    try:
        with database.cursor() as cur:
            batches = health.recent_batches(cur, limit=50)
            failures = list(health.run_failures(cur).values())
            waiting = sorted(pending.pending_files(cur).values(), key=lambda f: f.first_seen)
            run = reads.get_run(cur, run_id) if run_id else None
            reasons = health.quarantine_reasons(cur, run_id) if run_id else None
            rows = health.quarantined_rows(cur, run_id) if run_id else None
    except StorageError as exc:
        return (
            [],
            message_figure(views.BATCHES_TITLE, str(exc), 320),
            [],
            [],
            [],
            [],
            [],
            [],
            [],
            [],
            str(exc),
            True,
        )
    now = time.time()
    fresh = freshness(run, batches, now) if run is not None else None
    quarantined = 0 if reasons is None else int(reasons["rows"].sum())
    if fresh is not None and fresh.lag_seconds is not None:
        newest = (describe_age(fresh.lag_seconds) + " behind", utc_text(fresh.newest_data_end))
    elif run is not None and run.last_interval is not None:
        newest = ("batch run", f"intervals {run.first_interval}..{run.last_interval}")
    else:
        newest = ("no data yet", "select or ingest a run")
    last = batches[0] if batches else None
    kpis = dbc.Row(
        [
            _card("Newest data", *newest),
            _card(
                "Last ingest batch",
                describe_age(fresh.last_batch_age_seconds if fresh else None) + " ago"
                if last
                else "none yet",
                f"batch {last.batch_id}: {last.files} file(s) in {last.seconds:.1f} s"
                if last
                else "ingestion has not run",
            ),
            _card("Files waiting for a retry", str(len(waiting)), "unreadable so far"),
            _card("Quarantined rows", f"{quarantined:,}", "this run, all batches"),
        ],
        className="g-2 mb-2",
    )
    figure = (
        views.no_batches_figure()
        if not batches
        else views.ingest_batches_figure(
            [b.finished_at for b in reversed(batches)],
            [b.rows_kept for b in reversed(batches)],
            [b.rows_quarantined for b in reversed(batches)],
            [b.seconds for b in reversed(batches)],
        )
    )
    failed_data, failed_columns = _table(
        pd.DataFrame(
            {
                "run": [f.run_id for f in failures],
                "reason": [f.reason for f in failures],
                "failed_at": [str(f.failed_at) for f in failures],
            }
        )
    )
    reason_data, reason_columns = _table(reasons) if reasons is not None else ([], [])
    pending_data, pending_columns = _table(
        pd.DataFrame(
            {
                "path": [f.path for f in waiting],
                "reason": [f.reason for f in waiting],
                "waiting": [describe_age(now - f.first_seen) for f in waiting],
                "size_bytes": [f.size_bytes for f in waiting],
            }
        )
    )
    row_data, row_columns = _table(rows) if rows is not None else ([], [])
    return (
        kpis,
        figure,
        failed_data,
        failed_columns,
        reason_data,
        reason_columns,
        pending_data,
        pending_columns,
        row_data,
        row_columns,
        "",
        False,
    )


PAGE = Page(
    "dashboard.health",
    path="/health",
    name="Data health",
    order=4,
    layout=layout,
    callbacks=[callbacks],
)
