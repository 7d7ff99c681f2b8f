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
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mace.errors import UsageError

if TYPE_CHECKING:
    import numpy as np

    from estimator.model import Topology
    from estimator.parallelism import Deployment, Edits, Shape
    from estimator.runs import RunAnalysis

GLOBAL_KEYS = ("taskmanagers", "slots", "cores")
NODE_KEYS = ("parallelism", "capacity")


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


@dataclass(frozen=True)
class FittedRun:
    """A stored run ready for what-if: its topology on its last placement with the model
    fitted on the whole run, the operator DLTS that model gives for the recorded
    arrivals, and what turns a prediction into the figure shown (pipeline delays)."""

    run_id: str
    topology: Topology
    operator_dlts: np.ndarray
    finish: Callable[[RunAnalysis], RunAnalysis]
    current: RunAnalysis
    counters: bool


def load_fitted_run(db: Path, run_id: str | None) -> FittedRun:
    """The run ``run_id`` of ``db`` (default the last) with its model fitted on it."""
    import functools

    from estimator.delays import calibrate
    from estimator.runs import analyse, fitted_model, node_loads, with_delays
    from mace.report_command import load_run_data

    if not db.exists():
        raise UsageError(f"--db: no such file: {db}")
    data, _ = load_run_data(db, run_id)
    if data.intervals == 0:
        raise UsageError(f"run '{data.info.run_id}': no arrivals ingested yet")
    topology = data.topology
    if data.versions:
        topology = topology.with_placement(data.versions[-1].placement)
    counts = data.arrivals.for_topology(topology)
    fitted, model = fitted_model(topology, data.operator_stats, counts, (0, data.intervals))
    operator_dlts = model.operator_dlts()
    placement = [dict(fitted.placement)]
    loads = node_loads(fitted, operator_dlts, placement, [0])
    recorded = analyse(fitted, loads, placement, [0])
    finish: Callable[[RunAnalysis], RunAnalysis] = lambda analysis: analysis  # noqa: E731
    if data.info.counters:
        measured = {q: data.latency[q].lat_max for q in recorded.per_query if q in data.latency}
        delays = calibrate(recorded.per_query, measured, fitted.subinterval)
        finish = functools.partial(with_delays, delays=delays)
    return FittedRun(
        data.info.run_id, fitted, operator_dlts, finish, finish(recorded), data.info.counters
    )


def parse_edits(values: Sequence[str], topology: Topology, shape: Shape) -> Edits:
    """``--set`` values as :class:`estimator.parallelism.Edits` (names resolved)."""
    from estimator.parallelism import Edits, unit_of

    parallelism: dict[str, int] = {}
    capacity: dict[str, float] = {}
    scalars: dict[str, float] = {}
    for value in values:
        key, sep, text = value.partition("=")
        key = key.strip()
        if not sep or not key or not text.strip():
            raise UsageError(f"--set {value}: expected KEY=VALUE")
        name, dot, attribute = key.rpartition(".")
        if not dot:
            if key not in GLOBAL_KEYS:
                raise UsageError(
                    f"--set {value}: unknown key '{key}' (expected OPERATOR.parallelism, "
                    f"NODE.capacity, {', '.join(GLOBAL_KEYS)})"
                )
            scalars[key] = _number(value, text, whole=key != "cores")
            continue
        if attribute not in NODE_KEYS:
            raise UsageError(
                f"--set {value}: unknown attribute '{attribute}' (expected parallelism or capacity)"
            )
        unit = unit_of(topology, shape, name)
        if attribute == "parallelism":
            count = int(_number(value, text, whole=True))
            if parallelism.get(unit, count) != count:
                raise UsageError(f"--set {value}: '{unit}' is set to {parallelism[unit]} already")
            parallelism[unit] = count
        else:
            capacity[unit] = _number(value, text, whole=False)
    return Edits(
        parallelism=parallelism,
        capacity=capacity,
        slots=_whole(scalars.get("slots")),
        taskmanagers=_whole(scalars.get("taskmanagers")),
        cores=scalars.get("cores"),
    )


