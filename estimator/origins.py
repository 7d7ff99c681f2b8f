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
of bucket s, and x_{o<-u}(s) of it on the ports fed by u. Work fed by a source (or by
an operator with no work in that bucket) is available at the start of step s; work
fed by operator u arrives as u is served: per unit of u's bucket-s work served,
x_{o<-u}(s) / x_u(s), never more than x_{o<-u}(s) in all. Every step, each node
serves C d of the work present on its operators, oldest stimulus bucket first
(stimulus-time scheduling) and, within a bucket, operators in topological order;
passes over the nodes repeat until nothing more can be served in the step, so work
handed on within a step is served in it (from where the node's clock stands: a piece
can finish up to a step before it would have arrived, never idling the node; a
version that made each piece wait for its arrival overestimated a saturated chain by
30%). f_o(s) is the time operator o served the last of its bucket-s work; the
latency of bucket s at o is max(0, f_o(s) - (s + 1) d), that of subinterval p the
largest over its k buckets; a query's is the largest over its sinks (the operators
whose outputs leave the system), the system's the largest over the queries.

Where x_o(s) comes from. The work of each operator input port per subinterval
(``port_work``, inputs x D in the rows of :attr:`Topology.input_offsets`: the
measured ``operator_stats`` CPU of a stored run, or the model's load of a
prediction) is spread over the subinterval's k buckets like the work of the node
the operator runs on (``node_fine``: the stored ``node_profile``, or for a prediction
the profile the model gives from the stored ``source_profile``): x = port work x
node_fine(p, j) / node CPU(p). Without a profile every bucket gets 1/k of it (the
paper's A-2 inside the subinterval).

State. :func:`origin_latency` replays bucket by bucket and keeps, per operator and
input port, only the buckets that are still pending somewhere (a ring over the
window from the oldest bucket any node still serves to the current one, grown when
a backlog outgrows it, by half its size): memory operators x window, not operators x
D x k. A step where no work is pending and no node's work of its bucket exceeds C d is
skipped (everything is served in its own step: latency 0).

Properties (tested against plain loops, ``tests/estimator/test_origins.py``): it
equals the replay holding every bucket (the prototype); with every operator fed by a
source it is the burst-aware peak backlog / C (the Lindley recursion at sub-bucket
resolution, where every bucket has work); on a two-node tandem it is within one step
of a fluid replay at a much finer time step. It is *not* a lower bound (a piece
handed on within a step is served up to a step early), and not monotone in the
load in general (see the tests). Cost: docs/accuracy.md (``bench_burst.py``).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from numba import njit

from estimator.errors import ModelError
from estimator.model import Topology


def origin_latency(
    topology: Topology,
    port_work: np.ndarray,
    node_fine: np.ndarray | None,
    sub_buckets: int,
    placement: Mapping[str, str] | None = None,
) -> np.ndarray:
    """Latency per query (rows in ``topology.queries``) and subinterval, seconds.

    ``port_work`` is CPU-seconds per operator input port and subinterval (inputs x D,
    rows of :attr:`Topology.input_offsets`); ``node_fine`` the CPU-seconds of each node
    (topology order) per subinterval and sub-bucket (nodes x D x k), or None for an
    even spread over ``sub_buckets``. Operators run where ``placement`` (default the
    topology's) puts them."""
    where = placement or topology.placement
    inputs = topology.input_offsets[-1]
    work = np.ascontiguousarray(port_work, dtype=float)
    if work.ndim != 2 or work.shape[0] != inputs:
        raise ModelError(f"per-origin: port work of shape {work.shape}, expected ({inputs}, D)")
    intervals = work.shape[1]
    nodes = len(topology.node_ids)
    if node_fine is None:
        fine = np.zeros((0, 0, 0))
        k = sub_buckets
    else:
        fine = np.ascontiguousarray(node_fine, dtype=float)
        if fine.ndim != 3 or fine.shape[:2] != (nodes, intervals):
            raise ModelError(
                f"per-origin: profile of shape {fine.shape}, expected ({nodes}, {intervals}, k)"
            )
        k = fine.shape[2]
    if k < 1:
        raise ModelError(f"per-origin: sub_buckets must be at least 1, got {k}")
    index = topology.operator_index
    ops = len(index)
    node_of = np.array([topology.node_index[where[o]] for o in topology.operator_ids])
    # inside the kernel operators are numbered node by node, in topological order within
    # a node: a node's operators are a contiguous stretch of every per-operator row
    order = np.array([index[o] for o in topology.topological_order], dtype=np.int64)
    by_node = np.concatenate([order[node_of[order] == i] for i in range(nodes)])
    renumber = np.empty(ops, dtype=np.int64)
    renumber[by_node] = np.arange(ops)
    node_start = np.searchsorted(node_of[by_node], np.arange(nodes + 1)).astype(np.int64)
    offsets = np.array(topology.input_offsets, dtype=np.int64)
    row_op = renumber[np.repeat(np.arange(ops, dtype=np.int64), np.diff(offsets))]
    row_up = np.array(
        [renumber[index[u]] if u in index else -1 for op in topology.operators for u in op.inputs],
        dtype=np.int64,
    )
    key = np.where(row_up < 0, ops, row_up)
    out_rows = np.argsort(key, kind="stable").astype(np.int64)
    out_start = np.searchsorted(key[out_rows], np.arange(ops + 1)).astype(np.int64)
    query_row = {q: r for r, q in enumerate(topology.queries)}
    sink_query = np.full(ops, -1, dtype=np.int64)
    for o in topology.sinks:
        sink_query[renumber[index[o]]] = query_row[topology.operator_by_id[o].query]
    caps = np.array([n.capacity for n in topology.nodes], dtype=float)
    # ring slots the state may take, the old ring and the grown one together while it
    # grows: pending (operators) plus owed and ratio (input ports)
    max_slots = max(2 * BLOCK, MAX_STATE_BYTES // (8 * (ops + 2 * len(row_op))))
    out, window = _replay(
        work,
        row_op,
        row_up,
        out_rows,
        out_start,
        fine,
        k,
        node_of[by_node].astype(np.int64),
        node_start,
        caps,
        topology.subinterval / k,
        sink_query,
        len(query_row),
        max_slots,
    )
    if window > 0:
        raise ModelError(
            f"per-origin: a backlog window of {window * topology.subinterval / k:g} s "
            f"({window} sub-buckets) needs more than {MAX_STATE_BYTES / 2**30:g} GiB of "
            "replay state; use the burst or mace estimator for this run"
        )
    return out


MAX_STATE_BYTES = 8 * 2**30
"""The largest replay state (operators and ports x backlog window, the old ring and the
grown one together while it grows): a clear error past it rather than a process that
runs out of memory."""

BLOCK = 64
"""Ring slots per block: a node's scan skips a block where none of its operators has work."""

RECEIVED = 8
"""Buckets a node that has served all it had in a step remembers receiving afterwards."""


@njit(cache=True, nogil=True)
def _replay(
    port_work: np.ndarray,
    row_op: np.ndarray,
    row_up: np.ndarray,
    out_rows: np.ndarray,
    out_start: np.ndarray,
    node_fine: np.ndarray,
    k: int,
    node_of: np.ndarray,
    node_start: np.ndarray,
    capacity: np.ndarray,
    delta: float,
    sink_query: np.ndarray,
    queries: int,
    max_slots: int,
) -> tuple[np.ndarray, int]:
    rows, intervals = port_work.shape
    ops = node_of.size
    n = capacity.size
    buckets = intervals * k
    even = node_fine.shape[0] == 0
    out = np.zeros((queries, intervals))
    total_work = 0.0
    for r in range(rows):
        for p in range(intervals):
            total_work += port_work[r, p]
    tolerance = 1e-12 * max(total_work, 1.0)
    # The pending window [lo, step] lives in rings of `size` buckets (slot = bucket % size,
    # size a multiple of BLOCK); per node, `busy` counts its operators with work in a slot
    # and `blocks` its busy slots in a block of BLOCK slots, so scans skip empty stretches.
    size = BLOCK
    pending = np.zeros((size, ops))
    owed = np.zeros((size, rows))
    ratio = np.zeros((size, rows))
    busy = np.zeros((n, size), dtype=np.int32)
    blocks = np.zeros((n, size // BLOCK), dtype=np.int32)
    first = np.zeros(n, dtype=np.int64)
    clock = np.zeros(n)
    dirty = np.zeros(n, dtype=np.bool_)
    emptied = np.zeros(n, dtype=np.bool_)
    received = np.zeros(n, dtype=np.int64)
    inbox = np.zeros((n, RECEIVED), dtype=np.int64)
    node_cpu = np.zeros(n)
    scale = np.zeros((n, k))
    calm = np.zeros(k, dtype=np.bool_)  # per bucket of the subinterval: no node above C d
    fine = np.zeros(rows)
    column = np.zeros(rows)
    op_work = np.zeros(ops)
    remaining = 0.0  # work present on the operators
    offered = 0.0  # all work of the buckets replayed so far
    limit = -1
    step = 0
    while limit < 0 or step < limit:
        if step >= buckets and remaining <= tolerance:
            break
        if step == buckets:
            # each step from here serves min(C d, what is left) on some node: a bound
            # that only guards the loop
            limit = buckets + n * (int(np.ceil(offered / (capacity.min() * delta))) + 2)
        if step < buckets and step % k == 0:
            p = step // k
            node_cpu[:] = 0.0
            for r in range(rows):
                column[r] = port_work[r, p]
                node_cpu[node_of[row_op[r]]] += column[r]
            calm[:] = True
            for i in range(n):
                for j in range(k):
                    if even:
                        scale[i, j] = 1.0 / k
                    elif node_cpu[i] > 0.0:
                        scale[i, j] = node_fine[i, p, j] / node_cpu[i]
                    else:
                        scale[i, j] = 0.0
                    if node_cpu[i] * scale[i, j] > capacity[i] * delta * (1.0 + 1e-12):
                        calm[j] = False
        if step < buckets and calm[step % k] and remaining <= tolerance:
            # nothing pending and no node with more than C d of this bucket: everything
            # of it is served in its own step (no latency, nothing left)
            remaining = 0.0
            for i in range(n):
                first[i] = step + 1
            step += 1
            continue
        lo = step
        for i in range(n):
            lo = min(lo, first[i])
        if step - lo + 1 > size:
            # by half the size (whole blocks), or just what the window needs when that
            # is all the limit leaves room for: the old and new rings coexist while copying
            needed = (step - lo + BLOCK) // BLOCK * BLOCK
            grown = max(needed, (size + size // 2 + BLOCK - 1) // BLOCK * BLOCK)
            if size + grown > max_slots:
                grown = needed
            if size + grown > max_slots:
                return out, step - lo + 1
            new_pending = np.zeros((grown, ops))
            new_owed = np.zeros((grown, rows))
            new_ratio = np.zeros((grown, rows))
            new_busy = np.zeros((n, grown), dtype=np.int32)
            new_blocks = np.zeros((n, grown // BLOCK), dtype=np.int32)
            for b in range(lo, step):
                new_pending[b % grown] = pending[b % size]
                new_owed[b % grown] = owed[b % size]
                new_ratio[b % grown] = ratio[b % size]
                new_busy[:, b % grown] = busy[:, b % size]
                for i in range(n):
                    if busy[i, b % size] > 0:
                        new_blocks[i, (b % grown) // BLOCK] += 1
            pending, owed, ratio, size = new_pending, new_owed, new_ratio, grown
            busy, blocks = new_busy, new_blocks
        end = (step + 1) * delta
        if step < buckets:
            slot = step % size
            j = step % k
            op_work[:] = 0.0
            for r in range(rows):
                i = node_of[row_op[r]]
                fine[r] = column[r] * scale[i, j]
                op_work[row_op[r]] += fine[r]
            pending[slot] = 0.0
            for i in range(n):
                if busy[i, slot] > 0:  # a slot is reused only once nothing is left in it
                    blocks[i, slot // BLOCK] -= 1
                    busy[i, slot] = 0
            for r in range(rows):
                o, u = row_op[r], row_up[r]
                owed[slot, r] = 0.0
                ratio[slot, r] = 0.0
                if fine[r] <= 0.0:
                    continue
                offered += fine[r]
                if u < 0 or op_work[u] <= 0.0:
                    i = node_of[o]
                    if pending[slot, o] <= 0.0:
                        busy[i, slot] += 1
                        if busy[i, slot] == 1:
                            blocks[i, slot // BLOCK] += 1
                    pending[slot, o] += fine[r]
                    remaining += fine[r]
                    dirty[i] = True
                else:
                    owed[slot, r] = fine[r]
                    ratio[slot, r] = fine[r] / op_work[u]
        top = min(step, buckets - 1)
        clock[:] = step * delta
        emptied[:] = False
        received[:] = 0
        for _ in range(ops + 1):  # passes until no node has work it has not looked at
            visited = False
            for i in range(n):
                if not dirty[i]:
                    continue
                dirty[i] = False
                visited = True
                # a node that served everything it had this step scans only the buckets
                # it received since (a trickle from a slow upstream node is one bucket)
                listed = emptied[i] and received[i] <= RECEIVED
                count = received[i]
                if listed:
                    for a in range(1, count):  # insertion sort of a few buckets
                        value, b = inbox[i, a], a - 1
                        while b >= 0 and inbox[i, b] > value:
                            inbox[i, b + 1] = inbox[i, b]
                            b -= 1
                        inbox[i, b + 1] = value
                received[i] = 0
                cursor = 0
                s = first[i]
                while clock[i] < end:
                    if listed:
                        if cursor >= count:
                            break
                        s = inbox[i, cursor]
                        cursor += 1
                        if cursor > 1 and s == inbox[i, cursor - 2]:
                            continue
                    elif s > top:
                        break
                    slot = s % size
                    if busy[i, slot] == 0:
                        if not listed:
                            if blocks[i, slot // BLOCK] == 0:
                                s = (s // BLOCK + 1) * BLOCK  # slots and buckets align
                            else:
                                s += 1
                        continue
                    unseen = busy[i, slot]  # operators with work here not yet reached
                    for o in range(node_start[i], node_start[i + 1]):
                        if unseen == 0 or clock[i] >= end:
                            break
                        amount = pending[slot, o]
                        if amount <= 0.0:
                            continue
                        unseen -= 1
                        served = min(amount, (end - clock[i]) * capacity[i])
                        left = amount - served
                        if left > tolerance:
                            pending[slot, o] = left
                        else:
                            pending[slot, o] = 0.0
                            busy[i, slot] -= 1
                            if busy[i, slot] == 0:
                                blocks[i, slot // BLOCK] -= 1
                        remaining -= amount - pending[slot, o]
                        done = clock[i] + served / capacity[i]
                        clock[i] = done
                        q = sink_query[o]
                        if q >= 0 and served > tolerance:
                            late = done - (s + 1) * delta
                            if late > out[q, s // k]:
                                out[q, s // k] = late
                        for e in range(out_start[o], out_start[o + 1]):
                            r = out_rows[e]
                            sent = min(served * ratio[slot, r], owed[slot, r])
                            if sent <= 0.0:
                                continue
                            owed[slot, r] -= sent
                            d = row_op[r]
                            nd = node_of[d]
                            if pending[slot, d] <= 0.0:
                                busy[nd, slot] += 1
                                if busy[nd, slot] == 1:
                                    blocks[nd, slot // BLOCK] += 1
                                if nd == i:  # a later operator of this node, same bucket
                                    unseen += 1
                            pending[slot, d] += sent
                            remaining += sent
                            dirty[nd] = True
                            if s < first[nd]:
                                first[nd] = s
                            if received[nd] < RECEIVED:
                                inbox[nd, received[nd]] = s
                                received[nd] += 1
                            else:
                                received[nd] = RECEIVED + 1  # too many: scan instead
                    if not listed:
                        s += 1
                emptied[i] = clock[i] < end
            if not visited:
                break
        for i in range(n):
            while first[i] < top and busy[i, first[i] % size] == 0:
                if blocks[i, (first[i] % size) // BLOCK] == 0:
                    first[i] = min((first[i] // BLOCK + 1) * BLOCK, top)
                else:
                    first[i] += 1
            if busy[i, first[i] % size] > 0:  # work left: the node serves on next step
                dirty[i] = True
        step += 1
    return out, 0
