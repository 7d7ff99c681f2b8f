"""``mace report``: per-query latency of a stored run, estimated, predicted and measured."""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

from estimator.auto import AUTO, DEFAULT
from estimator.delays import MIN_CALM
from estimator.pathaware import ESTIMATORS
from estimator.runs import DEFAULT_TRAINING_SHARE
from mace.errors import UsageError
from mace.options import AUTH_ENV


def register(subparsers: argparse._SubParsersAction) -> None:
    report = subparsers.add_parser(
        "report",
        help="per-query latency report of a run (estimated, predicted, measured, objective)",
        description="Worst case, p99 and mean latency across time per query and for the "
        "whole system: estimated (Mace from the measured DLTS), predicted (model fitted on "
        "a training window) and measured, with the stored latency objectives.",
    )
    source = report.add_mutually_exclusive_group(required=True)
    source.add_argument("--db", help="DuckDB file written by mace ingest")
    source.add_argument(
        "--url",
        help="ask a running mace serve instead (e.g. http://127.0.0.1:8050), which works "
        f"while it holds the database; basic-auth credentials come from {AUTH_ENV}",
    )
    report.add_argument("--run", dest="run_id", help="run id (default: the last run id)")
    report.add_argument(
        "--training-share",
        type=float,
        default=DEFAULT_TRAINING_SHARE,
        help="share of the run used to fit the predictive model (default 0.1)",
    )
    report.add_argument(
        "--estimator",
        choices=[AUTO, *sorted(ESTIMATORS)],
        default=DEFAULT,
        help="a registered estimator: "
        + ", ".join(f"{name} ({e.label})" for name, e in ESTIMATORS.items())
        + "; default auto, the most accurate one whose cost fits the interaction budget, "
        "named with the reason in the report (see docs/accuracy.md)",
    )
    fmt = report.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print one JSON object")
    fmt.add_argument("--csv", action="store_true", help="print a CSV table")
    report.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from dashboard.core.estimators import estimator_used
    from dashboard.core.report import report_csv

    if not 0 < args.training_share <= 1:
        raise UsageError(f"--training-share must be in (0, 1], got {args.training_share}")
    if args.url:
        report = fetch_report(args.url, args.run_id, args.training_share, args.estimator)
        # a server that does not name its estimator computed the one asked for, or its
        # default (Mace) for auto
        report.setdefault(
            "estimator_used",
            estimator_used("mace", "the server's default")
            if args.estimator == AUTO
            else estimator_used(args.estimator, "chosen with --estimator"),
        )
    else:
        report = load_report(Path(args.db), args.run_id, args.training_share, args.estimator)
    if args.json:
        print(json.dumps(report))
    elif args.csv:
        sys.stdout.write(report_csv(report))
    else:
        print(format_report(report))
    return 0


def load_report(
    db: Path, run_id: str | None, training_share: float, estimator: str
) -> dict[str, Any]:
    """The report of ``run_id`` (default: the last run) read from the DuckDB file ``db``,
    over its complete subintervals (:mod:`dashboard.core.complete`)."""
    from dashboard.core.complete import complete_report

    run_data, goals = load_run_data(db, run_id)
    report = complete_report(run_data, goals, training_share, estimator)
    report.update(bundle_cycles(run_data))
    return report


def bundle_cycles(run: Any) -> dict[str, Any]:
    """Where a run has threads of Python operators (nodes with a bundle time): per thread
    its bundle time and size and its calm cycle (inside the calibrated engine delay), and
    per query crossing them the largest rise above the calm level that the estimate adds
    (:mod:`estimator.bundles`); empty without such threads."""
    from dashboard.core.report import estimated_analysis
    from estimator.bundles import calm_cycle

    threads = [n for n in run.topology.nodes if n.bundles]
    if not threads:
        return {}
    rises = estimated_analysis(run).bundle_rise
    return {
        "bundle_cycles": {
            n.id: {
                "bundle_time": n.bundle_time,
                "bundle_size": n.bundle_size,
                "checkpoint_interval": n.checkpoint_interval,
                "calm_cycle": calm_cycle(n.bundle_time, checkpoint=n.checkpoint_interval),
            }
            for n in threads
        },
        "bundle_rise": {q: float(r.max(initial=0.0)) for q, r in rises.items()},
    }


def fetch_report(
    url: str, run_id: str | None, training_share: float, estimator: str
) -> dict[str, Any]:
    """The report as a running ``mace serve`` at ``url`` builds it (``GET /api/report``)."""
    from dashboard.core.report import REPORT_PATH
    from mace.remote import fetch_json

    query = {"training_share": str(training_share)}
    if estimator != AUTO:  # auto: the server's default, which is auto too
        query["estimator"] = estimator
    if run_id is not None:
        query["run"] = run_id
    return dict(fetch_json(url, REPORT_PATH, query, "a report"))


def load_run_data(db: Path, run_id: str | None) -> tuple[Any, dict[str, float]]:
    """A stored run's data (``dashboard.core.data.RunData``) and its latency objectives;
    ``run_id`` defaults to the last run."""
    from dashboard.core.data import load_run
    from dashboard.core.report import choose_run
    from storage import reads
    from storage.db import connect_to_read
    from storage.scenarios import objectives

    con = connect_to_read(db)  # opened once: every read below shares it
    try:
        chosen = choose_run([r.run_id for r in reads.list_runs(con)], run_id)
        # the sub-bucket profile is read only if the chosen estimator asks for it
        return load_run(con, chosen, lambda: closing(connect_to_read(db))), objectives(con, chosen)
    finally:
        con.close()


