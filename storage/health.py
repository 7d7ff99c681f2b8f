"""Reads behind the Data health page: ingest batches and quarantined rows, newest first
and bounded (a long-lived store holds many). Files waiting for a retry: storage.pending."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import duckdb
import pandas as pd

from storage.db import storage_errors


@dataclass(frozen=True)
class IngestBatch:
    """One ingestion pass (times are the store's local TIMESTAMPs, as written)."""

    batch_id: int
    files: int
    rows_read: int
    rows_kept: int
    rows_quarantined: int
    started_at: datetime
    finished_at: datetime

    @property
    def seconds(self) -> float:
        return (self.finished_at - self.started_at).total_seconds()


def recent_batches(con: duckdb.DuckDBPyConnection, limit: int = 20) -> list[IngestBatch]:
    """The last ``limit`` batches, newest first."""
    with storage_errors("reading ingest batches"):
        rows = con.execute(
            "SELECT batch_id, files, rows_read, rows_kept, rows_quarantined, started_at,"
            " finished_at FROM ingest_batches ORDER BY batch_id DESC LIMIT ?",
            [int(limit)],
        ).fetchall()
    return [IngestBatch(*row) for row in rows]


def quarantine_reasons(
    con: duckdb.DuckDBPyConnection, run_id: str, limit: int = 50
) -> pd.DataFrame:
    """Quarantined rows of a run grouped by record set and reason: ``record_set``,
    ``reason``, ``rows``, ``files``, ``example`` (one file and row), most rows first."""
    with storage_errors(f"reading quarantine of run '{run_id}'"):
        return con.execute(
            "SELECT record_set, reason, count(*) AS rows, count(DISTINCT file) AS files,"
            " min(file || CASE WHEN row_number IS NULL THEN ' (whole file)'"
            "   ELSE ' row ' || row_number END) AS example"
            " FROM quarantine WHERE run_id = ? GROUP BY record_set, reason"
            " ORDER BY rows DESC, record_set, reason LIMIT ?",
            [run_id, int(limit)],
        ).df()


def quarantined_rows(con: duckdb.DuckDBPyConnection, run_id: str, limit: int = 50) -> pd.DataFrame:
    """The newest quarantined rows of a run: ``batch_id``, ``record_set``, ``file``,
    ``row_number``, ``reason``, ``raw``."""
    with storage_errors(f"reading quarantine of run '{run_id}'"):
        return con.execute(
            "SELECT batch_id, record_set, file, row_number, reason, raw FROM quarantine"
            " WHERE run_id = ? ORDER BY batch_id DESC, file, row_number LIMIT ?",
            [run_id, int(limit)],
        ).df()


@dataclass(frozen=True)
class RunFailure:
    """A run whose files could not be ingested, and why (``fingerprint``: its files then)."""

    run_id: str
    reason: str
    fingerprint: str
    failed_at: datetime


def run_failures(con: duckdb.DuckDBPyConnection) -> dict[str, RunFailure]:
    """Every run marked as failed by ingestion, by run id."""
    with storage_errors("reading run failures"):
        rows = con.execute(
            "SELECT run_id, reason, fingerprint, failed_at FROM run_failures ORDER BY run_id"
        ).fetchall()
    return {str(row[0]): RunFailure(*row) for row in rows}
