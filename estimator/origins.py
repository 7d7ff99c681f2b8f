"""Per-origin backlog tracking: a fluid replay of the operators at sub-bucket resolution.

Why. Mace and the burst-aware estimate keep, per subinterval, the largest backlog
over nodes; when an event waits behind a backlog on one node and then behind another
downstream, they see only the larger wait (docs/accuracy.md, 2203/4: -12.9%). The
path-aware fluid model adds the waits but gates a node's whole work behind one
upstream node and overshoots (+42.5% there). Here each operator's work arrives only
as the operator feeding it (its *origin*) serves its own: a node's backlog delays
only the work that passes through it later.

The model. Time runs in steps of d = w / k (the sub-buckets of :mod:`estimator.burst`);
bucket s is the stimulus sub-bucket [s d, (s + 1) d). Operator o has x_o(s), its work
of bucket s, and x_{o<-u}(s) of it on the ports fed by u. Work fed by a source is
available at the start of step s; work fed by operator u arrives as u is served: per
unit of u's bucket-s work served, x_{o<-u}(s) / x_u(s), never more than x_{o<-u}(s) in
all. Every step, each node serves C d of the work present on its operators, oldest
stimulus bucket first (stimulus-time scheduling) and, within a bucket, operators in
topological order; passes over the nodes repeat until nothing more can be served in
the step, so work handed on within a step is served in it (from where the node's clock
stands: a piece can finish up to a step before it would have arrived, never idling the
node; an earlier version made each piece wait for its arrival, and that idle time
overestimated a saturated chain by 30%). f_o(s) is the time operator o served the last
of its bucket-s work; the latency of bucket s at o is max(0, f_o(s) - (s + 1) d), that
of subinterval p the largest over its k buckets; a query's is the largest over its
sinks (the operators whose outputs leave the system), a node's over its operators.

Where x_o(s) comes from. The stored profile is per node (``node_profile``);
:func:`operator_fine_work` splits a node's sub-bucket work over its operators and
their ports in proportion to their CPU in the subinterval (``operator_stats``).

Properties (tested against plain loops): with every operator fed by a source it is
the burst-aware peak backlog / C (the Lindley recursion at sub-bucket resolution,
where every bucket has work); on a two-node tandem it is within one step of a fluid
replay at a much finer time step. On simulated runs it follows the measured latency
(docs/accuracy.md). Cost: operators x steps x backlog window; a
prototype measured in docs/accuracy.md, not part of any registered estimator.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
from numba import njit

from estimator.model import Topology


def operator_fine_work(
    topology: Topology,
    node_fine: np.ndarray,
    cpu: pd.DataFrame,
    placement: Mapping[str, str],
) -> np.ndarray:
    """Work per operator port, subinterval and sub-bucket ((operators x max ports) x D x k,
    topology order): each node's sub-bucket work split over the ports of its operators
    in proportion to their CPU in the subinterval (``cpu`` holds operator_stats rows
    ``operator, port, interval, cpu_seconds``)."""
    n, intervals, _ = node_fine.shape
    ops = topology.operator_ids
    ports = max(len(o.inputs) for o in topology.operators)
    index = {o: j for j, o in enumerate(ops)}
    node_of = np.array([topology.node_ids.index(placement[o]) for o in ops], dtype=np.int64)
    per_port = np.zeros((len(ops), ports, intervals))
    if not cpu.empty:
        rows = cpu["operator"].map(index)
        when = cpu["interval"].to_numpy(dtype=np.int64)
        keep = rows.notna().to_numpy() & (when >= 0) & (when < intervals)
        np.add.at(
            per_port,
            (
                rows[keep].to_numpy(dtype=np.int64),
                cpu["port"].to_numpy(dtype=np.int64)[keep],
                when[keep],
            ),
            cpu["cpu_seconds"].to_numpy(dtype=float)[keep],
        )
    node_cpu = np.zeros((n, intervals))
    np.add.at(node_cpu, node_of, per_port.sum(axis=1))
    total = node_cpu[node_of]  # (ops, D)
    share = np.divide(
        per_port, total[:, None, :], out=np.zeros_like(per_port), where=total[:, None, :] > 0
    )
    return share[:, :, :, None] * node_fine[node_of][:, None, :, :]


def per_origin_latency(
    topology: Topology,
    port_fine: np.ndarray,
    placement: Mapping[str, str],
) -> np.ndarray:
    """Latency per node and subinterval (nodes x D, seconds): the largest of
    :func:`operator_latency` over the node's operators."""
    per_op = operator_latency(topology, port_fine, placement)
    node_of = np.array([topology.node_ids.index(placement[o]) for o in topology.operator_ids])
    out = np.zeros((len(topology.node_ids), per_op.shape[1]))
    np.maximum.at(out, node_of, per_op)
    return out


def sink_latency(topology: Topology, per_operator: np.ndarray) -> dict[str, np.ndarray]:
    """Per query, the largest :func:`operator_latency` over its sinks (operators no other
    operator reads): the latency of its outputs."""
    read = {u for op in topology.operators for u in op.inputs}
    rows = {o: j for j, o in enumerate(topology.operator_ids)}
    return {
        q: per_operator[[rows[o] for o in topology.operators_of_query(q) if o not in read]].max(
            axis=0
        )
        for q in topology.queries
    }


