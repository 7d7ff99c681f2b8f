"""What-if scenarios: evaluate a changed deployment before changing anything.

A :class:`Scenario` lists changes to a topology and its arrivals (placement,
capacities, added or removed nodes, scaled source rates, an added query, a
wider subinterval). :func:`apply_scenario` turns it into a new validated
topology and arrival series; :func:`evaluate_scenario` estimates both the
current and the changed deployment and reports the change per query.

This module is the one what-if engine: the dashboard keeps scenarios in their
JSON form (:func:`scenario_to_json` / :func:`scenario_from_json`, which validate
every value and keep an added query) and evaluates them through
:class:`WhatIfEngine`, which caches the fitted baseline per run and placement
version, the load model per load change (moves and capacity edits do not
change the operators' load series) and, per baseline, the last scenarios applied
(:meth:`RunInputs.applied`). Every evaluation is Mace from a
:class:`PlacementEvaluator`, refined by the estimator chosen by name from
:data:`estimator.pathaware.ESTIMATORS`.
"""

from __future__ import annotations

import json
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from estimator.arrivals import Arrivals
from estimator.errors import ModelError, ScenarioError
from estimator.evaluator import PlacementEvaluator
from estimator.fitting import fit_operator_stats
from estimator.mace import Estimate
from estimator.model import MAX_MAGNITUDE, Topology, topology_from_dict
from estimator.pathaware import PORT_WORK, Detail, Estimator, estimator_by_name
from estimator.propagation import LoadModel, build_load_model, port_load

MAX_RATE_SCALE = 1000.0
MAX_SUBINTERVAL_FACTOR = 3600
MAX_CAPACITY = 1.0e6


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
    def worst_case_change(self) -> float:
        return self.estimate.worst_case - self.baseline.worst_case


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
    if factor > new_arrivals.intervals:
        raise ModelError(
            f"subinterval factor: {factor} is more than the run's {new_arrivals.intervals} "
            f"subintervals (at most {new_arrivals.intervals})"
        )
    if factor > 1:
        document["subinterval"] = topology.subinterval * factor
        new_arrivals = new_arrivals.coarsened(factor)

    _check_rate_scale(scenario.rate_scale)
    if scenario.rate_scale != 1.0:
        new_arrivals = new_arrivals.scaled(scenario.rate_scale)

    return topology_from_dict(document), new_arrivals


def _worst(series: np.ndarray | None) -> float:
    return float(series.max()) if series is not None and series.size else 0.0


def _evaluate(evaluator: PlacementEvaluator, estimator: Estimator) -> Estimate:
    """The one evaluation of a deployment: Mace from its placement evaluator, then
    refined by the chosen estimator (with the model's work per operator port if it
    uses it)."""
    detail = None
    if PORT_WORK in estimator.uses:
        detail = Detail(port_work=port_load(evaluator.topology, evaluator.model))
    return estimator.apply(evaluator.topology, evaluator.estimate(), detail)


def _chosen(estimator: str) -> Estimator:
    try:
        return estimator_by_name(estimator)
    except ModelError as exc:
        raise ScenarioError(str(exc)) from None


def evaluate_scenario(
    topology: Topology,
    arrivals: Arrivals,
    scenario: Scenario,
    baseline: Estimate | None = None,
    estimator: str = "mace",
) -> ScenarioResult:
    """Estimate the deployment after ``scenario`` next to the current one with the
    registered ``estimator`` (no caching; :class:`WhatIfEngine` caches)."""
    chosen = _chosen(estimator)

    def fresh(topology: Topology, arrivals: Arrivals) -> Estimate:
        model = build_load_model(topology, arrivals.for_topology(topology))
        return _evaluate(PlacementEvaluator(topology, model), chosen)

    current = baseline if baseline is not None else fresh(topology, arrivals)
    changed_topology, changed_arrivals = apply_scenario(topology, arrivals, scenario)
    changed = fresh(changed_topology, changed_arrivals)
    per_query = {
        q: QueryChange(_worst(current.per_query.get(q)), _worst(changed.per_query.get(q)))
        for q in dict.fromkeys([*current.per_query, *changed.per_query])
    }
    return ScenarioResult(changed_topology, changed_arrivals, changed, current, per_query)


# -- the JSON form of a scenario ------------------------------------------------------


