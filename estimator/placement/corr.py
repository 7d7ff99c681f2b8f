"""Corr: load-correlation placement after Xing et al. (ICDE'05).

As the Mace and potential-driven papers describe it: balance the average load
across nodes, minimize each node's load variance and maximize the correlation
between node load series. Operators are taken in descending average load;
each goes to a node with room under its balanced share (average load in
proportion to capacity, plus ``slack``) where the correlation score
``(rho(o, S - N) - rho(o, N)) / 2`` is largest: low correlation with the
node's own load (so peaks do not stack) and high correlation with the rest of
the system (so node loads rise and fall together).
"""

from __future__ import annotations

import numpy as np

from estimator.placement.common import (
    Clock,
    PlacementProblem,
    PlacementResult,
    Progress,
    correlation,
)


def average_node_correlation(node_series: np.ndarray) -> float:
    """Mean pairwise correlation of the non-constant node load series (1 if fewer than two)."""
    live = node_series[node_series.std(axis=1) > 1e-12]
    if len(live) < 2:
        return 1.0
    matrix = np.corrcoef(live)
    upper = np.triu_indices(len(live), k=1)
    return float(matrix[upper].mean())


def corr(
    problem: PlacementProblem,
    *,
    budget: float,
    rng: np.random.Generator,
    progress: Progress | None = None,
    slack: float = 0.05,
) -> PlacementResult:
    """Greedy correlation-based placement (deterministic).

    If the budget runs out, the remaining operators are placed by load balance alone.
    """
    clock = Clock(budget)
    series = problem.op_dlts
    mean = problem.op_mean_load
    caps = problem.capacities
    assignment = problem.base_assignment.copy()
    node_series = np.zeros((problem.n_nodes, series.shape[1]))
    node_mean = np.zeros(problem.n_nodes)
    for op in problem.fixed:
        node_series[assignment[op]] += series[op]
        node_mean[assignment[op]] += mean[op]
    share = mean.sum() * caps / caps.sum() * (1 + slack)
    order = problem.movable[np.argsort(-mean[problem.movable], kind="stable")]
    evaluations = 0
    for op in order:
        fits = np.flatnonzero(node_mean + mean[op] <= share)
        if fits.size == 0:
            fits = np.array([int(np.argmin((node_mean + mean[op]) / caps))])
        utilization = (node_mean[fits] + mean[op]) / caps[fits]
        if clock.expired():  # out of budget: balance only
            score = np.zeros(fits.size)
        else:
            total = node_series.sum(axis=0)
            own = correlation(series[op], node_series[fits])
            rest = correlation(series[op], total[None, :] - node_series[fits])
            score = (rest - own) / 2
        choice = int(fits[np.lexsort((utilization, -score))[0]])
        assignment[op] = choice
        node_series[choice] += series[op]
        node_mean[choice] += mean[op]
        evaluations += fits.size
    result = problem.result(
        "corr",
        assignment,
        clock,
        evaluations,
        node_correlation=average_node_correlation(node_series),
    )
    if progress is not None:
        progress(1.0, result.mace_wc)
    return result