def operator_latency(
    topology: Topology,
    port_fine: np.ndarray,
    placement: Mapping[str, str],
) -> np.ndarray:
    """Latency per operator and subinterval (operators x D, seconds): the time the
    operator served the last of its work of each sub-bucket, less the sub-bucket's end,
    the largest over the subinterval's sub-buckets; from the work of every operator port
    per subinterval and sub-bucket (:func:`operator_fine_work`)."""
    ops = topology.operator_ids
    index = {o: j for j, o in enumerate(ops)}
    nodes = topology.node_ids
    _, _, intervals, k = port_fine.shape
    buckets = intervals * k
    flat = port_fine.reshape(len(ops), -1, buckets)
    work = flat.sum(axis=1)  # (ops, buckets)
    from_sources = np.zeros((len(ops), buckets))
    edge_up, edge_down, owed = [], [], []
    for j, op in enumerate(topology.operators):
        for port, upstream in enumerate(op.inputs):
            if upstream in index:
                edge_up.append(index[upstream])
                edge_down.append(j)
                owed.append(flat[j, port])
            else:
                from_sources[j] += flat[j, port]
    up = np.array(edge_up, dtype=np.int64)
    owed_matrix = np.array(owed).reshape(len(edge_up), buckets)
    ratio = np.divide(owed_matrix, work[up], out=np.zeros_like(owed_matrix), where=work[up] > 0)
    # work from an operator that has none of that bucket arrives as from a source
    np.add.at(
        from_sources, np.array(edge_down, dtype=np.int64), np.where(work[up] > 0, 0, owed_matrix)
    )
    owed_matrix = np.where(work[up] > 0, owed_matrix, 0.0)
    order = _topological(topology, index)
    node_of = np.array([nodes.index(placement[o]) for o in ops], dtype=np.int64)
    by_node = np.concatenate([order[node_of[order] == i] for i in range(len(nodes))])
    node_start = np.searchsorted(node_of[by_node], np.arange(len(nodes) + 1))
    out_order = np.argsort(up, kind="stable")
    out_start = np.searchsorted(up[out_order], np.arange(len(ops) + 1))
    caps = np.array([topology.capacity_by_node[n] for n in nodes], dtype=float)
    delta = topology.subinterval / k
    finish = _fluid_pass(
        from_sources,
        np.ascontiguousarray(ratio[out_order]),
        np.ascontiguousarray(owed_matrix[out_order]),
        np.array(edge_down, dtype=np.int64)[out_order],
        out_start,
        by_node,
        node_start,
        node_of,
        caps,
        delta,
        float(work.sum()),
    )
    ends = (np.arange(buckets) + 1) * delta
    wait = np.maximum(finish - ends[None, :], 0.0)
    return wait.reshape(len(ops), intervals, k).max(axis=2)


def _topological(topology: Topology, index: Mapping[str, int]) -> np.ndarray:
    """Operator rows in an order where every operator comes after its upstream ones."""
    placed: list[int] = []
    seen: set[str] = set()
    pending = list(topology.operators)
    while pending:
        rest = []
        for op in pending:
            if all(u in seen or u not in index for u in op.inputs):
                placed.append(index[op.id])
                seen.add(op.id)
            else:
                rest.append(op)
        pending = rest
    return np.array(placed, dtype=np.int64)


@njit(cache=True)
def _fluid_pass(
    from_sources: np.ndarray,
    ratio: np.ndarray,
    owed: np.ndarray,
    edge_down: np.ndarray,
    out_start: np.ndarray,
    by_node: np.ndarray,
    node_start: np.ndarray,
    node_of: np.ndarray,
    capacity: np.ndarray,
    delta: float,
    total_work: float,
) -> np.ndarray:
    ops, buckets = from_sources.shape
    n = capacity.size
    pending = np.zeros((ops, buckets))
    finish = np.full((ops, buckets), -np.inf)
    first = np.zeros(n, dtype=np.int64)
    clock = np.zeros(n)
    tolerance = 1e-12 * max(total_work, 1.0)
    remaining = 0.0
    # each step serves min(C d, what is left) on some node: a bound that only guards the loop
    limit = buckets + n * (int(np.ceil(total_work / (capacity.min() * delta))) + 2)
    step = 0
    while step < limit:
        if step >= buckets and remaining <= tolerance:
            break
        start, end = step * delta, (step + 1) * delta
        if step < buckets:
            for o in range(ops):
                if from_sources[o, step] > 0.0:
                    pending[o, step] += from_sources[o, step]
                    remaining += from_sources[o, step]
        clock[:] = start
        top = min(step, buckets - 1)
        for _ in range(ops + 1):  # passes until nothing more is served in this step
            progressed = False
            for i in range(n):
                s = first[i]
                while s <= top and clock[i] < end:
                    for idx in range(node_start[i], node_start[i + 1]):
                        o = by_node[idx]
                        amount = pending[o, s]
                        if amount <= 0.0 or clock[i] >= end:
                            continue
                        served = min(amount, (end - clock[i]) * capacity[i])
                        left = amount - served
                        pending[o, s] = left if left > tolerance else 0.0
                        remaining -= amount - pending[o, s]
                        done = clock[i] + served / capacity[i]
                        clock[i] = done
                        if served > tolerance:
                            finish[o, s] = max(finish[o, s], done)
                        progressed = True
                        for e in range(out_start[o], out_start[o + 1]):
                            sent = min(served * ratio[e, s], owed[e, s])
                            if sent <= 0.0:
                                continue
                            owed[e, s] -= sent
                            d = edge_down[e]
                            pending[d, s] += sent
                            remaining += sent
                            if s < first[node_of[d]]:
                                first[node_of[d]] = s
                    s += 1
            if not progressed:
                break
        for i in range(n):
            while first[i] < top:
                empty = True
                for idx in range(node_start[i], node_start[i + 1]):
                    if pending[by_node[idx], first[i]] > 0.0:
                        empty = False
                        break
                if not empty:
                    break
                first[i] += 1
        step += 1
    return finish
