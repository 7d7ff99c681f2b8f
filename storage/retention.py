"""Retention: choosing old runs and deleting everything stored about them (``mace prune``).

A run's age is the time since ingestion last recorded a file of it
(``runs.last_ingested_at``), or since it was first stored when it has no ingested
file (``runs.created_at``). A run *being ingested* is never chosen: one with a file
waiting in ``ingest_pending`` (seen but not readable yet, i.e. still being written),
or one whose last activity is less than ``live_minutes`` old (a run that is still
receiving data gets a file ingested at every pass of the scheduler).

Deleting removes the run's rows from every per-run table (:data:`PER_RUN_TABLES`)
in one transaction. The manifest (``ingest_files``, ``landing_compactions``), the
batches and ``run_topology_stamps`` stay, so the pruned run's landing files are not
ingested again (new files in its folder would start it again).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import duckdb

from storage.db import storage_errors, transaction

STATISTICS_TABLES = (
    "source_arrivals",
    "operator_stats",
    "node_busy",
    "node_profile",
    "source_profile",
    "latency_stats",
)
"""Filtered by ``run_key`` (zonemaps skip the other runs' row groups)."""
PER_RUN_TABLES = (
    *STATISTICS_TABLES,
    "quarantine",
    "sample_state",
    "scenarios",
    "latency_objectives",
    "nodes",
    "sources",
    "operators",
    "edges",
    "links",
    "placements",
    "node_capacities",
    "version_stops",
    "run_keys",
    "runs",
)
"""Every table holding rows of one run, in deletion order (``runs`` last)."""
DEFAULT_LIVE_MINUTES = 60.0


@dataclass(frozen=True)
class RunAge:
    """A run, when it was last active, and why it counts as being ingested (or None)."""

    run_id: str
    last_active: datetime
    live: str | None


def run_ages(
    con: duckdb.DuckDBPyConnection, now: datetime, live_minutes: float = DEFAULT_LIVE_MINUTES
) -> list[RunAge]:
    """Every run, newest activity first (ties by run_id)."""
    with storage_errors("reading run ages"):
        rows = con.execute(
            "SELECT r.run_id, coalesce(r.last_ingested_at, r.created_at) AS active,"
            " (SELECT count(*) FROM ingest_pending p"
            "  WHERE starts_with(p.path, r.run_id || '/')) AS pending"
            " FROM runs r ORDER BY active DESC, r.run_id"
        ).fetchall()
    window = timedelta(minutes=live_minutes)
    ages = []
    for run_id, active, pending in rows:
        live = None
        if pending:
            live = f"{pending} file(s) waiting to be read (being written)"
        elif now - active < window:
            live = f"ingested {(now - active).total_seconds() / 60:.0f} min ago"
        ages.append(RunAge(str(run_id), active, live))
    return ages


def choose_runs(
    ages: Sequence[RunAge],
    now: datetime,
    *,
    older_than_days: float | None = None,
    keep_last: int | None = None,
) -> tuple[list[RunAge], list[RunAge]]:
    """(runs to prune, live runs spared that the rule would have chosen)."""
    if keep_last is not None:
        chosen = list(ages[keep_last:])
    else:
        assert older_than_days is not None
        cutoff = now - timedelta(days=older_than_days)
        chosen = [a for a in ages if a.last_active < cutoff]
    return [a for a in chosen if a.live is None], [a for a in chosen if a.live is not None]


def _where(table: str) -> str:
    if table in STATISTICS_TABLES:
        return "run_key IN (SELECT run_key FROM run_keys WHERE list_contains(?, run_id))"
    return "list_contains(?, run_id)"


def run_rows(con: duckdb.DuckDBPyConnection, run_ids: Sequence[str]) -> dict[str, int]:
    """Rows each per-run table holds for ``run_ids``."""
    ids = list(run_ids)
    counts = {}
    with storage_errors("counting the runs' rows"):
        for table in PER_RUN_TABLES:
            rows = con.execute(f"SELECT count(*) FROM {table} WHERE {_where(table)}", [ids])
            counts[table] = int(rows.fetchall()[0][0])
    return counts


def delete_runs(con: duckdb.DuckDBPyConnection, run_ids: Sequence[str]) -> dict[str, int]:
    """Delete the runs' rows from every per-run table in one transaction; rows deleted."""
    ids = list(run_ids)
    deleted = {}
    with transaction(con, "pruning runs"), storage_errors("pruning runs"):
        for table in PER_RUN_TABLES:
            rows = con.execute(f"DELETE FROM {table} WHERE {_where(table)}", [ids])
            deleted[table] = int(rows.fetchall()[0][0])
    return deleted


def checkpoint(con: duckdb.DuckDBPyConnection) -> None:
    """Write the deletions to the file, so that freed blocks can be reused (or the file
    truncated when they are at its end)."""
    with storage_errors("checkpointing the database"):
        con.execute("CHECKPOINT")
