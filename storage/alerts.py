"""Stored alerts: objective breaches (measured, predicted) and model drift.

Recording is idempotent: an alert that overlaps (or comes within ``gap``
subintervals of) a stored alert of the same run, kind and query extends that one
instead of adding a row, so evaluating a run again after more data arrived, or
evaluating it twice, never duplicates an alert. ``delivered`` tells whether the
alert, as it stands, was POSTed to the webhook; undelivered ones are retried on the
next pass. Widening an alert (its range, peak or objective changed) marks it
undelivered again, so the webhook gets the updated alert once per change; an
evaluation that changes nothing leaves it alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import duckdb

from estimator.alerts import Alert
from storage.db import storage_errors

_COLUMNS = (
    "alert_id, run_id, query, kind, start_interval, end_interval, value, objective, detail,"
    " created_at, updated_at, delivered"
)


@dataclass(frozen=True)
class StoredAlert:
    """One row of ``alerts``: subintervals ``start`` to ``end`` inclusive; ``query`` None
    for the whole system."""

    alert_id: int
    run_id: str
    query: str | None
    kind: str
    start: int
    end: int
    value: float
    objective: float | None
    detail: str
    created_at: datetime
    updated_at: datetime
    delivered: bool


def _row(row: tuple[Any, ...]) -> StoredAlert:
    alert_id, run_id, query, kind, start, end, value, objective, detail, created, updated, sent = (
        row
    )
    return StoredAlert(
        alert_id=int(alert_id),
        run_id=str(run_id),
        query=None if query is None else str(query),
        kind=str(kind),
        start=int(start),
        end=int(end),
        value=float(value),
        objective=None if objective is None else float(objective),
        detail=str(detail),
        created_at=created,
        updated_at=updated,
        delivered=bool(sent),
    )


def record_alerts(
    con: duckdb.DuckDBPyConnection, run_id: str, alerts: Iterable[Alert], gap: int = 0
) -> list[StoredAlert]:
    """Store the alerts of a run evaluation; return the ones that are new.

    An alert within ``gap`` subintervals of a stored one of the same kind and query
    widens that one (its range, its peak value, the objective now in force) instead,
    and marks it undelivered if that changed anything (the webhook gets it again).
    Call inside :func:`storage.db.transaction` to make a pass atomic."""
    new_ids: list[int] = []
    with storage_errors(f"recording alerts of run '{run_id}'"):
        for alert in alerts:
            found = con.execute(
                "SELECT alert_id, start_interval, end_interval, value, objective FROM alerts"
                " WHERE run_id = ? AND kind = ? AND query IS NOT DISTINCT FROM ?"
                " AND start_interval <= ? AND end_interval >= ?"
                " ORDER BY start_interval LIMIT 1",
                [run_id, alert.kind, alert.query, alert.end + gap + 1, alert.start - gap - 1],
            ).fetchall()
            if not found:
                inserted = con.execute(
                    "INSERT INTO alerts (run_id, query, kind, start_interval, end_interval,"
                    " value, objective, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                    " RETURNING alert_id",
                    [
                        run_id,
                        alert.query,
                        alert.kind,
                        alert.start,
                        alert.end,
                        alert.value,
                        alert.objective,
                        alert.detail,
                    ],
                ).fetchall()
                new_ids.append(int(inserted[0][0]))
                continue
            alert_id, start, end, value, objective = found[0]
            widened = (
                min(int(start), alert.start),
                max(int(end), alert.end),
                max(float(value), alert.value),
                alert.objective,
            )
            if widened != (int(start), int(end), float(value), objective):
                con.execute(
                    "UPDATE alerts SET start_interval = ?, end_interval = ?, value = ?,"
                    " objective = ?, updated_at = current_timestamp, delivered = false"
                    " WHERE alert_id = ?",
                    [*widened, alert_id],
                )
    return _by_ids(con, new_ids)


def _by_ids(con: duckdb.DuckDBPyConnection, alert_ids: Sequence[int]) -> list[StoredAlert]:
    if not alert_ids:
        return []
    with storage_errors("reading alerts"):
        rows = con.execute(
            f"SELECT {_COLUMNS} FROM alerts WHERE list_contains(?, alert_id) ORDER BY alert_id",
            [list(alert_ids)],
        ).fetchall()
    return [_row(r) for r in rows]


def list_alerts(
    con: duckdb.DuckDBPyConnection,
    run_id: str | None = None,
    *,
    undelivered: bool = False,
    limit: int | None = None,
) -> list[StoredAlert]:
    """Alerts, oldest first: of one run (default all runs), only the undelivered ones
    with ``undelivered``, at most ``limit`` of them."""
    sql = f"SELECT {_COLUMNS} FROM alerts WHERE true"
    params: list[Any] = []
    if run_id is not None:
        sql += " AND run_id = ?"
        params.append(run_id)
    if undelivered:
        sql += " AND NOT delivered"
    sql += " ORDER BY alert_id"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(int(limit))
    with storage_errors("reading alerts"):
        rows = con.execute(sql, params).fetchall()
    return [_row(r) for r in rows]


def mark_delivered(con: duckdb.DuckDBPyConnection, alert_ids: Sequence[int]) -> None:
    """Remember that these alerts reached the webhook."""
    if not alert_ids:
        return
    with storage_errors("marking alerts delivered"):
        con.execute(
            "UPDATE alerts SET delivered = true, delivered_at = current_timestamp"
            " WHERE list_contains(?, alert_id)",
            [list(alert_ids)],
        )
