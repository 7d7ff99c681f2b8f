"""``mace alerts``: the stored alerts of a database (objective breaches and model drift)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from estimator.drift import DEFAULT_K
from mace.errors import UsageError


def register(subparsers: argparse._SubParsersAction) -> None:
    alerts = subparsers.add_parser(
        "alerts",
        help="list the alerts: latency objectives breached (measured, predicted) and drift",
        description="List the alerts stored by the ingestion passes (mace ingest, mace "
        "serve --landing), oldest first: a query's measured or predicted latency above its "
        "objective, or the measured latency outside the predicted band for K consecutive "
        "subintervals (drift). --evaluate checks the runs now (e.g. after setting an "
        "objective), which needs write access to the database.",
    )
    alerts.add_argument("--db", required=True, help="DuckDB file written by mace ingest")
    alerts.add_argument("--run", dest="run_id", help="only this run (default: every run)")
    alerts.add_argument(
        "--evaluate", action="store_true", help="evaluate the run(s) first and store new alerts"
    )
    alerts.add_argument(
        "--drift-k",
        type=int,
        default=DEFAULT_K,
        metavar="K",
        help=f"with --evaluate: subintervals outside the predicted band that make a drift "
        f"alert (default {DEFAULT_K})",
    )
    alerts.add_argument("--json", action="store_true", help="print a JSON list")
    alerts.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from mace.alerting import alert_json, describe, evaluate_runs
    from storage import reads
    from storage.alerts import list_alerts
    from storage.db import connect
    from storage.errors import StorageError

    db = Path(args.db)
    if not db.is_file():
        raise StorageError(f"{db}: no such database file")
    if args.drift_k < 1:
        raise UsageError(f"--drift-k: must be at least 1, got {args.drift_k}")
    con = connect(db, read_only=not args.evaluate)
    try:
        if args.run_id is not None:
            reads.get_run(con, args.run_id)  # an unknown run is an error, not "no alerts"
        if args.evaluate:
            runs = None if args.run_id is None else [args.run_id]
            result = evaluate_runs(con, runs, args.drift_k)
            for error in result.errors:
                print(f"warning: {error}", file=sys.stderr)
        stored = list_alerts(con, args.run_id)
    finally:
        con.close()
    if args.json:
        print(json.dumps([alert_json(a) for a in stored]))
    elif not stored:
        print("no alerts")
    else:
        for alert in stored:
            sent = "delivered" if alert.delivered else "not delivered"
            print(f"#{alert.alert_id} {describe(alert)} ({sent})")
    return 0