def _number(value: str, text: str, *, whole: bool) -> float:
    try:
        number = float(text)
    except ValueError:
        raise UsageError(f"--set {value}: expected a number, got {text.strip()!r}") from None
    if not math.isfinite(number) or (whole and number != int(number)):
        kind = "a whole number" if whole else "a finite number"
        raise UsageError(f"--set {value}: expected {kind}, got {text.strip()!r}")
    return number


def _whole(number: float | None) -> int | None:
    return None if number is None else int(number)


def summary(series: np.ndarray) -> dict[str, float]:
    """Worst case, p99 and mean of a latency series (seconds)."""
    import numpy as np

    if series.size == 0:
        return {"wc": 0.0, "p99": 0.0, "mean": 0.0}
    return {
        "wc": float(series.max()),
        "p99": float(np.quantile(series, 0.99)),
        "mean": float(series.mean()),
    }


def bottleneck(analysis: RunAnalysis) -> str | None:
    """The resource whose backlog is the system's worst case (None: nothing waits)."""
    if analysis.estimate.size == 0 or analysis.estimate.max() <= 0:
        return None
    worst = int(analysis.estimate.argmax())
    return analysis.node_ids[int(analysis.bottleneck[worst])]


def figures(analysis: RunAnalysis) -> dict[str, Any]:
    """Per query and for the system: worst case, p99, mean; and the bottleneck."""
    return {
        "queries": {q: summary(s) for q, s in analysis.per_query.items()},
        "system": summary(analysis.estimate),
        "bottleneck": bottleneck(analysis),
    }


def deployment_json(deployment: Deployment) -> dict[str, Any]:
    return {
        "parallelism": dict(deployment.parallelism),
        "subtasks": deployment.subtasks,
        "taskmanagers": deployment.taskmanagers,
        "slots": deployment.slots if deployment.taskmanagers else None,
        "cores": list(deployment.cores),
    }


def run(args: argparse.Namespace) -> int:
    from estimator.parallelism import predict, resolve, shape_of

    fitted = load_fitted_run(Path(args.db), args.run_id)
    shape = shape_of(fitted.topology)
    edits = parse_edits(args.edits, fitted.topology, shape)
    recorded = resolve(shape, type(edits)())
    deployment = resolve(shape, edits)
    changed = fitted.finish(predict(fitted.topology, shape, deployment, fitted.operator_dlts))
    document = {
        "run": fitted.run_id,
        "delays": fitted.counters,
        "recorded": {"deployment": deployment_json(recorded), **figures(fitted.current)},
        "changed": {"deployment": deployment_json(deployment), **figures(changed)},
    }
    if args.json:
        print(json.dumps(document))
    else:
        print(format_whatif(document))
    return 0


def format_deployment(entry: dict[str, Any]) -> str:
    parts = [f"{entry['subtasks']} subtasks"]
    if entry["taskmanagers"]:
        cores = sorted(set(entry["cores"]))
        parts.append(
            f"{entry['taskmanagers']} TaskManagers x {entry['slots']} slots, "
            f"{'/'.join(f'{c:g}' for c in cores)} cores each"
        )
    scaled = ", ".join(f"{n} {p}" for n, p in entry["parallelism"].items() if p != 1)
    if scaled:
        parts.append(f"parallelism {scaled}")
    return "; ".join(parts)


def format_whatif(document: dict[str, Any]) -> str:
    """A readable table: recorded and changed, worst / p99 / mean per query and system."""
    lines = [f"run {document['run']}: predicted latency (seconds) over its recorded arrivals"]
    for side in ("recorded", "changed"):
        lines.append(f"  {side}: {format_deployment(document[side]['deployment'])}")
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
    if document["delays"]:
        lines.append("  (each query's pipeline delay, calibrated on the run, is included)")
    return "\n".join(lines)
