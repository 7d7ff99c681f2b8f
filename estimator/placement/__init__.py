"""Operator placement and planning (docs/design.md, "Placement and planning"; Mace paper
section IX).

``ALGORITHMS`` maps the names the command line and the dashboard use to the
algorithms; each is pure (no I/O) and takes a :class:`PlacementProblem`, a time
budget in seconds, a seeded ``numpy.random.Generator`` and an optional
``progress(fraction, best_mace_wc)`` callback.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping

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
    max_moves: int | None = None,
) -> PlacementResult:
    """Run one named algorithm on a topology and arrival series; the result moves no
    operator for nothing, and at most ``max_moves`` operators when given."""
    if algorithm not in ALGORITHMS:
        raise ModelError(
            f"unknown placement algorithm '{algorithm}' (expected one of {', '.join(ALGORITHMS)})"
        )
    problem = PlacementProblem.from_arrivals(topology, arrivals, movable)
    generator = rng if rng is not None else np.random.default_rng()
    found = ALGORITHMS[algorithm](problem, budget=budget, rng=generator, progress=progress)
    kept = fewest_moves(problem, found)
    return kept if max_moves is None else capped(problem, kept, max_moves)


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


def moves(problem: PlacementProblem, placement: Mapping[str, str]) -> list[str]:
    """The operators ``placement`` puts on another node than the current one."""
    current = problem.topology.placement
    return [op for op in problem.operator_ids if placement[op] != current[op]]


def capped(problem: PlacementProblem, found: PlacementResult, max_moves: int) -> PlacementResult:
    """``found`` with at most ``max_moves`` operators moved: while more are moved, the
    move whose undoing leaves the lowest MaceWC is undone (ties: topology order). Greedy,
    so not proven the best placement of that many moves; never worse than the current
    placement, which is kept when no capped placement beats it."""
    if isinstance(max_moves, bool) or not isinstance(max_moves, int) or max_moves < 0:
        raise ModelError(f"max moves: expected a whole number >= 0, got {max_moves!r}")
    current = dict(problem.topology.placement)
    placement = dict(found.placement)
    moved = moves(problem, placement)
    if len(moved) <= max_moves:
        return found
    while len(moved) > max_moves:
        trials = [
            (problem.full_mace_wc({**placement, op: current[op]}), k) for k, op in enumerate(moved)
        ]
        _, k = min(trials)
        operator = moved.pop(k)
        placement[operator] = current[operator]
    wc = problem.full_mace_wc(placement)
    if problem.full_mace_wc(current) <= wc + SAME_MACE_WC:
        placement, wc = current, problem.full_mace_wc(current)
    return dataclasses.replace(
        found,
        placement=placement,
        mace_wc=wc,
        nodes_used=len(set(placement.values())),
        details={**found.details, "max_moves": max_moves},
    )


__all__ = [
    "ALGORITHMS",
    "DEFAULT_BUDGET",
    "PlacementAlgorithm",
    "PlacementProblem",
    "PlacementResult",
    "Progress",
    "capped",
    "fewest_moves",
    "moves",
    "place",
]
