"""What-if in a Flink job's knobs for a stored run: an operator's parallelism, the slots
per TaskManager, the number of TaskManagers and their cores.

Written once for ``mace whatif`` and the What-if page, so that both print the same
numbers for the same edits. The model is fitted on the whole run (costs and
selectivities from its statistics), driven by the run's recorded arrivals, and
evaluated twice: as recorded (today's model of the run, at its last placement and node
capacities: a rescaled vertex at its parallelism now) and with the edits
(:mod:`estimator.parallelism`). A run measured by counters (a real engine) gets each
query's pipeline delay, calibrated on the calm subintervals of the recorded
prediction, added to both sides (:mod:`estimator.delays`).
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dashboard.core.data import RunData
from estimator.bundles import full_bundle_work
from estimator.delays import calibrate
from estimator.errors import ScenarioError
from estimator.fitting import WORK_SPREAD
from estimator.model import Topology
from estimator.parallelism import (
    Deployment,
    Edits,
    Shape,
    predict,
    resolve,
    restart_cost,
    shape_of,
    unit_of,
)
from estimator.runs import (
    RunAnalysis,
    analyse,
    fitted_model,
    node_loads,
    version_topologies,
    with_delays,
)

GLOBAL_KEYS = ("taskmanagers", "slots", "cores")
NODE_KEYS = ("parallelism", "capacity")


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
    downtimes: tuple[float, ...] = ()  # the restarts measured on the run, in seconds


def is_flink(topology: Topology) -> bool:
    """A run whose topology has TaskManagers: nodes that host others (a Flink run)."""
    return any(node.host is not None for node in topology.nodes)


def fit_run(data: RunData) -> FittedRun:
    """``data`` with its model fitted on the whole run (computed once per loaded run)."""
    return data.derived(("deployment-fit",), lambda: _fit(data))


def _fit(data: RunData) -> FittedRun:
    if data.intervals == 0:
        raise ScenarioError(f"run '{data.info.run_id}': no arrivals ingested yet")
    topology = data.topology
    if data.versions:
        topology = topology.with_placement(data.versions[-1].placement)
    counts = data.arrivals.for_topology(topology)
    fitted, model = fitted_model(topology, data.operator_stats, counts, (0, data.intervals))
    if data.versions:  # the deployment as it is now: a rescaled vertex at its parallelism
        fitted = version_topologies(fitted, [fitted.placement], [data.versions[-1].capacities])[0]
    operator_dlts = model.operator_dlts()
    placement = [dict(fitted.placement)]
    loads = node_loads(fitted, operator_dlts, placement, [0])
    recorded = analyse(fitted, loads, placement, [0], bundle_work=full_bundle_work(fitted))
    finish: Callable[[RunAnalysis], RunAnalysis] = lambda analysis: analysis  # noqa: E731
    if data.info.counters:
        measured = {q: data.latency[q].lat_max for q in recorded.per_query if q in data.latency}
        delays = calibrate(recorded.per_query, measured, fitted.subinterval)
        finish = functools.partial(with_delays, delays=delays)
    return FittedRun(
        data.info.run_id,
        fitted,
        operator_dlts,
        finish,
        finish(recorded),
        data.info.counters,
        tuple(resumed - stopped for stopped, resumed in data.restarts),
    )


def summary(series: np.ndarray) -> dict[str, float]:
    """Worst case, p99 and mean of a latency series (seconds)."""
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
    """A deployment's keys of ``mace whatif --json`` (docs/commands/whatif.md)."""
    return {
        "parallelism": dict(deployment.parallelism),
        "subtasks": deployment.subtasks,
        "taskmanagers": deployment.taskmanagers,
        "slots": deployment.slots if deployment.taskmanagers else None,
        "cores": list(deployment.cores),
    }


def parse_edits(values: Sequence[str], topology: Topology, shape: Shape) -> Edits:
    """``--set`` values as :class:`estimator.parallelism.Edits` (names resolved)."""
    parallelism: dict[str, int] = {}
    capacity: dict[str, float] = {}
    scalars: dict[str, float] = {}
    for value in values:
        key, sep, text = value.partition("=")
        key = key.strip()
        if not sep or not key or not text.strip():
            raise ScenarioError(f"--set {value}: expected KEY=VALUE")
        name, dot, attribute = key.rpartition(".")
        if not dot:
            if key not in GLOBAL_KEYS:
                raise ScenarioError(
                    f"--set {value}: unknown key '{key}' (expected OPERATOR.parallelism, "
                    f"NODE.capacity, {', '.join(GLOBAL_KEYS)})"
                )
            scalars[key] = _number(value, text, whole=key != "cores")
            continue
        if attribute not in NODE_KEYS:
            raise ScenarioError(
                f"--set {value}: unknown attribute '{attribute}' (expected parallelism or capacity)"
            )
        unit = unit_of(topology, shape, name)
        if attribute == "parallelism":
            count = int(_number(value, text, whole=True))
            if parallelism.get(unit, count) != count:
                raise ScenarioError(
                    f"--set {value}: '{unit}' is set to {parallelism[unit]} already"
                )
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
        raise ScenarioError(f"--set {value}: expected a number, got {text.strip()!r}") from None
    if not math.isfinite(number) or (whole and number != int(number)):
        kind = "a whole number" if whole else "a finite number"
        raise ScenarioError(f"--set {value}: expected {kind}, got {text.strip()!r}")
    return number


