"""PD-greedy: potential-driven greedy initial mapping (Wang et al., SSPS'08).

Operators are taken in descending load; each goes to the host where its
potential energy PE = w_l * PE_l + w_c * PE_c + w_n * PE_n is lowest, given the
operators placed so far:

- load PE: ``ld/q`` below the host's quota ``q``, ``1 + p * (ld/q - 1)`` above
  (``p`` the overload penalty, 20 in the paper). ``ld`` is the host's average
  load with the operator, in fractions of its capacity; a node capacity C is
  the paper's heterogeneous speed (capacity coefficient alpha = 1/C).
- correlation PE: the correlation of the operator's load series with the sum of
  the host's other operators' series (0 on an empty host).
- network PE: for every stream between the operator and an already placed
  neighbour on another host, ``c(l) = d_l`` (delay in milliseconds, the
  paper's unit) while the link's utilization ``u_l`` is at most 1, ``d_l * u_l``
  above. Node pairs without a declared link cost nothing. Each stream is
  counted once, when the later of its two operators is placed.

The paper's recommended weights (100, 1, 0.001) are the defaults.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from estimator.errors import ModelError
from estimator.placement.common import (
    Clock,
    PlacementProblem,
    PlacementResult,
    Progress,
    correlation,
)

DEFAULT_WEIGHTS = (100.0, 1.0, 0.001)


def load_potential(ratio: np.ndarray, penalty: float) -> np.ndarray:
    """PE_l of the paper: linear up to the quota, steep (slope ``penalty``) above it."""
    return np.where(ratio < 1.0, ratio, 1.0 + penalty * (ratio - 1.0))


def pd_greedy(
    problem: PlacementProblem,
    *,
    budget: float,
    rng: np.random.Generator,
    progress: Progress | None = None,
    weights: tuple[float, float, float] = DEFAULT_WEIGHTS,
    quotas: Mapping[str, float] | None = None,
    overload_penalty: float = 20.0,
) -> PlacementResult:
    """Greedy minimum-potential placement (deterministic).

    If the budget runs out, the remaining operators are placed on load and network
    potential alone.
    """
    clock = Clock(budget)
    topology = problem.topology
    quota = np.ones(problem.n_nodes)
    for node, value in (quotas or {}).items():
        if node not in problem.node_index:
            raise ModelError(f"pd-greedy quotas: unknown node '{node}'")
        if not 0 < value <= 1:
            raise ModelError(f"pd-greedy quotas: quota of '{node}' must be in (0, 1], got {value}")
        quota[problem.node_index[node]] = value
    w_load, w_corr, w_net = weights
    series = problem.op_dlts
    mean = problem.op_mean_load
    caps = problem.capacities
    bytes_rate = _output_bytes_rate(problem)
    links = {(lk.src, lk.dst): lk for lk in topology.links}
    traffic: dict[tuple[int, int], float] = {}

    assignment = problem.base_assignment.copy()
    placed = np.zeros(len(problem.operator_ids), dtype=bool)
    node_series = np.zeros((problem.n_nodes, series.shape[1]))
    node_mean = np.zeros(problem.n_nodes)
    neighbours = _streams(problem)

    def place(op: int, host: int) -> None:
        assignment[op] = host
        placed[op] = True
        node_series[host] += series[op]
        node_mean[host] += mean[op]
        for producer, consumer in neighbours[op]:
            other = consumer if producer == op else producer
            if placed[other] and assignment[producer] != assignment[consumer]:
                pair = (int(assignment[producer]), int(assignment[consumer]))
                traffic[pair] = traffic.get(pair, 0.0) + bytes_rate[producer]

    def link_cost(src: int, dst: int, extra: float) -> float:
        link = links.get((problem.node_ids[src], problem.node_ids[dst]))
        if link is None:
            return 0.0
        delay_ms = link.delay * 1000.0
        if link.bandwidth is None:
            return delay_ms
        utilization = (traffic.get((src, dst), 0.0) + extra) / link.bandwidth
        return delay_ms if utilization <= 1.0 else delay_ms * utilization

    for op in problem.fixed:
        place(int(op), int(assignment[op]))
    order = problem.movable[np.argsort(-mean[problem.movable], kind="stable")]
    for op in order:
        ratio = (node_mean + mean[op]) / caps / quota
        pe_load = load_potential(ratio, overload_penalty)
        if clock.expired():  # out of budget: the remaining operators skip correlation
            pe_corr = np.zeros(problem.n_nodes)
        else:
            pe_corr = correlation(series[op], node_series)
        pe_net = np.zeros(problem.n_nodes)
        if links:
            for host in range(problem.n_nodes):
                for producer, consumer in neighbours[op]:
                    other = consumer if producer == op else producer
                    if not placed[other] or assignment[other] == host:
                        continue
                    src, dst = (
                        (host, int(assignment[other]))
                        if producer == op
                        else (
                            int(assignment[other]),
                            host,
                        )
                    )
                    pe_net[host] += link_cost(src, dst, bytes_rate[producer])
        potential = w_load * pe_load + w_corr * pe_corr + w_net * pe_net
        choice = int(np.lexsort((ratio, potential))[0])
        place(int(op), choice)
    result = problem.result("pd-greedy", assignment, clock, problem.movable.size * problem.n_nodes)
    if progress is not None:
        progress(1.0, result.mace_wc)
    return result


def _output_bytes_rate(problem: PlacementProblem) -> np.ndarray:
    """Average bytes per second each operator emits."""
    model = problem.model
    if model.intervals == 0:
        return np.zeros(len(problem.operator_ids))
    rates = (model.op_output @ model.basis).mean(axis=1)
    sizes = np.array([op.event_bytes for op in problem.topology.operators])
    return np.asarray(rates * sizes / problem.topology.subinterval, dtype=float)


def _streams(problem: PlacementProblem) -> list[list[tuple[int, int]]]:
    """Per operator, the (producer, consumer) operator pairs it takes part in."""
    index = problem.op_index
    streams: list[list[tuple[int, int]]] = [[] for _ in problem.operator_ids]
    for op in problem.topology.operators:
        for upstream in op.inputs:
            if upstream in index:
                pair = (index[upstream], index[op.id])
                streams[pair[0]].append(pair)
                streams[pair[1]].append(pair)
    return streams
