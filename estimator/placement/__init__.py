"""Operator placement and planning (docs/design.md, "Placement and planning"; Mace paper
section IX).

``ALGORITHMS`` maps the names the command line and the dashboard use to the
algorithms; each is pure (no I/O) and takes a :class:`PlacementProblem`, a time
budget in seconds, a seeded ``numpy.random.Generator`` and an optional
``progress(fraction, best_mace_wc)`` callback.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection

import numpy as np

from estimator.arrivals import Arrivals
from estimator.errors import ModelError
from estimator.model import Topology
from estimator.placement.common import (
    PlacementAlgorithm,
    PlacementProblem,
    PlacementResult,
    Progress,
)
from estimator.placement.corr import corr
from estimator.placement.fugu import fugu
from estimator.placement.mace_hc import mace_hc
from estimator.placement.pd_greedy import pd_greedy
from estimator.placement.random_search import baseline, random_search

ALGORITHMS: dict[str, PlacementAlgorithm] = {
    "mace-hc": mace_hc,
    "baseline": baseline,
    "random": random_search,
    "corr": corr,
    "pd-greedy": pd_greedy,
    "fugu": fugu,
}

DEFAULT_BUDGET = 5.0
SAME_MACE_WC = 1e-9
"""Seconds: two MaceWC closer than this are the same (a move must gain more)."""


def place(
    topology: Topology,
    arrivals: Arrivals | np.ndarray,
    algorithm: str = "mace-hc",
    *,
    budget: float = DEFAULT_BUDGET,
    rng: np.random.Generator | None = None,
    movable: Collection[str] | None = None,
    progress: Progress | None = None,
) -> PlacementResult:
    """Run one named algorithm on a topology and arrival series."""
    if algorithm not in ALGORITHMS:
        raise ModelError(
            f"unknown placement algorithm '{algorithm}' (expected one of {', '.join(ALGORITHMS)})"
        )
    problem = PlacementProblem.from_arrivals(topology, arrivals, movable)
    generator = rng if rng is not None else np.random.default_rng()
    found = ALGORITHMS[algorithm](problem, budget=budget, rng=generator, progress=progress)
    return fewest_moves(problem, found)


def fewest_moves(problem: PlacementProblem, found: PlacementResult) -> PlacementResult:
    """``found`` with every move that buys nothing undone: the current placement when it
    is as good (a search ends anywhere on a plateau of equal MaceWC), else each moved
    operator, in topology order, put back where it is when that keeps MaceWC."""
    current = dict(problem.topology.placement)
    best = found.mace_wc
    if problem.full_mace_wc(current) <= best + SAME_MACE_WC:
        placement = current
    else:
        placement = dict(found.placement)
        for op_id in problem.operator_ids:
            if placement[op_id] == current[op_id]:
                continue
            trial = {**placement, op_id: current[op_id]}
            value = problem.full_mace_wc(trial)
            if value <= best + SAME_MACE_WC:
                placement, best = trial, min(best, value)
    if placement == found.placement:
        return found
    return dataclasses.replace(
        found,
        placement=placement,
        mace_wc=problem.full_mace_wc(placement),
        nodes_used=len(set(placement.values())),
        details={**found.details, "moves_undone": sum(
            placement[o] != found.placement[o] for o in placement
        )},
    )  # fmt: skip


__all__ = [
    "ALGORITHMS",
    "DEFAULT_BUDGET",
    "PlacementAlgorithm",
    "PlacementProblem",
    "PlacementResult",
    "Progress",
    "fewest_moves",
    "place",
]
