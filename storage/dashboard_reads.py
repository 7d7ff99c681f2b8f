"""Small reads the dashboard needs beyond :mod:`storage.reads`."""

from __future__ import annotations

import duckdb

from storage.db import storage_errors
from storage.reads import run_key


def data_version(con: duckdb.DuckDBPyConnection, run_id: str) -> tuple[int, int, int]:
    """A cheap fingerprint of a run's statistics: it changes whenever ingestion adds rows.

    (latest batch id, latency rows of the run, operator rows of the run); the
    dashboard reloads a cached run when it changes.
    """
    key = run_key(con, run_id)
    with storage_errors(f"reading data version of run '{run_id}'"):
        # fetchall, not fetchone: DuckDB 2 refuses further work while a result is unfinished.
        rows = con.execute(
            "SELECT (SELECT coalesce(max(batch_id), 0) FROM ingest_batches),"
            " (SELECT count(*) FROM latency_stats WHERE run_key = ?),"
            " (SELECT count(*) FROM operator_stats WHERE run_key = ?)",
            [key, key],
        ).fetchall()
    return (int(rows[0][0]), int(rows[0][1]), int(rows[0][2])) if rows else (0, 0, 0)
