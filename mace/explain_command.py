"""``mace explain``: why the estimated latency of a stored run peaked (latency blame)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from estimator.pathaware import ESTIMATORS
from mace.errors import UsageError


def register(subparsers: argparse._SubParsersAction) -> None:
    explain = subparsers.add_parser(
        "explain",
        help="which resource, since when and which operators and sources made latency peak",
        description="Latency blame for one subinterval of a stored run (default: the worst "
        "one): the bottleneck resource, the first subinterval of its busy period, and each "
        "operator's and source's share of the backlog (they add up to CE/C, in seconds).",
    )
    explain.add_argument("--db", required=True, help="DuckDB file written by mace ingest")
    explain.add_argument("--run", dest="run_id", help="run id (default: the last run id)")
    explain.add_argument("--interval", type=int, help="subinterval (default: the worst one)")
    explain.add_argument(
        "--estimator",
        choices=sorted(ESTIMATORS),
        default="mace",
        help="mace (default); the path-aware explanation is not built yet",
    )
    explain.add_argument("--json", action="store_true", help="print one JSON object")
    explain.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from estimator.blame import blame
    from mace.report_command import load_run_data

    if args.estimator != "mace":
        raise UsageError(
            f"--estimator {args.estimator}: explain covers the mace estimator so far "
            "(the critical-path explanation of the others is not built yet)"
        )
    run_data, _ = load_run_data(Path(args.db), args.run_id)
    if args.interval is not None and not 0 <= args.interval < run_data.intervals:
        raise UsageError(
            f"--interval {args.interval}: run '{run_data.info.run_id}' has subintervals "
            f"0..{run_data.intervals - 1}"
        )
    result = blame(
        run_data.topology,
        run_data.operator_dlts,
        run_data.arrivals.for_topology(run_data.topology),
        [v.placement for v in run_data.versions],
        run_data.version_starts,
        args.interval,
    )
    document: dict[str, Any] = {
        "run": run_data.info.run_id,
        "interval": result.interval,
        "estimator": args.estimator,
        "resource": result.resource,
        "busy_since": result.busy_since,
        "ce_seconds": result.ce_seconds,
        "contributions": result.contributions,
        "sources": result.sources,
    }
    print(json.dumps(document) if args.json else format_blame(document))
    return 0


def format_blame(document: dict[str, Any]) -> str:
    """The explanation as text: the bottleneck, its busy period and the ranked shares."""
    ce = document["ce_seconds"]
    lines = [
        f"run {document['run']}, subinterval {document['interval']}: "
        + (
            f"{document['resource']} is {ce:.4f} s behind (CE/C), building since "
            f"subinterval {document['busy_since']}"
            if ce > 0
            else "no backlog on any resource"
        )
    ]
    for title, shares in (
        ("operators", document["contributions"]),
        ("sources", document["sources"]),
    ):
        if shares:
            lines.append(f"  {title}:")
            for name, seconds in sorted(shares.items(), key=lambda kv: -kv[1]):
                lines.append(f"    {name:<24}{seconds:10.4f} s  {seconds / ce:6.1%}")
    return "\n".join(lines)