def parse_positive(value: Any, what: str, *, upper: float) -> float:
    """A form value as a finite number in (0, upper]; raise ScenarioError otherwise."""
    if value is None or (isinstance(value, str) and not value.strip()):
        raise ScenarioError(f"{what}: enter a number")
    if isinstance(value, bool):
        raise ScenarioError(f"{what}: expected a number, got {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ScenarioError(f"{what}: expected a number, got {value!r}") from None
    if not math.isfinite(number) or number <= 0:
        raise ScenarioError(f"{what}: must be a positive number, got {value!r}")
    if number > upper:
        raise ScenarioError(f"{what}: {number:g} is out of range (at most {upper:g})")
    return number


def parse_factor(value: Any) -> int:
    """A subinterval factor: a whole number from 1 to MAX_SUBINTERVAL_FACTOR."""
    number = parse_positive(value, "subinterval factor", upper=MAX_SUBINTERVAL_FACTOR)
    if number != int(number):
        raise ScenarioError(f"subinterval factor: must be a whole number, got {value!r}")
    return int(number)


def _added_query_to_json(added: AddedQuery) -> dict[str, Any]:
    return {
        "operators": [dict(op) for op in added.operators],
        "placement": dict(added.placement),
        "sources": {s: [float(v) for v in series] for s, series in added.sources.items()},
    }


def added_query_from_json(data: Any) -> AddedQuery:
    """An added query from its JSON form (operators, placement, sources), validated."""
    if not isinstance(data, Mapping):
        raise ScenarioError("add query: expected a mapping")
    operators = data.get("operators") or []
    placement = data.get("placement") or {}
    sources = data.get("sources") or {}
    if not isinstance(operators, list) or not all(isinstance(o, Mapping) for o in operators):
        raise ScenarioError("add query: operators must be a list of operator entries")
    if not operators:
        raise ScenarioError("add query: it has no operators")
    if not isinstance(placement, Mapping) or not isinstance(sources, Mapping):
        raise ScenarioError("add query: placement and sources must be mappings")
    counts: dict[str, list[float]] = {}
    for source, series in sources.items():
        if not isinstance(series, list):
            raise ScenarioError(f"add query: arrivals of source '{source}' must be a list")
        for value in series:
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ScenarioError(f"add query: source '{source}' has a non-number {value!r}")
            if not math.isfinite(value) or not 0 <= value <= MAX_MAGNITUDE:
                raise ScenarioError(f"add query: source '{source}' has a bad count {value!r}")
        counts[str(source)] = [float(v) for v in series]
    return AddedQuery(
        operators=[dict(o) for o in operators],
        placement={str(k): str(v) for k, v in placement.items()},
        sources=counts,
    )


def scenario_to_json(scenario: Scenario) -> dict[str, Any]:
    """The JSON form kept in the page's Store and in saved scenarios (``add_query``
    only when the scenario adds one)."""
    scale = scenario.rate_scale
    out: dict[str, Any] = {
        "placement": dict(scenario.placement),
        "capacities": dict(scenario.capacities),
        "add_nodes": dict(scenario.add_nodes),
        "remove_nodes": list(scenario.remove_nodes),
        "rate_scale": dict(scale) if isinstance(scale, Mapping) else float(scale),
        "subinterval_factor": int(scenario.subinterval_factor),
    }
    if scenario.add_query is not None:
        out["add_query"] = _added_query_to_json(scenario.add_query)
    return out


def scenario_from_json(data: Any) -> Scenario:
    """Rebuild a scenario from its JSON form (a Store or a saved row), validating every value."""
    if data is None:
        return Scenario()
    if not isinstance(data, Mapping):
        raise ScenarioError("scenario: expected a mapping")
    placement = data.get("placement") or {}
    capacities = data.get("capacities") or {}
    added = data.get("add_nodes") or {}
    removed = data.get("remove_nodes") or []
    if not isinstance(placement, Mapping) or not isinstance(capacities, Mapping):
        raise ScenarioError("scenario: placement and capacities must be mappings")
    if not isinstance(added, Mapping) or not isinstance(removed, list):
        raise ScenarioError("scenario: add_nodes must be a mapping, remove_nodes a list")
    add_query = data.get("add_query")
    return Scenario(
        placement={str(k): str(v) for k, v in placement.items()},
        capacities={
            str(k): parse_positive(v, f"capacity of '{k}'", upper=MAX_CAPACITY)
            for k, v in capacities.items()
        },
        add_nodes={
            str(k): parse_positive(v, f"capacity of '{k}'", upper=MAX_CAPACITY)
            for k, v in added.items()
        },
        remove_nodes=tuple(str(n) for n in removed),
        rate_scale=parse_positive(data.get("rate_scale", 1.0), "rate scale", upper=MAX_RATE_SCALE),
        add_query=None if add_query is None else added_query_from_json(add_query),
        subinterval_factor=parse_factor(data.get("subinterval_factor", 1)),
    )


def is_empty(scenario: Scenario) -> bool:
    return scenario_to_json(scenario) == scenario_to_json(Scenario())


# -- the cached engine ----------------------------------------------------------------


K = TypeVar("K")
V = TypeVar("V")


class _Lru(OrderedDict[K, V]):
    """A small least-recently-used map (callers hold the engine's lock)."""

    def __init__(self, size: int):
        super().__init__()
        self.size = size

    def get_fresh(self, key: K) -> V | None:
        value = self.get(key)
        if value is not None:
            self.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        self[key] = value
        while len(self) > self.size:
            self.popitem(last=False)


MAX_APPLIED = 32
"""Scenarios applied to one run's inputs that :meth:`RunInputs.applied` keeps."""


@dataclass(frozen=True)
class RunInputs:
    """What a what-if evaluates: a run's deployment (costs and selectivities fitted on
    its measured statistics) and its measured arrivals; ``key`` names the run and
    placement version it was built from."""

    key: str
    topology: Topology
    arrivals: Arrivals
    _applied: _Lru[str, tuple[Topology, Arrivals]] = field(
        default_factory=lambda: _Lru(MAX_APPLIED), init=False, repr=False, compare=False
    )
    _lock: threading.Lock = field(
        default_factory=threading.Lock, init=False, repr=False, compare=False
    )

    def applied(self, scenario: Scenario) -> tuple[Topology, Arrivals]:
        """:func:`apply_scenario` on this run, kept for the last few scenarios: the page
        applies the same ones again and again (an edit folds the whole edit log and
        checks its result, then the view folds it again and evaluates it), and building
        a validated topology is most of an edit's cost."""
        key = json.dumps(scenario_to_json(scenario), sort_keys=True)
        with self._lock:
            found = self._applied.get_fresh(key)
        if found is None:
            found = apply_scenario(self.topology, self.arrivals, scenario)
            with self._lock:
                self._applied.put(key, found)
        return found


@dataclass(frozen=True)
class Evaluation:
    """A scenario's estimate with the topology it was computed for."""

    topology: Topology
    estimate: Estimate

    @property
    def times(self) -> np.ndarray:
        return np.arange(self.estimate.series.size) * self.topology.subinterval

    def per_query_wc(self) -> dict[str, float]:
        return {q: _worst(s) for q, s in self.estimate.per_query.items()}


class WhatIfEngine:
    """Evaluates scenarios of runs, caching fitted baselines, load models and the
    baseline estimate of each run (small LRU caches, thread safe)."""

    def __init__(self, max_models: int = 16):
        self._inputs: _Lru[str, RunInputs] = _Lru(max_models)
        self._models: _Lru[tuple[str, float | str, int, str], LoadModel] = _Lru(max_models)
        self._baselines: _Lru[tuple[str, str], Evaluation] = _Lru(max_models)
        self._lock = threading.Lock()

    def run_inputs(
        self, key: str, topology: Topology, arrivals: Arrivals, operator_stats: pd.DataFrame
    ) -> RunInputs:
        """The baseline of a run: ``topology`` with costs and selectivities fitted on
        ``operator_stats``, fitted once per ``key`` (run and placement version)."""
        return self._cached(
            self._inputs,
            key,
            lambda: RunInputs(
                key,
                topology
                if operator_stats.empty
                else fit_operator_stats(topology, operator_stats).topology,
                arrivals,
            ),
        )

    def cached_inputs(self, key: str) -> RunInputs:
        """The baseline fitted under ``key`` earlier (ScenarioError if it is not cached,
        e.g. because the run changed since)."""
        with self._lock:
            found = self._inputs.get_fresh(key)
        if found is None:
            raise ScenarioError("the run's data changed: wait for the page to refresh")
        return found

    def _cached(self, cache: _Lru[Any, V], key: Any, build: Callable[[], V]) -> V:
        with self._lock:
            found = cache.get_fresh(key)
        if found is None:
            found = build()
            with self._lock:
                cache.put(key, found)
        return found

    def applied(self, inputs: RunInputs, scenario: Scenario) -> tuple[Topology, Arrivals]:
        """The scenario's deployment and arrivals, validated (ScenarioError otherwise)."""
        try:
            return inputs.applied(scenario)
        except ModelError as exc:
            raise ScenarioError(str(exc)) from None

    def evaluator(self, inputs: RunInputs, scenario: Scenario) -> PlacementEvaluator:
        """A placement evaluator for the scenario (for estimates and optimizers)."""
        topology, arrivals = self.applied(inputs, scenario)
        scale = scenario.rate_scale
        key = (
            inputs.key,
            repr(sorted(scale.items())) if isinstance(scale, Mapping) else float(scale),
            scenario.subinterval_factor,
            repr(scenario_to_json(scenario).get("add_query")),  # new operators and sources
        )
        model = self._cached(
            self._models, key, lambda: build_load_model(topology, arrivals.for_topology(topology))
        )
        return PlacementEvaluator(topology, model)

    def evaluate(
        self, inputs: RunInputs, scenario: Scenario, estimator: str = "mace"
    ) -> Evaluation:
        """The scenario's estimate with the registered ``estimator`` (the baseline's
        estimate is cached per run and estimator)."""
        chosen = _chosen(estimator)

        def compute() -> Evaluation:
            evaluator = self.evaluator(inputs, scenario)
            return Evaluation(evaluator.topology, _evaluate(evaluator, chosen))

        if is_empty(scenario):
            return self._cached(self._baselines, (inputs.key, estimator), compute)
        return compute()

    def heading(self, estimator: str) -> str:
        """The name of the worst case of ``estimator`` (MaceWC for Mace)."""
        return _chosen(estimator).worst_case_heading

    def label(self, estimator: str) -> str:
        return _chosen(estimator).label
