"""FUGU (Heinze et al.): first-fit bin packing with a utilization threshold and re-balancing.

Operators arrive in topological order (queries in file order) and go to the
first active node whose load stays under ``threshold`` times its capacity; a
node is opened only when none fits. Two re-balancing heuristics of the paper:

- on addition (eq. 3): when no node fits but the active nodes' total spare
  room would hold the operator, take the node whose spare room is closest to
  the operator's load, move off a smallest subset of its operators (found by
  enumerating subsets, the paper's subset-sum step) whose load is within
  ``[needed, needed + interval]`` to other active nodes by first fit, and put
  the operator there;
- consolidation (eq. 2): while more nodes are active than
  ``host_min`` (the fewest nodes whose thresholded capacity holds the total
  load), empty the least loaded node by first fit into the others.

Loads are operator averages (``statistic="mean"``) or the peak subinterval
(``"peak"``, the paper's worst-case estimate from the maximum source rate).
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

from estimator.errors import ModelError
from estimator.placement.common import Clock, PlacementProblem, PlacementResult, Progress

STATISTICS = ("mean", "peak")
DEFAULT_THRESHOLD = 0.85
"""The utilisation threshold of a node (share of its capacity) first fit fills up to."""


class _Bins:
    """Node loads, thresholded room and the operators each node holds."""

    def __init__(self, problem: PlacementProblem, load: np.ndarray, threshold: float):
        self.room = threshold * problem.capacities
        self.load = load
        self.used = np.zeros(problem.n_nodes)
        self.assignment = problem.base_assignment.copy()
        self.members: list[set[int]] = [set() for _ in range(problem.n_nodes)]
        self.active: list[int] = []

    def put(self, op: int, node: int) -> None:
        if node not in self.active:
            self.active.append(node)
        self.assignment[op] = node
        self.used[node] += self.load[op]
        self.members[node].add(op)

    def take(self, op: int) -> None:
        node = int(self.assignment[op])
        self.used[node] -= self.load[op]
        self.members[node].discard(op)

    def spare(self, node: int) -> float:
        return float(self.room[node] - self.used[node])

    def first_fit(self, op: int, exclude: int = -1) -> int:
        for node in self.active:
            if node != exclude and self.spare(node) >= self.load[op] - 1e-12:
                return node
        return -1


def fugu(
    problem: PlacementProblem,
    *,
    budget: float,
    rng: np.random.Generator,
    progress: Progress | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    statistic: str = "mean",
    rebalance: bool = True,
    interval: float = 0.1,
    max_subset: int = 3,
) -> PlacementResult:
    """First-fit placement; ``details`` reports ``nodes_needed``, ``host_min`` and ``overflow``."""
    if not 0 < threshold <= 1:
        raise ModelError(f"fugu: the utilization threshold must be in (0, 1], got {threshold}")
    if statistic not in STATISTICS:
        raise ModelError(f"fugu: unknown load statistic '{statistic}' (expected mean or peak)")
    clock = Clock(budget)
    if statistic == "mean" or problem.op_dlts.shape[1] == 0:
        load = problem.op_mean_load
    else:
        load = problem.op_dlts.max(axis=1) / problem.topology.subinterval
    bins = _Bins(problem, load, threshold)
    for op in problem.fixed:
        bins.put(int(op), int(bins.assignment[op]))
    movable = set(problem.movable.tolist())
    order = [problem.op_index[o] for o in problem.topology.topological_order]
    overflow = 0
    evaluations = 0
    for op in (k for k in order if k in movable):
        node = bins.first_fit(op)
        evaluations += len(bins.active)
        if node < 0 and rebalance and bins.active:
            total_spare = sum(bins.spare(n) for n in bins.active)
            if load[op] < total_spare:
                node = _make_room(bins, op, interval, max_subset, movable)
        if node < 0:
            idle = [n for n in range(problem.n_nodes) if n not in bins.active]
            fitting = [n for n in idle if bins.room[n] >= load[op]]
            node = (fitting or idle)[0] if idle else max(bins.active, key=bins.spare)
            if bins.room[node] - bins.used[node] < load[op]:
                overflow += 1
        bins.put(op, node)
    host_min = _host_min(bins.room, float(load.sum()))
    if rebalance:
        _consolidate(bins, host_min, movable)
    result = problem.result(
        "fugu",
        bins.assignment,
        clock,
        evaluations,
        nodes_needed=len(bins.active),
        host_min=host_min,
        overflow=overflow,
        threshold=threshold,
    )
    if progress is not None:
        progress(1.0, result.mace_wc)
    return result


def _host_min(room: np.ndarray, total: float) -> int:
    """Fewest nodes whose thresholded capacity holds ``total`` (paper eq. 2, heterogeneous)."""
    cumulative = np.cumsum(np.sort(room)[::-1])
    return min(int(np.searchsorted(cumulative, total - 1e-12)) + 1, len(room))


def _make_room(bins: _Bins, op: int, interval: float, max_subset: int, movable: set[int]) -> int:
    """Free the node with spare room closest to the operator's load; -1 if no subset works."""
    host = max(bins.active, key=bins.spare)
    needed = bins.load[op] - bins.spare(host)
    upper = needed + interval * bins.room[host]
    candidates = sorted(o for o in bins.members[host] if o in movable)
    for size in range(1, min(max_subset, len(candidates)) + 1):
        subsets = [
            s for s in combinations(candidates, size) if needed <= bins.load[list(s)].sum() <= upper
        ]
        for subset in sorted(subsets, key=lambda s: float(bins.load[list(s)].sum())):
            moved = _try_moves(bins, list(subset), host, reserve=(host, float(bins.load[op])))
            if moved:
                return host
    return -1


def _try_moves(bins: _Bins, ops: list[int], source: int, reserve: tuple[int, float]) -> bool:
    """Move ``ops`` off ``source`` by first fit, keeping ``reserve`` room; undo on failure."""
    for op in ops:
        bins.take(op)
    bins.used[reserve[0]] += reserve[1]
    done: list[int] = []
    for op in ops:
        target = bins.first_fit(op, exclude=source)
        if target < 0:
            break
        bins.put(op, target)
        done.append(op)
    bins.used[reserve[0]] -= reserve[1]
    if len(done) == len(ops):
        return True
    for op in done:
        bins.take(op)
    for op in ops:
        bins.put(op, source)
    return False


def _consolidate(bins: _Bins, host_min: int, movable: set[int]) -> None:
    """Release the least loaded nodes while more than ``host_min`` are active."""
    while len(bins.active) > host_min:
        node = min(bins.active, key=lambda n: bins.used[n])
        ops = sorted(bins.members[node], key=lambda o: -bins.load[o])
        if any(o not in movable for o in ops) or not _try_moves(bins, ops, node, (node, 0.0)):
            return
        bins.active.remove(node)
