"""``mace ingest``: turn raw telemetry in a landing folder into statistics in DuckDB."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mace.alerting import AlertSettings
from mace.errors import UsageError
from mace.options import add_alert_options, add_master, alert_settings


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "ingest",
        help="ingest raw telemetry (Spark) into the DuckDB store",
        description="Read new Parquet/JSON Lines files of every run folder in LANDING, "
        "validate them (bad rows go to the quarantine table) and merge per-subinterval "
        "statistics into the DuckDB file. Files already ingested are skipped. After each "
        "pass, the runs that received data are checked for alerts (latency objectives "
        "breached, measured or predicted, and model drift), stored in the database and "
        "optionally POSTed to --webhook.",
    )
    parser.add_argument("landing", help="landing folder: one sub-folder per run")
    parser.add_argument("--db", required=True, help="DuckDB file (created if missing)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--once", action="store_true", help="make one pass and exit (default)")
    mode.add_argument(
        "--every", type=float, metavar="SECONDS", help="ingest every SECONDS until Ctrl-C"
    )
    add_alert_options(parser)
    add_master(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ingest.extract import landing_folder
    from storage.db import connect

    db = Path(args.db)
    settings = alert_settings(args)
    landing_folder(args.landing)
    connect(db).close()  # fail fast, before starting Spark, if another process holds the lock
    if args.every is not None:
        return _every(args, db, settings)
    return _once(args, db, settings)


def _once(args: argparse.Namespace, db: Path, settings: AlertSettings) -> int:
    from tqdm import tqdm

    from ingest.job import ingest_once
    from mace.alerting import alert_pass, pass_lines

    bar = tqdm(unit="file", desc="ingest", disable=not sys.stderr.isatty(), leave=False)
    rows = 0

    def progress(files: int, new_rows: int, what: str) -> None:
        nonlocal rows
        rows += new_rows
        bar.update(files)
        bar.set_postfix_str(f"{rows} rows, {what}")

    try:
        summary = ingest_once(args.landing, db, master=args.master, progress=progress)
    finally:
        bar.close()
    print(summary.describe())
    for line in pass_lines(alert_pass(db, summary.runs, settings)):
        print(line, file=sys.stderr if line.startswith("warning:") else sys.stdout)
    return 0


def _every(args: argparse.Namespace, db: Path, settings: AlertSettings) -> int:
    import logging

    from ingest.scheduler import run_every
    from mace.alerting import after_batch

    if args.every <= 0:
        raise UsageError(f"--every must be a positive number of seconds, got {args.every:g}")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    logging.getLogger("apscheduler").setLevel(logging.ERROR)  # a long batch skips ticks
    logging.getLogger("py4j").setLevel(logging.WARNING)
    print(f"ingesting {args.landing} into {db} every {args.every:g} s; Ctrl-C to stop")
    run_every(args.landing, db, args.every, master=args.master, on_batch=after_batch(db, settings))
    return 0
