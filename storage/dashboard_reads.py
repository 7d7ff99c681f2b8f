"""Small reads the dashboard needs beyond :mod:`storage.reads`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import duckdb

from storage.db import storage_errors
from storage.reads import run_key


def data_version(con: duckdb.DuckDBPyConnection, run_id: str) -> tuple[int, int, int]:
    """A cheap fingerprint of a run's statistics: it changes whenever ingestion writes them.

    (latest batch that recorded a file of the run, latency rows of the run, operator rows
    of the run); the dashboard reloads a cached run when it changes. Ingestion writes a
    run's statistics only from files of that run, recorded in the same transaction, so a
    batch that read only other runs' files (a live run ingested every 2 s beside a
    finished one) leaves the fingerprint, and the run's cached analyses, as they are.
    """
    key = run_key(con, run_id)
    with storage_errors(f"reading data version of run '{run_id}'"):
        # fetchall, not fetchone: DuckDB 2 refuses further work while a result is unfinished.
        rows = con.execute(
            "SELECT (SELECT coalesce(max(batch_id), 0) FROM ingest_files WHERE run_id = ?),"
            " (SELECT count(*) FROM latency_stats WHERE run_key = ?),"
            " (SELECT count(*) FROM operator_stats WHERE run_key = ?)",
            [run_id, key, key],
        ).fetchall()
    return (int(rows[0][0]), int(rows[0][1]), int(rows[0][2])) if rows else (0, 0, 0)


@dataclass(frozen=True)
class IngestionProgress:
    """How far ingestion has come: finished batches, the files and rows they read, when
    the latest finished (None: none yet), and files waiting to be read again."""

    batches: int
    files: int
    rows_kept: int
    last_finished: datetime | None
    pending: int


def ingestion_progress(con: duckdb.DuckDBPyConnection) -> IngestionProgress:
    """The store's ingestion so far (``ingest_batches`` and ``ingest_pending``)."""
    with storage_errors("reading ingestion progress"):
        rows = con.execute(
            "SELECT count(*), coalesce(sum(files), 0), coalesce(sum(rows_kept), 0),"
            " max(finished_at), (SELECT count(*) FROM ingest_pending) FROM ingest_batches"
        ).fetchall()
    batches, files, kept, last, pending = rows[0]
    return IngestionProgress(int(batches), int(files), int(kept), last, int(pending))
