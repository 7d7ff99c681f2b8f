"""What-if scenarios for the dashboard: validated edits of a run's deployment and their Mace.

A :class:`Scenario` is the JSON-friendly state the What-if page keeps in the
browser (a ``dcc.Store``): placement overrides, capacities, added and removed
nodes, a source rate scale and a subinterval factor, parsed here into the
estimator's :class:`estimator.whatif.Scenario` with a message naming any bad
value. :class:`WhatIfEngine` evaluates scenarios, caching the load model per
run, rate scale and subinterval factor, because moves and capacity edits do not
change the operators' load series.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from estimator.arrivals import Arrivals
from estimator.errors import MaceError, ModelError
from estimator.evaluator import PlacementEvaluator
from estimator.mace import Estimate
from estimator.model import Topology
from estimator.pathaware import estimator_by_name, machine_paths, path_aware_from_dlts
from estimator.propagation import LoadModel, build_load_model
from estimator.whatif import MAX_RATE_SCALE, Scenario, apply_scenario

MAX_SUBINTERVAL_FACTOR = 3600
MAX_CAPACITY = 1.0e6


class ScenarioError(MaceError, ValueError):
    """A scenario edit is invalid; the message names the offending value."""


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


def scenario_to_json(scenario: Scenario) -> dict[str, Any]:
    """The JSON form kept in the page's Store and in saved scenarios."""
    scale = scenario.rate_scale
    return {
        "placement": dict(scenario.placement),
        "capacities": dict(scenario.capacities),
        "add_nodes": dict(scenario.add_nodes),
        "remove_nodes": list(scenario.remove_nodes),
        "rate_scale": dict(scale) if isinstance(scale, Mapping) else float(scale),
        "subinterval_factor": int(scenario.subinterval_factor),
    }


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
        subinterval_factor=parse_factor(data.get("subinterval_factor", 1)),
    )


def is_empty(scenario: Scenario) -> bool:
    return scenario_to_json(scenario) == scenario_to_json(Scenario())


@dataclass(frozen=True)
class RunInputs:
    """What the What-if page evaluates: a run's deployment and its measured arrivals."""

    key: str
    topology: Topology
    arrivals: Arrivals


@dataclass(frozen=True)
class Evaluation:
    """A scenario's estimate with the topology it was computed for."""

    topology: Topology
    estimate: Estimate

    @property
    def times(self) -> np.ndarray:
        return np.arange(self.estimate.mace.size) * self.topology.subinterval

    def per_query_wc(self) -> dict[str, float]:
        return {q: float(s.max()) if s.size else 0.0 for q, s in self.estimate.per_query.items()}


class WhatIfEngine:
    """Evaluates scenarios of runs, keeping a small LRU cache of load models."""

    def __init__(self, max_models: int = 16):
        self._models: OrderedDict[tuple[str, float | str, int], LoadModel] = OrderedDict()
        self._baselines: OrderedDict[str, Evaluation] = OrderedDict()
        self._max = max_models
        self._lock = threading.Lock()

    def evaluator(self, inputs: RunInputs, scenario: Scenario) -> PlacementEvaluator:
        """A placement evaluator for the scenario (for estimates and optimizers)."""
        try:
            topology, arrivals = apply_scenario(inputs.topology, inputs.arrivals, scenario)
        except ModelError as exc:
            raise ScenarioError(str(exc)) from None
        scale = scenario.rate_scale
        key = (
            inputs.key,
            repr(sorted(scale.items())) if isinstance(scale, Mapping) else float(scale),
            scenario.subinterval_factor,
        )
        with self._lock:
            model = self._models.get(key)
            if model is not None:
                self._models.move_to_end(key)
        if model is None:
            model = build_load_model(topology, arrivals.for_topology(topology))
            with self._lock:
                self._models[key] = model
                while len(self._models) > self._max:
                    self._models.popitem(last=False)
        return PlacementEvaluator(topology, model)

    def evaluate(
        self, inputs: RunInputs, scenario: Scenario, estimator: str = "mace"
    ) -> Evaluation:
        """The scenario's estimate with ``estimator`` (the Mace evaluation is cached;
        the path-aware one is derived from it)."""
        result = self._evaluate_mace(inputs, scenario)
        if estimator == "mace":
            return result
        if estimator != "path":
            try:
                estimator_by_name(estimator)
            except ModelError as exc:
                raise ScenarioError(str(exc)) from None
        est = result.estimate
        paths = machine_paths(result.topology, est.resources)
        return Evaluation(result.topology, path_aware_from_dlts(est, paths))

    def _evaluate_mace(self, inputs: RunInputs, scenario: Scenario) -> Evaluation:
        if is_empty(scenario):
            with self._lock:
                cached = self._baselines.get(inputs.key)
            if cached is not None:
                return cached
        evaluator = self.evaluator(inputs, scenario)
        result = Evaluation(evaluator.topology, evaluator.estimate())
        if is_empty(scenario):
            with self._lock:
                self._baselines[inputs.key] = result
                while len(self._baselines) > self._max:
                    self._baselines.popitem(last=False)
        return result
