"""Shared pieces of the placement algorithms: the problem, the result and the clock.

A :class:`PlacementProblem` fixes one topology, one load model (the arrival
series propagated through the DAG) and the set of operators an algorithm may
place; the others stay where the topology puts them (adding a query to a
running system moves only the new operators). Every algorithm takes the
problem, a time budget in seconds and a seeded ``numpy.random.Generator`` and
returns a :class:`PlacementResult` whose ``mace_wc`` is the full estimate of
the placement it returns.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

import numpy as np

from estimator.arrivals import Arrivals
from estimator.errors import ModelError
from estimator.evaluator import PlacementEvaluator
from estimator.model import Topology
from estimator.propagation import LoadModel, build_load_model

Progress = Callable[[float, float], None]
"""``progress(fraction_of_budget_used, best_mace_wc_so_far)`` for progress bars and UIs."""


@dataclass(frozen=True)
class PlacementResult:
    """A placement found by an algorithm and what it cost to find it.

    ``evaluations`` counts placements whose MaceWC was computed (a candidate
    move counts as one); ``time_to_best`` is when the returned placement was
    first reached; ``nodes_used`` is the number of nodes hosting an operator.
    """

    algorithm: str
    placement: dict[str, str]
    mace_wc: float
    seconds: float
    evaluations: int
    time_to_best: float
    nodes_used: int
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The object printed by ``mace place --json``."""
        return {
            "placement": dict(self.placement),
            "mace_wc": self.mace_wc,
            "seconds": self.seconds,
            "evaluations": self.evaluations,
        }


class PlacementProblem:
    """One topology and load model; operators in ``movable`` are to be placed."""

    def __init__(
        self,
        topology: Topology,
        model: LoadModel,
        movable: Collection[str] | None = None,
    ):
        self.topology = topology
        self.model = model
        self.node_ids = topology.node_ids
        self.operator_ids = topology.operator_ids
        self.node_index = {n: k for k, n in enumerate(self.node_ids)}
        self.op_index = {o: k for k, o in enumerate(self.operator_ids)}
        chosen = self.operator_ids if movable is None else tuple(movable)
        for op_id in chosen:
            if op_id not in self.op_index:
                raise ModelError(f"placement: unknown operator '{op_id}'")
        self.movable = np.array(sorted(self.op_index[o] for o in set(chosen)), dtype=int)
        self.base_assignment = np.array(
            [self.node_index[topology.placement[o]] for o in self.operator_ids], dtype=int
        )
        self.capacities = np.array([n.capacity for n in topology.nodes], dtype=float)

    @classmethod
    def from_arrivals(
        cls,
        topology: Topology,
        arrivals: Arrivals | np.ndarray,
        movable: Collection[str] | None = None,
    ) -> PlacementProblem:
        counts = arrivals.for_topology(topology) if isinstance(arrivals, Arrivals) else arrivals
        return cls(topology, build_load_model(topology, counts), movable)

    @property
    def n_nodes(self) -> int:
        return len(self.node_ids)

    @cached_property
    def op_dlts(self) -> np.ndarray:
        """(operators x subintervals) DLTS of every operator, CPU-seconds per subinterval."""
        return self.model.operator_dlts()

    @cached_property
    def op_mean_load(self) -> np.ndarray:
        """Average load of every operator in reference CPU-seconds per second."""
        if self.op_dlts.shape[1] == 0:
            return np.zeros(len(self.operator_ids))
        return self.op_dlts.mean(axis=1) / self.topology.subinterval

    @cached_property
    def fixed(self) -> np.ndarray:
        """Indices of operators that stay where the topology places them."""
        mask = np.ones(len(self.operator_ids), dtype=bool)
        mask[self.movable] = False
        return np.flatnonzero(mask)

    def random_assignment(self, rng: np.random.Generator) -> np.ndarray:
        """Movable operators uniformly at random over the nodes, the rest as given."""
        assignment = self.base_assignment.copy()
        assignment[self.movable] = rng.integers(0, self.n_nodes, size=self.movable.size)
        return assignment

    def placement_of(self, assignment: np.ndarray) -> dict[str, str]:
        return {o: self.node_ids[int(assignment[k])] for k, o in enumerate(self.operator_ids)}

    def evaluator(self, assignment: np.ndarray) -> PlacementEvaluator:
        return PlacementEvaluator(self.topology, self.model, self.placement_of(assignment))

    @cached_property
    def has_link_resources(self) -> bool:
        """Whether finite-bandwidth links add network resources to the estimate."""
        return any(lk.bandwidth is not None for lk in self.topology.links)

    def score(self, assignment: np.ndarray) -> float:
        """MaceWC of an assignment, network resources included when there are any."""
        if self.has_link_resources:
            return self.full_mace_wc(self.placement_of(assignment))
        return self.evaluator(assignment).mace_wc

    def full_mace_wc(self, placement: Mapping[str, str]) -> float:
        """MaceWC over every resource, network links included (what ``estimate`` reports)."""
        return PlacementEvaluator(self.topology, self.model, placement).estimate().worst_case

    def result(
        self,
        algorithm: str,
        assignment: np.ndarray,
        clock: Clock,
        evaluations: int,
        time_to_best: float | None = None,
        **details: Any,
    ) -> PlacementResult:
        """Package an assignment, computing its MaceWC with the full estimator."""
        placement = self.placement_of(assignment)
        seconds = clock.elapsed()
        return PlacementResult(
            algorithm=algorithm,
            placement=placement,
            mace_wc=self.full_mace_wc(placement),
            seconds=seconds,
            evaluations=evaluations,
            time_to_best=seconds if time_to_best is None else time_to_best,
            nodes_used=len(set(placement.values())),
            details=details,
        )


class Clock:
    """Wall-clock budget of one run."""

    def __init__(self, budget: float):
        if not budget > 0:
            raise ModelError(f"placement: the time budget must be positive, got {budget}")
        self.budget = float(budget)
        self.start = time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def expired(self) -> bool:
        return self.elapsed() >= self.budget

    def fraction(self) -> float:
        return min(1.0, self.elapsed() / self.budget)


class PlacementAlgorithm(Protocol):
    """The call signature shared by every entry of ``ALGORITHMS``."""

    def __call__(
        self,
        problem: PlacementProblem,
        *,
        budget: float,
        rng: np.random.Generator,
        progress: Progress | None = None,
    ) -> PlacementResult: ...


def correlation(series: np.ndarray, others: np.ndarray) -> np.ndarray:
    """Pearson correlation of one series with each row of ``others`` (0 where a variance is 0)."""
    x = series - series.mean()
    y = others - others.mean(axis=-1, keepdims=True)
    denominator = np.sqrt((x * x).sum() * (y * y).sum(axis=-1))
    numerator = y @ x
    with np.errstate(invalid="ignore", divide="ignore"):
        safe = np.where(denominator > 0, denominator, 1.0)
        rho = np.where(denominator > 1e-12, numerator / safe, 0.0)
    return np.asarray(rho, dtype=float)
