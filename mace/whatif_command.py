"""``mace whatif``: a stored run's latency under another parallelism, slots, TaskManagers.

The model is fitted on the whole run (costs and selectivities from its statistics),
driven by the run's recorded arrivals, and evaluated twice: as recorded (today's
model of the run) and with the edits (:mod:`estimator.parallelism`). A run measured
by counters (a real engine) gets each query's pipeline delay, calibrated on the calm
subintervals of the recorded prediction, added to both (:mod:`estimator.delays`).
The JSON keys are documented in docs/commands/whatif.md.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mace.errors import UsageError

if TYPE_CHECKING:
    from dashboard.core.deployment import FittedRun


def register(subparsers: argparse._SubParsersAction) -> None:
    whatif = subparsers.add_parser(
        "whatif",
        help="predicted latency of a run under another parallelism, slots or TaskManagers",
        description="Predict a stored run's worst case, p99 and mean latency per query and "
        "for the system, and its bottleneck, over the run's recorded arrivals with the "
        "model fitted on the run, for a changed deployment: an operator's parallelism, "
        "the slots per TaskManager, the number of TaskManagers and their cores (a "
        "simulated run: a node's parallelism or capacity). See docs/commands/whatif.md.",
    )
    add_run_options(whatif)
    add_set_option(whatif, required=True)
    whatif.add_argument("--json", action="store_true", help="print one JSON object")
    whatif.set_defaults(run=run)


def add_run_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", required=True, help="DuckDB file written by mace ingest")
    parser.add_argument("--run", dest="run_id", help="run id (default: the last run)")


def add_set_option(parser: argparse.ArgumentParser, *, required: bool) -> None:
    parser.add_argument(
        "--set",
        dest="edits",
        action="append",
        required=required,
        metavar="KEY=VALUE",
        help="an edit, repeatable: OPERATOR.parallelism=N (an operator or its node), "
        "taskmanagers=K, slots=S (per TaskManager), cores=C (per TaskManager), "
        "NODE.capacity=C (a simulated machine)",
    )


def load_fitted_run(db: Path, run_id: str | None) -> FittedRun:
    """The run ``run_id`` of ``db`` (default the last) with its model fitted on it."""
    from dashboard.core.deployment import fit_run
    from mace.report_command import load_run_data

    if not db.exists():
        raise UsageError(f"--db: no such file: {db}")
    data, _ = load_run_data(db, run_id)
    if data.intervals == 0:
        raise UsageError(f"run '{data.info.run_id}': no arrivals ingested yet")
    return fit_run(data)


def run(args: argparse.Namespace) -> int:
    from dashboard.core.deployment import parse_edits, restart_json, whatif_document
    from estimator.parallelism import shape_of

    fitted = load_fitted_run(Path(args.db), args.run_id)
    edits = parse_edits(args.edits, fitted.topology, shape_of(fitted.topology))
    document = whatif_document(fitted, edits)
    document["restart"] = restart_json(fitted, edits)
    if args.json:
        print(json.dumps(document))
    else:
        print(format_whatif(document))
    return 0


def format_whatif(document: dict[str, Any]) -> str:
    """A readable table: recorded and changed, worst / p99 / mean per query and system."""
    from dashboard.core.deployment import deployment_text

    lines = [f"run {document['run']}: predicted latency (seconds) over its recorded arrivals"]
    for side in ("recorded", "changed"):
        lines.append(f"  {side}: {deployment_text(document[side]['deployment'])}")
    lines.append(f"  {'':<16}{'':>10}{'worst':>10}{'p99':>10}{'mean':>10}")
    names = [*document["changed"]["queries"], "system"]
    for name in names:
        for side in ("recorded", "changed"):
            entry = document[side]
            values = entry["system"] if name == "system" else entry["queries"].get(name)
            if values is None:
                continue
            label = name if side == "recorded" else ""
            lines.append(
                f"  {label[:15]:<16}{side:>10}"
                + "".join(f"{values[f]:>10.4f}" for f in ("wc", "p99", "mean"))
            )
    for side in ("recorded", "changed"):
        lines.append(f"  bottleneck {side}: {document[side]['bottleneck'] or 'none'}")
    if document["changed"]["spread"] is not None:
        lines.append(spread_text(document))
    restart = document.get("restart")
    if restart is None:
        lines.append("  restart: none measured on this run")
    else:
        lines.append(
            f"  restart: {restart['downtime']:.2f} s stopped (the median of "
            f"{restart['measured']} measured on this run), at its worst moment tried "
            f"(subinterval {restart['interval']}): system worst case "
            f"{restart['system']['wc']:.4f} s"
        )
    if document["delays"]:
        lines.append("  (each query's pipeline delay, calibrated on the run, is included)")
    return "\n".join(lines)


def spread_text(document: dict[str, Any]) -> str:
    """The system's worst case, recorded and changed, for every record's work lower and
    higher by the spread of a cost read from the run."""
    spreads = {side: document[side]["spread"]["system"] for side in ("recorded", "changed")}
    share = document["changed"]["spread"]["share"]
    return (
        f"  if every record's work is {share:.0%} lower / higher: system worst case "
        + ", ".join(f"{side} {s['lower']:.4f} / {s['higher']:.4f} s" for side, s in spreads.items())
    )
