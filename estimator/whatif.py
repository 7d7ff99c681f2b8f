"""What-if scenarios: evaluate a changed deployment before changing anything.

A :class:`Scenario` lists changes to a topology and its arrivals (placement,
capacities, added or removed nodes, scaled source rates, an added query, a
wider subinterval). :func:`apply_scenario` turns it into a new validated
topology and arrival series; :func:`evaluate_scenario` estimates both the
current and the changed deployment and reports the change per query.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from estimator.arrivals import Arrivals
from estimator.errors import ModelError
from estimator.evaluator import estimate
from estimator.mace import Estimate
from estimator.model import Topology, topology_from_dict

MAX_RATE_SCALE = 1000.0


@dataclass(frozen=True)
class AddedQuery:
    """A query to add: operators in the topology file format, their placement, and
    optionally new sources with their arrival counts (source id -> counts per interval)."""

    operators: Sequence[Mapping[str, Any]]
    placement: Mapping[str, str]
    sources: Mapping[str, Sequence[float]] = field(default_factory=dict)


@dataclass(frozen=True)
class Scenario:
    """Changes to a deployment; every field is optional and defaults to "no change"."""

    placement: Mapping[str, str] = field(default_factory=dict)
    capacities: Mapping[str, float] = field(default_factory=dict)
    add_nodes: Mapping[str, float] = field(default_factory=dict)
    remove_nodes: Sequence[str] = ()
    rate_scale: float | Mapping[str, float] = 1.0
    add_query: AddedQuery | None = None
    subinterval_factor: int = 1


@dataclass(frozen=True)
class QueryChange:
    before: float
    after: float

    @property
    def change(self) -> float:
        return self.after - self.before


@dataclass(frozen=True)
class ScenarioResult:
    """The changed deployment, its estimate, the current estimate, and per-query MaceWC change."""

    topology: Topology
    arrivals: Arrivals
    estimate: Estimate
    baseline: Estimate
    per_query: dict[str, QueryChange]

    @property
    def mace_wc_change(self) -> float:
        return self.estimate.mace_wc - self.baseline.mace_wc


def _check_rate_scale(scale: float | Mapping[str, float]) -> None:
    values = scale.values() if isinstance(scale, Mapping) else [scale]
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int | float) or not np.isfinite(value):
            raise ModelError(f"rate scale: expected a finite number, got {value!r}")
        if value < 0 or value > MAX_RATE_SCALE:
            raise ModelError(f"rate scale: {value!r} is outside [0, {MAX_RATE_SCALE:g}]")


def apply_scenario(
    topology: Topology, arrivals: Arrivals, scenario: Scenario
) -> tuple[Topology, Arrivals]:
    """The topology and arrivals after the scenario's changes (validated)."""
    document = topology.to_dict()
    for node_id in scenario.remove_nodes:
        if node_id not in topology.capacity_by_node:
            raise ModelError(f"remove nodes: unknown node '{node_id}'")
    removed = set(scenario.remove_nodes)
    nodes = [n for n in document["nodes"] if n["id"] not in removed]
    for node_id, capacity in scenario.add_nodes.items():
        if node_id in topology.capacity_by_node and node_id not in removed:
            raise ModelError(f"add nodes: node '{node_id}' already exists")
        nodes.append({"id": node_id, "capacity": capacity})
    for node in nodes:
        if node["id"] in scenario.capacities:
            node["capacity"] = scenario.capacities[node["id"]]
    unknown_caps = set(scenario.capacities) - {n["id"] for n in nodes}
    if unknown_caps:
        raise ModelError(f"capacities: unknown node '{sorted(unknown_caps)[0]}'")
    document["nodes"] = nodes
    document["links"] = [
        lk
        for lk in document.get("links", [])
        if lk["from"] not in removed and lk["to"] not in removed
    ]

    placement = dict(document["placement"])
    for op_id in scenario.placement:
        if op_id not in placement and (
            scenario.add_query is None or op_id not in scenario.add_query.placement
        ):
            raise ModelError(f"placement: unknown operator '{op_id}'")
    placement.update(scenario.placement)
    orphans = sorted(op for op, node in placement.items() if node in removed)
    if orphans:
        raise ModelError(
            f"remove nodes: operator '{orphans[0]}' is still placed on removed node "
            f"'{placement[orphans[0]]}'; move it first"
        )

    new_arrivals = arrivals
    if scenario.add_query is not None:
        added = scenario.add_query
        document["operators"] = [*document["operators"], *[dict(op) for op in added.operators]]
        document["sources"] = [*document["sources"], *[{"id": s} for s in added.sources]]
        placement.update({k: v for k, v in added.placement.items() if k not in scenario.placement})
        if added.sources:
            width = max(arrivals.intervals, *(len(v) for v in added.sources.values()))
            counts = np.zeros((len(arrivals.sources) + len(added.sources), width))
            counts[: len(arrivals.sources), : arrivals.intervals] = arrivals.counts
            for k, series in enumerate(added.sources.values()):
                counts[len(arrivals.sources) + k, : len(series)] = series
            new_arrivals = Arrivals((*arrivals.sources, *added.sources), counts)
    document["placement"] = placement

    factor = scenario.subinterval_factor
    if isinstance(factor, bool) or not isinstance(factor, int) or factor < 1:
        raise ModelError(f"subinterval factor must be a positive integer, got {factor!r}")
    if factor > 1:
        document["subinterval"] = topology.subinterval * factor
        new_arrivals = new_arrivals.coarsened(factor)

    _check_rate_scale(scenario.rate_scale)
    if scenario.rate_scale != 1.0:
        new_arrivals = new_arrivals.scaled(scenario.rate_scale)

    return topology_from_dict(document), new_arrivals


def evaluate_scenario(
    topology: Topology, arrivals: Arrivals, scenario: Scenario, baseline: Estimate | None = None
) -> ScenarioResult:
    """Estimate the deployment after ``scenario`` next to the current one."""
    current = baseline if baseline is not None else estimate(topology, arrivals)
    changed_topology, changed_arrivals = apply_scenario(topology, arrivals, scenario)
    changed = estimate(changed_topology, changed_arrivals)

    def worst(series: np.ndarray | None) -> float:
        return float(series.max()) if series is not None and series.size else 0.0

    per_query = {
        q: QueryChange(worst(current.per_query.get(q)), worst(changed.per_query.get(q)))
        for q in dict.fromkeys([*current.per_query, *changed.per_query])
    }
    return ScenarioResult(changed_topology, changed_arrivals, changed, current, per_query)
