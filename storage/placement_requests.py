"""Placement requests: the dashboard asks a live engine to move operators (What-if's
"Apply to the running system").

The What-if page's "Apply to the running system" stores the scenario's whole
placement (operator -> node, JSON) as a *pending* request of a run. The live
engine of ``mace demo`` polls the pending requests of its run, applies each one
at its next step (writing ``topology-<epoch>.yaml``, which ingestion turns into a
new placement version) and settles it: *applied* with the time the new placement
is valid from, or *refused* with the reason. The table is the control path's
record as well: the page shows the latest request of the run and its outcome.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

import duckdb

from storage.db import storage_errors
from storage.errors import StorageError

PENDING, APPLIED, REFUSED = "pending", "applied", "refused"
_COLUMNS = "request_id, run_id, placement, requested_at, status, valid_from, detail"


@dataclass(frozen=True)
class PlacementRequest:
    request_id: int
    run_id: str
    placement: dict[str, str]
    requested_at: datetime
    status: str
    valid_from: float | None
    detail: str | None


def _request(row: tuple) -> PlacementRequest:
    request_id, run_id, placement, requested_at, status, valid_from, detail = row
    return PlacementRequest(
        int(request_id),
        str(run_id),
        {str(k): str(v) for k, v in json.loads(placement).items()},
        requested_at,
        str(status),
        None if valid_from is None else float(valid_from),
        detail,
    )


def request_placement(
    con: duckdb.DuckDBPyConnection, run_id: str, placement: Mapping[str, str]
) -> int:
    """Store a pending request to run ``run_id`` with ``placement``; returns its id."""
    if not placement:
        raise StorageError("placement request: the placement is empty")
    document = json.dumps({str(k): str(v) for k, v in placement.items()}, sort_keys=True)
    with storage_errors(f"storing a placement request for run '{run_id}'"):
        rows = con.execute(
            "INSERT INTO placement_requests (run_id, placement) VALUES (?, ?) RETURNING request_id",
            [run_id, document],
        ).fetchall()
    return int(rows[0][0])


def pending_requests(con: duckdb.DuckDBPyConnection, run_id: str) -> list[PlacementRequest]:
    """The run's pending requests, oldest first."""
    with storage_errors(f"reading placement requests of run '{run_id}'"):
        rows = con.execute(
            f"SELECT {_COLUMNS} FROM placement_requests WHERE run_id = ? AND status = ?"
            " ORDER BY request_id",
            [run_id, PENDING],
        ).fetchall()
    return [_request(r) for r in rows]


def latest_request(con: duckdb.DuckDBPyConnection, run_id: str) -> PlacementRequest | None:
    """The run's newest request (any status), or None."""
    with storage_errors(f"reading placement requests of run '{run_id}'"):
        rows = con.execute(
            f"SELECT {_COLUMNS} FROM placement_requests WHERE run_id = ?"
            " ORDER BY request_id DESC LIMIT 1",
            [run_id],
        ).fetchall()
    return _request(rows[0]) if rows else None


def settle_request(
    con: duckdb.DuckDBPyConnection,
    request_id: int,
    valid_from: float | None,
    detail: str | None = None,
) -> None:
    """Mark a pending request applied (from ``valid_from``) or refused (``detail`` says why)."""
    status = APPLIED if valid_from is not None else REFUSED
    with storage_errors(f"settling placement request {request_id}"):
        con.execute(
            "UPDATE placement_requests SET status = ?, valid_from = ?, detail = ?"
            " WHERE request_id = ? AND status = ?",
            [status, valid_from, detail, request_id, PENDING],
        )