def format_report(report: dict[str, Any]) -> str:
    """A readable table of the report, naming the estimator used and why."""

    def cell(value: Any, percent: bool = False) -> str:
        if value is None:
            return "-"
        return f"{value:.1%}" if percent else f"{value:.4f}"

    used = report["estimator_used"]
    lines = [
        f"run {report['run']}: latency across time (seconds); "
        f"estimated and predicted by {used['label']} ({used['reason']})"
    ]
    header = f"  {'query':<14}{'':>10}{'worst':>10}{'p99':>10}{'mean':>10}"
    rows = [*report["queries"].items(), ("system", report["system"])]
    for name, entry in rows:
        lines.append(header.replace("query", name if len(name) < 14 else name[:13]))
        for kind in ("estimated", "predicted", "measured"):
            lines.append(
                f"  {'':<14}{kind:>10}"
                + "".join(f"{cell(entry[f'{kind}_{f}']):>10}" for f in ("wc", "p99", "mean"))
            )
        lines.append(
            f"  {'':<14}objective {cell(entry['objective'])} s,"
            f" compliance {cell(entry['compliance'], True)}"
        )
        if "pipeline_delay" in entry:
            lines.append(f"  {'':<14}{_delay_line(entry['pipeline_delay'])}")
    lines.append(f"  bound coverage {cell(report['system']['bound_coverage'], True)}")
    for operator, thread in report.get("threads", {}).items():
        lines.append(f"  {_thread_line(operator, thread)}")
    for node, cycle in report.get("bundle_cycles", {}).items():
        size = "" if cycle["bundle_size"] is None else f", {cycle['bundle_size']} records at most"
        if cycle.get("checkpoint_interval") is not None:
            size += f", and at each checkpoint (every {cycle['checkpoint_interval']:g} s)"
        lines.append(
            f"  bundles of {node}: every {cycle['bundle_time']:g} s{size}, calm cycle "
            f"{cycle['calm_cycle']:.3g} s (in the engine delay)"
        )
    if "bundle_rise" in report:
        rises = ", ".join(f"{q} {r:.3g} s" for q, r in report["bundle_rise"].items())
        lines.append(f"  bundle cycles' rise under load, added to the estimate at most: {rises}")
    if "complete_intervals" in report and report["complete_intervals"] < report["intervals"]:
        left = report["intervals"] - report["complete_intervals"]
        lines.append(
            f"  over the {report['complete_intervals']} complete subintervals: the newest "
            f"{left} still have events in flight (or not ingested) and are left out"
        )
    if report["changes"]:
        lines.append("changes (worst case, predicted by the model fitted before each change):")
        for change in report["changes"]:
            moved = ", ".join(
                [f"{m['operator']} {m['from']}->{m['to']}" for m in change["moved"]]
                + [f"{r['node']} {r['from']:g}->{r['to']:g}" for r in change.get("rescaled", [])]
            )
            lines.append(
                f"  subinterval {change['interval']} ({moved or 'same placement'}): "
                f"predicted {cell(change['predicted_wc_before'])} -> "
                f"{cell(change['predicted_wc_after'])} s "
                f"({_signed(change['predicted_change'])}), measured "
                f"{cell(change['measured_wc_before'])} -> {cell(change['measured_wc_after'])} s "
                f"({_signed(change['measured_change'])})"
            )
    return "\n".join(lines)


def _delay_line(delay: dict[str, Any]) -> str:
    """An engine run's calibrated pipeline delay of a query, as the estimate uses it."""
    if delay["calm_subintervals"] < MIN_CALM:
        return (
            f"engine delay: none in the estimate (only {delay['calm_subintervals']} calm "
            f"subintervals, {MIN_CALM} needed)"
        )
    return (
        f"engine delay in the estimate {delay['high']:.4f} s (typical {delay['typical']:.4f},"
        f" least {delay['low']:.4f}, over {delay['calm_subintervals']} calm subintervals)"
    )


def _thread_line(operator: str, thread: dict[str, Any]) -> str:
    """How an operator's cost on its thread was read, and whether its busy time is work."""
    line = f"thread {operator}: {thread['cost'] * 1000:.3g} ms a record ({thread['reading']})"
    if thread["predicted_cost"] is not None:
        line += (
            f", predicted with {thread['predicted_cost'] * 1000:.3g} "
            f"({thread['predicted_reading']}, first part of the run)"
        )
    if thread.get("predicted_counts_fixed_time"):
        line += (
            f" (the first part took {thread['predicted_records_a_second']:.3g} records a "
            f"second against {thread['records_a_second']:.3g} over the run: the worker's "
            "time a second that no record causes counts per record there, so the "
            "prediction is high where more records come)"
        )
    if thread.get("python_worker"):
        cores = thread.get("python_worker_cores") or 1.0
        per_slot = thread.get("python_workers") == "per-slot" or cores != 1.0
        line += (
            f"; its Python code runs in the workers of {thread['python_worker']} (a worker "
            f"per slot holding Python subtasks: {cores:g} core{'s' * (cores != 1.0)} as the "
            "job runs now)"
            if per_slot
            else f"; its Python code shares the interpreter of {thread['python_worker']} (1 core)"
        )
    calm, busy = thread["busy_per_record_calm"], thread["busy_per_record_busy"]
    if calm is not None and busy is not None:
        line += f"; busy time {calm * 1000:.3g} ms a record when calm, {busy * 1000:.3g} busy"
        if not thread["busy_time_is_work"]:
            line += ": busy time here is mostly waiting, not work"
    return line


def _signed(change: float | None) -> str:
    return "-" if change is None else f"{change:+.0%}"
