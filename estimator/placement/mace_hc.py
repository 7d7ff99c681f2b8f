"""Mace-HC (paper Fig. 6(a)): random restarts plus hill-climbing on MaceWC.

Each restart draws a uniform random placement, then repeatedly moves one
operator off the bottleneck node (the node with the highest CE/C at the worst
subinterval) to the node where the move lowers MaceWC most (or, with
``first_improvement``, to the first improving move found), until no move off
the bottleneck improves. Among moves that leave MaceWC unchanged, one that
lowers the sum of the nodes' peak CE/C also counts as improving, so the climb
walks off plateaus where several nodes share the maximum.

A move changes only two nodes' DLTS, so all targets of one operator are
evaluated together in one compiled pass (:func:`estimator.kernels.target_scores`):
the source row once, each target row, and the untouched nodes from the
evaluator's per-subinterval top three of CE/C. Committing a move rewrites two
rows of the evaluator's state and repairs its top three
(:meth:`PlacementEvaluator.apply_move`), so a step costs O(targets x d), not a
pass over every node.
"""

from __future__ import annotations

import math

import numpy as np

from estimator.evaluator import PlacementEvaluator
from estimator.placement.common import (
    Clock,
    PlacementProblem,
    PlacementResult,
    Progress,
)

IMPROVEMENT = 1e-9


def _slack(value: float) -> float:
    """What counts as equal when comparing MaceWC values (rounding of the cumulative sums)."""
    return IMPROVEMENT * (1.0 + abs(value))


class HillClimber:
    """Hill-climbing state around one :class:`PlacementEvaluator`."""

    def __init__(self, problem: PlacementProblem, evaluator: PlacementEvaluator):
        from estimator.kernels import target_scores  # numba loads with the first climber

        self.problem = problem
        self.evaluator = evaluator
        self._target_scores = target_scores
        self.assignment = np.array(
            [problem.node_index[evaluator.placement[o]] for o in problem.operator_ids]
        )
        self.movable_mask = np.zeros(len(problem.operator_ids), dtype=bool)
        self.movable_mask[problem.movable] = True
        self.exact_links = problem.has_link_resources
        self.evaluations = 0
        self._sync()

    def _sync(self) -> None:
        self.peaks = self.evaluator.peaks
        self.peak_sum = float(self.peaks.sum())
        if self.exact_links:
            self.mace_wc = self.problem.full_mace_wc(self.evaluator.placement)
        else:
            self.mace_wc = self.evaluator.mace_wc

    def bottleneck(self) -> int:
        """The node with the highest CE/C at the worst subinterval (lowest index on ties)."""
        if not self.evaluator.mace.size:
            return 0
        worst = int(np.argmax(self.evaluator.mace))
        return int(self.evaluator.top3[1][0, worst])

    def targets(self, bottleneck: int, limit: int) -> np.ndarray:
        """Candidate target nodes: all, or the ``limit`` with least backlog and load."""
        nodes = np.arange(self.problem.n_nodes)
        if nodes.size <= limit + 1:
            return nodes[nodes != bottleneck]
        utilization = self.evaluator.node_dlts.sum(axis=1) / self.problem.capacities
        order = np.lexsort((utilization, self.peaks))
        return order[order != bottleneck][:limit]

    def target_mace_wc(self, op: int, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """MaceWC, and the sum over nodes of peak CE/C, after moving ``op`` to each target."""
        src = int(self.assignment[op])
        self.evaluations += targets.size
        if self.exact_links:
            values = np.empty(targets.size)
            for k, dst in enumerate(targets):
                trial = dict(self.evaluator.placement)
                trial[self.problem.operator_ids[op]] = self.problem.node_ids[int(dst)]
                values[k] = self.problem.full_mace_wc(trial)
            return values, np.full(targets.size, self.peak_sum)
        evaluator = self.evaluator
        top_values, top_rows = evaluator.top3
        values, dst_peaks, src_peak = self._target_scores(
            evaluator.node_coef,
            self.problem.model.op_load[op],
            self.problem.model.basis,
            evaluator.service,
            evaluator.capacities,
            top_values,
            top_rows,
            src,
            np.asarray(targets, dtype=np.int64),
        )
        peak_sums = self.peak_sum - self.peaks[src] + src_peak - self.peaks[targets] + dst_peaks
        return values, peak_sums

    def step(self, rng: np.random.Generator, first_improvement: bool, max_targets: int) -> bool:
        """One move off the bottleneck node; False at a local optimum."""
        bottleneck = self.bottleneck()
        candidates = np.flatnonzero((self.assignment == bottleneck) & self.movable_mask)
        if first_improvement:
            candidates = rng.permutation(candidates)
        targets = self.targets(bottleneck, max_targets)
        if targets.size == 0:
            return False
        # improving: MaceWC lower, or MaceWC not higher and the sum of node peaks lower
        # (the tie-break walks off plateaus where several nodes share the maximum)
        best = (self.mace_wc + _slack(self.mace_wc), self.peak_sum - _slack(self.peak_sum), -1, -1)
        for op in candidates:
            values, peak_sums = self.target_mace_wc(int(op), targets)
            k = int(np.lexsort((peak_sums, values))[0])
            better = values[k] < best[0] - 2 * _slack(best[0]) or (
                values[k] <= best[0] and peak_sums[k] < best[1]
            )
            if better:
                best = (float(values[k]), float(peak_sums[k]), int(op), int(targets[k]))
                if first_improvement:
                    break
        if best[2] < 0:
            return False
        _, _, mover, dst = best
        self.evaluator.apply_move(self.problem.operator_ids[mover], self.problem.node_ids[dst])
        self.assignment[mover] = dst
        self._sync()
        return True


def mace_hc(
    problem: PlacementProblem,
    *,
    budget: float,
    rng: np.random.Generator,
    progress: Progress | None = None,
    first_improvement: bool = False,
    max_targets: int = 32,
    max_steps: int = 10_000,
    patience: int = 50,
    significant: float = 1e-3,
) -> PlacementResult:
    """Random-restart hill-climbing on MaceWC within ``budget`` seconds.

    Stops when the budget is spent or when ``patience`` restarts in a row have
    not improved the best MaceWC by more than the relative ``significant``.
    With more than ``max_targets`` nodes, moves go to the ``max_targets`` nodes
    with the least backlog (then least load), which keeps a step O(targets * d)
    however large the cluster.
    """
    from estimator.kernels import warm_up  # numba loads when placement runs, not on import

    warm_up()
    clock = Clock(budget)
    best_assignment = problem.base_assignment
    best_wc = math.inf
    best_time = 0.0
    evaluations = 0
    restarts = 0
    stale = 0
    while True:
        climber = HillClimber(problem, problem.evaluator(problem.random_assignment(rng)))
        evaluations += 1
        steps = 0
        while (
            steps < max_steps
            and not clock.expired()
            and climber.step(rng, first_improvement, max_targets)
        ):
            steps += 1
        evaluations += climber.evaluations
        restarts += 1
        if climber.mace_wc < best_wc * (1 - significant):
            stale = 0
        else:
            stale += 1
        if climber.mace_wc < best_wc:
            best_wc = climber.mace_wc
            best_assignment = climber.assignment.copy()
            best_time = clock.elapsed()
        if progress is not None:
            progress(clock.fraction(), best_wc)
        if clock.expired() or stale >= patience or best_wc <= 0 or problem.movable.size == 0:
            break
    return problem.result(
        "mace-hc", best_assignment, clock, evaluations, best_time, restarts=restarts
    )
