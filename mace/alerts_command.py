"""``mace alerts``: the stored alerts of a database (objective breaches and model drift)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from estimator.drift import DEFAULT_K
from mace.errors import UsageError
from mace.options import AUTH_ENV


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
    source = alerts.add_mutually_exclusive_group(required=True)
    source.add_argument("--db", help="DuckDB file written by mace ingest")
    source.add_argument(
        "--url",
        help="ask a running mace serve or mace demo instead (e.g. http://127.0.0.1:8050), "
        f"which works while it holds the database; basic-auth credentials come from {AUTH_ENV}",
    )
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
    from mace.alerting import alert_json, describe_json, evaluate_runs
    from storage import reads
    from storage.alerts import list_alerts
    from storage.db import connect
    from storage.errors import StorageError

    if args.drift_k < 1:
        raise UsageError(f"--drift-k: must be at least 1, got {args.drift_k}")
    if args.url:
        if args.evaluate:
            raise UsageError("--evaluate needs --db: the server evaluates after each ingestion")
        from mace.remote import ALERTS_PATH, fetch_json

        query = {} if args.run_id is None else {"run": args.run_id}
        documents = list(fetch_json(args.url, ALERTS_PATH, query, "the alerts"))
    else:
        db = Path(args.db)
        if not db.is_file():
            raise StorageError(f"{db}: no such database file")
        con = connect(db, read_only=not args.evaluate)
        try:
            if args.run_id is not None:
                reads.get_run(con, args.run_id)  # an unknown run is an error, not "no alerts"
            if args.evaluate:
                runs = None if args.run_id is None else [args.run_id]
                result = evaluate_runs(con, runs, args.drift_k)
                for error in result.errors:
                    print(f"warning: {error}", file=sys.stderr)
            documents = [alert_json(a) for a in list_alerts(con, args.run_id)]
        finally:
            con.close()
    if args.json:
        print(json.dumps(documents))
    elif not documents:
        print("no alerts")
    else:
        for document in documents:
            sent = "delivered" if document["delivered"] else "not delivered"
            print(f"#{document['alert_id']} {describe_json(document)} ({sent})")
    return 0
