"""``mace prune``: delete old runs from the DuckDB store (retention)."""

from __future__ import annotations

import argparse
import math
from datetime import UTC, datetime
from pathlib import Path

from mace.errors import UsageError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "prune",
        help="delete old runs' statistics from the DuckDB store",
        description="Delete every row of the chosen runs (statistics, topology, quarantine, "
        "scenarios, objectives) in one transaction. A run's age is the time since "
        "ingestion last recorded a file of it. A run being ingested (files waiting in "
        "ingest_pending, or a file ingested within --live-minutes) is never pruned. The "
        "manifest keeps the pruned runs' file names, so their landing files are not "
        "ingested again.",
    )
    parser.add_argument("--db", required=True, help="DuckDB file written by mace ingest")
    parser.add_argument(
        "--older-than", metavar="DAYS", help="prune runs last ingested more than DAYS days ago"
    )
    parser.add_argument(
        "--keep-last", metavar="N", help="keep the N most recently ingested runs, prune the rest"
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="print what would be deleted; change nothing"
    )
    parser.add_argument(
        "--live-minutes",
        default="60",
        metavar="M",
        help="a run with a file ingested within M minutes is being ingested (default 60)",
    )
    parser.set_defaults(run=run)


def _number(option: str, text: str, *, positive: bool) -> float:
    """A finite number; above 0 if ``positive``, else at least 0."""
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"{option} must be a number, got '{text}'") from None
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        bound = "above 0" if positive else "at least 0"
        raise UsageError(f"{option} must be a number {bound}, got '{text}'")
    return value


def _count(option: str, text: str) -> int:
    """A whole number of at least 1."""
    if not text.strip().isdigit() or int(text) < 1:
        raise UsageError(f"{option} must be a whole number of at least 1, got '{text}'")
    return int(text)


def run(args: argparse.Namespace) -> int:
    from storage import retention
    from storage.db import connect
    from storage.errors import StorageError

    if (args.older_than is None) == (args.keep_last is None):
        raise UsageError("give exactly one of --older-than DAYS and --keep-last N")
    older = (
        None if args.older_than is None else _number("--older-than", args.older_than, positive=True)
    )
    keep = None if args.keep_last is None else _count("--keep-last", args.keep_last)
    live_minutes = _number("--live-minutes", args.live_minutes, positive=False)
    db = Path(args.db)
    if not db.is_file():
        raise StorageError(f"{db}: no such database file")
    now = datetime.now(UTC).replace(tzinfo=None)
    size_before = db.stat().st_size
    con = connect(db)
    try:
        ages = retention.run_ages(con, now, live_minutes)
        chosen, spared = retention.choose_runs(ages, now, older_than_days=older, keep_last=keep)
        for age in spared:
            print(f"kept {age.run_id}: being ingested ({age.live})")
        if not chosen:
            print(f"nothing to prune ({len(ages)} run(s) in {db})")
            return 0
        ids = [a.run_id for a in chosen]
        verb = "would delete" if args.dry_run else "deleting"
        for age in chosen:
            print(f"{verb} {age.run_id} (last ingested {age.last_active:%Y-%m-%d %H:%M} UTC)")
        if args.dry_run:
            rows = retention.run_rows(con, ids)
        else:
            rows = retention.delete_runs(con, ids)
            retention.checkpoint(con)
    finally:
        con.close()
    listed = ", ".join(f"{t} {n}" for t, n in rows.items() if n)
    total = sum(rows.values())
    if args.dry_run:
        print(f"would delete {len(ids)} of {len(ages)} run(s), {total} row(s): {listed}")
        return 0
    after = db.stat().st_size
    print(
        f"deleted {len(ids)} of {len(ages)} run(s), {total} row(s): {listed}; "
        f"file {size_before / 1e6:.1f} MB -> {after / 1e6:.1f} MB"
    )
    return 0
