"""Baseline (one uniform random placement) and Random (best of many within the budget)."""

from __future__ import annotations

import math

import numpy as np

from estimator.placement.common import Clock, PlacementProblem, PlacementResult, Progress


def baseline(
    problem: PlacementProblem,
    *,
    budget: float,
    rng: np.random.Generator,
    progress: Progress | None = None,
) -> PlacementResult:
    """Every movable operator on a node drawn uniformly at random."""
    clock = Clock(budget)
    assignment = problem.random_assignment(rng)
    result = problem.result("baseline", assignment, clock, 1)
    if progress is not None:
        progress(1.0, result.mace_wc)
    return result


def random_search(
    problem: PlacementProblem,
    *,
    budget: float,
    rng: np.random.Generator,
    progress: Progress | None = None,
    max_placements: int | None = None,
) -> PlacementResult:
    """The best of uniform random placements drawn until the budget is spent."""
    clock = Clock(budget)
    best_assignment = problem.base_assignment
    best_wc = math.inf
    best_time = 0.0
    evaluations = 0
    while True:
        assignment = problem.random_assignment(rng)
        wc = problem.score(assignment)
        evaluations += 1
        if wc < best_wc:
            best_wc, best_assignment, best_time = wc, assignment, clock.elapsed()
        if progress is not None and evaluations % 20 == 0:
            progress(clock.fraction(), best_wc)
        if clock.expired() or problem.movable.size == 0 or best_wc <= 0:
            break
        if max_placements is not None and evaluations >= max_placements:
            break
    if progress is not None:
        progress(1.0, best_wc)
    return problem.result("random", best_assignment, clock, evaluations, best_time)
