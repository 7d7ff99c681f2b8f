"""Per-query trade-offs of a placement, and the "no query worse than X%" objective.

Placement algorithms minimise the system's worst case (MaceWC over every
query); that can make single queries much worse. :func:`query_worst_cases`
gives each query's worst case under a placement, :func:`too_much_worse` the
queries a candidate makes worse than allowed, and :func:`best_within_limit`
keeps the best placement whose every query stays within the limit, among
candidates that lie between the current placement and the placements the
algorithms found (see there). Everything here is pure.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from estimator.errors import ModelError
from estimator.evaluator import PlacementEvaluator
from estimator.placement.common import Clock, PlacementProblem

MAX_WORSE_PERCENT = 1000.0


def query_worst_cases(problem: PlacementProblem, placement: Mapping[str, str]) -> dict[str, float]:
    """Each query's worst case (MaceWC of the query, in seconds) under ``placement``."""
    estimate = PlacementEvaluator(problem.topology, problem.model, placement).estimate()
    worst = {q: float(s.max()) if s.size else 0.0 for q, s in estimate.per_query.items()}
    return {q: worst.get(q, 0.0) for q in problem.topology.queries}


def too_much_worse(
    before: Mapping[str, float], after: Mapping[str, float], max_worse_percent: float
) -> dict[str, float]:
    """The queries whose worst case rises by more than ``max_worse_percent`` percent,
    with their ratio after / before (inf when a query at 0 s becomes slower)."""
    if not math.isfinite(max_worse_percent) or max_worse_percent < 0:
        raise ModelError(f"query limit: expected a percentage >= 0, got {max_worse_percent!r}")
    limit = 1.0 + max_worse_percent / 100.0
    out: dict[str, float] = {}
    for query, old in before.items():
        new = after.get(query, 0.0)
        allowed = old * limit + 1e-12 * max(1.0, old)  # rounding noise is no change
        if new > allowed:
            out[query] = new / old if old > 0 else math.inf
    return out


def _walk_back(
    problem: PlacementProblem,
    found: Mapping[str, str],
    before: Mapping[str, float],
    max_worse_percent: float,
    clock: Clock,
) -> Iterable[dict[str, str]]:
    """Placements from ``found`` back towards the current one: each step returns one
    moved operator to its current node, the one whose return leaves the smallest
    worst ratio over the queries (ties: the smaller system worst case)."""
    current = dict(problem.topology.placement)
    placement = dict(found)
    yield dict(placement)
    moved = [op for op in problem.operator_ids if placement[op] != current[op]]
    while moved and not clock.expired():
        best: tuple[float, float, str] | None = None
        for op in moved:
            trial = {**placement, op: current[op]}
            worst = query_worst_cases(problem, trial)
            ratios = too_much_worse(before, worst, max_worse_percent)
            key = (max(ratios.values(), default=0.0), max(worst.values(), default=0.0), op)
            if best is None or key[:2] < best[:2]:
                best = key
        assert best is not None
        placement[best[2]] = current[best[2]]
        moved.remove(best[2])
        yield dict(placement)


def best_within_limit(
    problem: PlacementProblem,
    found: Iterable[Mapping[str, str]],
    max_worse_percent: float,
    budget: float = 10.0,
) -> tuple[dict[str, str], float]:
    """The placement with the smallest system worst case among those that make no query
    worse than ``max_worse_percent`` percent, and that worst case.

    Candidates are the current placement (always within the limit), each placement in
    ``found`` (e.g. the algorithms' results) and, for each of those that breaks the
    limit, the placements met by undoing its moves one operator at a time
    (:func:`_walk_back`, within ``budget`` seconds); the best of these steps is kept."""
    current = dict(problem.topology.placement)
    before = query_worst_cases(problem, current)
    best = (float(problem.full_mace_wc(current)), current)
    clock = Clock(budget)
    for placement in found:
        for candidate in _walk_back(problem, placement, before, max_worse_percent, clock):
            worst = query_worst_cases(problem, candidate)
            if too_much_worse(before, worst, max_worse_percent):
                continue
            system = problem.full_mace_wc(candidate)
            if system < best[0] - 1e-12 * max(1.0, best[0]):
                best = (system, candidate)
    return dict(best[1]), float(best[0])


__all__ = [
    "MAX_WORSE_PERCENT",
    "best_within_limit",
    "query_worst_cases",
    "too_much_worse",
]
