"""``mace explain``: why the estimated latency of a stored run peaked (latency blame)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from estimator.pathaware import ESTIMATORS
from mace.errors import UsageError
from mace.options import AUTH_ENV

if TYPE_CHECKING:
    from estimator.pathblame import PathBlame


def register(subparsers: argparse._SubParsersAction) -> None:
    explain = subparsers.add_parser(
        "explain",
        help="which resource, since when and which operators and sources made latency peak",
        description="Latency blame for one subinterval of a stored run (default: the worst "
        "one): the bottleneck resource, the first subinterval of its busy period, and each "
        "operator's and source's share of the backlog (they add up to CE/C, in seconds). "
        "With --estimator path, every node on the critical path of the path-aware estimate "
        "with its share (they add up to the estimate).",
    )
    source = explain.add_mutually_exclusive_group(required=True)
    source.add_argument("--db", help="DuckDB file written by mace ingest")
    source.add_argument(
        "--url",
        help="ask a running mace serve or mace demo instead (e.g. http://127.0.0.1:8050), "
        f"which works while it holds the database; basic-auth credentials come from {AUTH_ENV}",
    )
    explain.add_argument("--run", dest="run_id", help="run id (default: the last run id)")
    explain.add_argument("--interval", type=int, help="subinterval (default: the worst one)")
    explain.add_argument(
        "--estimator",
        choices=sorted(ESTIMATORS),
        default="mace",
        help="mace (default: the bottleneck's backlog) or path (every node on the "
        "critical path); burst is not explained yet",
    )
    explain.add_argument("--json", action="store_true", help="print one JSON object")
    explain.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from mace.report_command import load_run_data

    if args.url:
        from mace.remote import EXPLAIN_PATH, fetch_json

        query = {"estimator": args.estimator}
        query.update({"run": args.run_id} if args.run_id is not None else {})
        query.update({"interval": str(args.interval)} if args.interval is not None else {})
        document = dict(fetch_json(args.url, EXPLAIN_PATH, query, "an explanation"))
    else:
        run_data, _ = load_run_data(Path(args.db), args.run_id)
        document = explain_document(run_data, args.interval, args.estimator)
    if args.json:
        print(json.dumps(document))
    else:
        print(format_path(document) if "path" in document else format_blame(document))
    return 0


def explain_document(run_data: Any, interval: int | None, estimator: str) -> dict[str, Any]:
    """The explanation of subinterval ``interval`` (None: the worst one) of a stored run
    (``dashboard.core.data.RunData``) by ``estimator``, as ``mace explain --json`` prints it."""
    from estimator.blame import blame
    from estimator.pathblame import path_blame

    if estimator not in EXPLAINED:
        raise UsageError(
            f"--estimator {estimator}: explain covers the "
            f"{' and '.join(EXPLAINED)} estimators so far"
        )
    if interval is not None and not 0 <= interval < run_data.intervals:
        raise UsageError(
            f"--interval {interval}: run '{run_data.info.run_id}' has subintervals "
            f"0..{run_data.intervals - 1}"
        )
    inputs = (
        run_data.topology,
        run_data.operator_dlts,
        run_data.arrivals.for_topology(run_data.topology),
        [v.placement for v in run_data.versions],
        run_data.version_starts,
        interval,
    )
    if estimator == "path":
        return path_document(run_data.info.run_id, path_blame(*inputs))
    result = blame(*inputs)
    return {
        "run": run_data.info.run_id,
        "interval": result.interval,
        "estimator": estimator,
        "resource": result.resource,
        "busy_since": result.busy_since,
        "ce_seconds": result.ce_seconds,
        "contributions": result.contributions,
        "sources": result.sources,
    }


EXPLAINED = ("mace", "path")
"""The estimators ``mace explain`` can explain."""


def path_document(run_id: str, result: PathBlame) -> dict[str, Any]:
    """The JSON object of a path-aware explanation: the keys of the Mace one describing
    the dominant node of the critical path, its estimate, and ``path`` (every node)."""
    top = result.dominant
    return {
        "run": run_id,
        "interval": result.interval,
        "estimator": "path",
        "resource": top.resource,
        "busy_since": top.busy_since,
        "ce_seconds": top.ce_seconds,
        "contributions": top.contributions,
        "sources": top.sources,
        "estimate_seconds": result.estimate,
        "path": [
            {
                "resource": s.resource,
                "busy_since": s.busy_since,
                "busy_until": s.busy_until,
                "delay_seconds": s.delay_seconds,
                "ce_seconds": s.ce_seconds,
                "contributions": s.contributions,
                "sources": s.sources,
            }
            for s in result.stages
        ],
    }


def _shares(lines: list[str], title: str, shares: dict[str, float], total: float) -> None:
    if shares:
        lines.append(f"  {title}:")
        for name, seconds in sorted(shares.items(), key=lambda kv: -kv[1]):
            part = f"  {seconds / total:6.1%}" if total else ""
            lines.append(f"    {name:<24}{seconds:10.4f} s{part}")


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
    _shares(lines, "operators", document["contributions"], ce)
    _shares(lines, "sources", document["sources"], ce)
    return "\n".join(lines)


def format_path(document: dict[str, Any]) -> str:
    """The path-aware explanation as text: each node of the critical path in order."""
    estimate = document["estimate_seconds"]
    nodes = " -> ".join(s["resource"] for s in document["path"])
    lines = [
        f"run {document['run']}, subinterval {document['interval']}: path-aware estimate "
        f"{estimate:.4f} s along {nodes}"
    ]
    for stage in document["path"]:
        ce = stage["ce_seconds"]
        when = (
            "not waiting on its own backlog"
            if stage["busy_since"] is None
            else f"busy on subintervals {stage['busy_since']}-{stage['busy_until']}"
        )
        delay = f", +{stage['delay_seconds']:.4f} s hop delay" if stage["delay_seconds"] else ""
        lines.append(f"{stage['resource']}: {ce:+.4f} s ({when}{delay})")
        _shares(lines, "operators", stage["contributions"], ce)
        _shares(lines, "sources", stage["sources"], ce)
    return "\n".join(lines)