def _whole(number: float | None) -> int | None:
    return None if number is None else int(number)


def whatif_document(fitted: FittedRun, edits: Edits) -> dict[str, Any]:
    """The recorded and the changed deployment of ``edits``, each with its predicted
    figures: the document ``mace whatif --json`` prints (ScenarioError names a bad edit)."""
    shape = shape_of(fitted.topology)
    recorded = resolve(shape, Edits())
    deployment = resolve(shape, edits)
    changed = _predicted(fitted, shape, deployment)
    return {
        "run": fitted.run_id,
        "delays": fitted.counters,
        "recorded": {
            "deployment": deployment_json(recorded),
            **figures(fitted.current),
            "spread": work_spread(fitted, shape, recorded),
        },
        "changed": {
            "deployment": deployment_json(deployment),
            **figures(changed),
            "spread": work_spread(fitted, shape, deployment),
        },
    }


def work_spread(fitted: FittedRun, shape: Shape, deployment: Deployment) -> dict[str, Any] | None:
    """The worst case of ``deployment`` (system and per query) for every record's work
    :data:`estimator.fitting.WORK_SPREAD` lower and higher than fitted: how far the
    prediction moves within the uncertainty of a cost read from a real engine's counters
    (None on a simulated run, whose costs are measured per event). Near a full resource
    a few percent of work is much of the backlog, and this says so."""
    if not fitted.counters:
        return None
    worst = {
        side: figures(_predicted(fitted, shape, deployment, factor))
        for side, factor in SPREAD_FACTORS.items()
    }
    return {
        "share": WORK_SPREAD,
        "system": {side: worst[side]["system"]["wc"] for side in worst},
        "queries": {
            query: {side: worst[side]["queries"][query]["wc"] for side in worst}
            for query in worst["lower"]["queries"]
        },
    }


SPREAD_FACTORS = {"lower": 1.0 - WORK_SPREAD, "higher": 1.0 + WORK_SPREAD}


def _predicted(
    fitted: FittedRun, shape: Shape, deployment: Deployment, work_factor: float = 1.0
) -> RunAnalysis:
    """``deployment``'s prediction, finished (pipeline delays), with every record's work
    scaled by ``work_factor``."""
    dlts = fitted.operator_dlts if work_factor == 1.0 else fitted.operator_dlts * work_factor
    return fitted.finish(predict(fitted.topology, shape, deployment, dlts))


@dataclass(frozen=True)
class DeploymentSeries:
    """The system's predicted latency per subinterval, as recorded and with the edits;
    with every record's work lower and higher by the spread (:func:`work_spread`), None
    on a simulated run."""

    recorded: np.ndarray
    changed: np.ndarray
    lower: np.ndarray | None
    higher: np.ndarray | None


def deployment_series(fitted: FittedRun, edits: Edits) -> DeploymentSeries:
    """The series behind :func:`whatif_document`'s figures, for a chart over time
    (ScenarioError names a bad edit)."""
    shape = shape_of(fitted.topology)
    deployment = resolve(shape, edits)
    spread = {
        side: _predicted(fitted, shape, deployment, factor).estimate if fitted.counters else None
        for side, factor in SPREAD_FACTORS.items()
    }
    return DeploymentSeries(
        fitted.current.estimate,
        _predicted(fitted, shape, deployment).estimate,
        spread["lower"],
        spread["higher"],
    )


def restart_figures(fitted: FittedRun, deployment: Deployment) -> dict[str, Any] | None:
    """What a restart into ``deployment`` costs (``mace whatif --json``'s ``restart``):
    the median of the restarts measured on the run, tried at the run's busiest moments
    (:func:`estimator.parallelism.restart_cost`), with the worst one's figures; None when
    the run has no restart measured."""
    if not fitted.downtimes:
        return None
    cost = restart_cost(
        fitted.topology,
        shape_of(fitted.topology),
        deployment,
        fitted.operator_dlts,
        statistics.median(fitted.downtimes),
        fitted.finish,
    )
    return {
        "downtime": cost.downtime,
        "measured": len(fitted.downtimes),
        "interval": cost.interval,
        **figures(cost.analysis),
    }


def restart_json(fitted: FittedRun, edits: Edits) -> dict[str, Any] | None:
    """:func:`restart_figures` of the deployment ``edits`` make (ScenarioError names a
    bad edit)."""
    return restart_figures(fitted, resolve(shape_of(fitted.topology), edits))


def count_text(n: int, word: str) -> str:
    """``1 TaskManager``, ``2 TaskManagers``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def deployment_text(entry: Mapping[str, Any]) -> str:
    """A deployment entry of :func:`whatif_document` in words, as the CLI and the page
    print it: ``4 subtasks; 2 TaskManagers x 2 slots, 2 cores; parallelism m 3``."""
    parts = [count_text(entry["subtasks"], "subtask")]
    if entry["taskmanagers"]:
        cores = "/".join(f"{c:g}" for c in sorted(set(entry["cores"])))
        taskmanagers = count_text(entry["taskmanagers"], "TaskManager")
        parts.append(f"{taskmanagers} x {count_text(entry['slots'], 'slot')}, {cores} cores")
    scaled = ", ".join(f"{n} {p}" for n, p in entry["parallelism"].items() if p != 1)
    return "; ".join(parts + ([f"parallelism {scaled}"] if scaled else []))
