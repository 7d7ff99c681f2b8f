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

State. :func:`origin_latency` replays bucket by bucket and keeps, per operator, only
the buckets that are still pending somewhere (a ring over the window from the oldest
bucket any node still serves to the newest one with work, doubled when a backlog
outgrows it): memory operators x window, not operators x D x k. What a port fed by
an operator receives is not stored: it is the port's share of its upstream operator's
work in the subinterval, computed once, scaled by the two nodes' profiles in the
bucket. A step where no work is pending and no node's work of its bucket exceeds C d
is skipped (everything is served in its own step: latency 0). Per node, a bitmap of
its busy slots (and one bit per 64 slots above it) lets a node find its next bucket
with work a word at a time.

Both cores. From a bucket where nothing is pending anywhere the replay depends on
nothing before it, so a long run is replayed in two parts at once: the second from a
subinterval where no node has a backlog in the coarse Lindley recursion (likely empty),
from an empty state; the first replays on until the first subinterval start where
both found nothing pending, and the two are joined there (the figures are those of
one replay; see :func:`_split_replay`).

Properties (tested against plain loops, ``tests/estimator/test_origins.py``): it
equals the replay holding every bucket (the prototype); with every operator fed by a
source it is the burst-aware peak backlog / C (the Lindley recursion at sub-bucket
resolution, where every bucket has work); on a two-node tandem it is within one step
of a fluid replay at a much finer time step. It is *not* a lower bound (a piece
handed on within a step is served up to a step early), and not monotone in the
load in general (see the tests). Cost: docs/accuracy.md (``bench_burst.py``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, cast

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import trailing_zeros as _intrinsic_trailing_zeros

from estimator.errors import ModelError
from estimator.model import Topology


def origin_latency(
    topology: Topology,
    port_work: np.ndarray,
    node_fine: np.ndarray | None,
    sub_buckets: int,
    placement: Mapping[str, str] | None = None,
    source_fine: np.ndarray | None = None,
) -> np.ndarray:
    """Latency per query (rows in ``topology.queries``) and subinterval, seconds.

    ``port_work`` is CPU-seconds per operator input port and subinterval (inputs x D,
    rows of :attr:`Topology.input_offsets`). Inside a subinterval a port's work is
    spread like the events of the sources upstream of it when ``source_fine`` (events
    per source of :attr:`Topology.source_ids`, subinterval and sub-bucket: sources x D
    x k, the stored ``source_profile``) is given, else like the work of its node in
    ``node_fine`` (CPU-seconds per node in topology order, subinterval and sub-bucket:
    nodes x D x k), else evenly over ``sub_buckets``. Operators run where ``placement``
    (default the topology's) puts them."""
    where = placement or topology.placement
    inputs = topology.input_offsets[-1]
    work = np.ascontiguousarray(port_work, dtype=float)
    if work.ndim != 2 or work.shape[0] != inputs:
        raise ModelError(f"per-origin: port work of shape {work.shape}, expected ({inputs}, D)")
    intervals = work.shape[1]
    nodes = len(topology.node_ids)
    shares = np.zeros((0, 0, 0))
    row_source = np.full(inputs, -1, dtype=np.int64)
    if source_fine is not None:
        counts = np.asarray(source_fine, dtype=float)
        expected = (len(topology.source_ids), intervals)
        if counts.ndim != 3 or counts.shape[:2] != expected or counts.shape[2] < 1:
            raise ModelError(
                f"per-origin: source profile of shape {counts.shape}, expected "
                f"({expected[0]}, {expected[1]}, k)"
            )
        shares = source_shares(counts)
        source_row = {s: r for r, s in enumerate(topology.source_ids)}
        row_source = np.array(
            [source_row.get(u, -1) for op in topology.operators for u in op.inputs],
            dtype=np.int64,
        )
        node_fine = _spread_by_source(
            work,
            shares,
            row_source,
            np.array(
                [
                    topology.operator_index.get(u, -1)
                    for op in topology.operators
                    for u in op.inputs
                ],
                dtype=np.int64,
            ),
            np.array(topology.input_offsets, dtype=np.int64),
            np.array([topology.operator_index[o] for o in topology.topological_order]),
            np.array([topology.node_index[where[o]] for o in topology.operator_ids]),
            nodes,
        )
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
    # grows: per slot, the pending work of every operator, each node's busy count, share
    # of the bucket and bitmap bits, and the slot's subinterval
    per_slot = 8 * ops + 12 * nodes + 2 * nodes // BLOCK + 8
    max_slots = max(2 * BLOCK, MAX_STATE_BYTES // per_slot)
    op_work, node_cpu, share, total = _shares(
        work, row_op, row_up, out_rows, out_start[ops], nodes, node_of[by_node]
    )
    fixed = (
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
        op_work,
        node_cpu,
        share,
        total,
        shares,
        row_source,
    )
    out, window = _split_replay(fixed, caps * topology.subinterval, intervals, k, max_slots)
    if window > 0:
        raise ModelError(
            f"per-origin: a backlog window of {window * topology.subinterval / k:g} s "
            f"({window} sub-buckets) needs more than {MAX_STATE_BYTES / 2**30:g} GiB of "
            "replay state; use the burst or mace estimator for this run"
        )
    return out


def _split_replay(
    fixed: tuple[Any, ...], per_subinterval: np.ndarray, intervals: int, k: int, max_slots: int
) -> tuple[np.ndarray, int]:
    """The replay on both cores when the run is long enough: the second half from an empty
    state on another thread while this one replays from the start, until the first
    subinterval boundary where both found nothing pending (from there the two replays are
    the same); the first thread's figures before it, the second's from it. Without such a
    boundary the first thread replays everything. The second replay gets an eighth of the
    state limit; when the first needs more than the rest, or the second gave up before the
    boundary, the part left is replayed again on one core."""
    meet = np.zeros(intervals + 1, dtype=np.int8)
    replay = cast(Callable[..., tuple[np.ndarray, int, int]], _replay)
    if intervals < PARALLEL_FROM or (os.cpu_count() or 1) < 2:
        out, window, _ = replay(*fixed, 0, -1, meet, False, max_slots)
        return out, window
    split = _quiet_boundary(fixed[14], per_subinterval) * k
    with ThreadPoolExecutor(max_workers=1) as pool:
        second = pool.submit(replay, *fixed, split, -1, meet, True, max_slots // 8)
        out, window, stopped = replay(*fixed, 0, split, meet, False, max_slots - max_slots // 8)
        rest, gave_up, _ = second.result()
    if window > 0:
        out, window, _ = replay(*fixed, 0, -1, meet, False, max_slots)
    elif stopped >= 0:
        if gave_up > 0:
            rest, window, _ = replay(*fixed, stopped * k, -1, meet, False, max_slots)
        out[:, stopped:] = rest[:, stopped:]
    return out, window


@njit(cache=True, nogil=True)
def _quiet_boundary(node_cpu: np.ndarray, per_subinterval: np.ndarray) -> int:
    """Where the second thread starts: a subinterval at whose start no node has a backlog
    in the Lindley recursion over whole subintervals (the replay is then likely empty
    there too, so the two replays meet at once), the one that best halves the predicted
    cost (one per subinterval and one per node with a backlog in it); the cost's middle
    when there is none."""
    nodes, intervals = node_cpu.shape
    cost = np.ones(intervals + 1)
    cost[intervals] = 0.0
    quiet = np.ones(intervals + 1, dtype=np.bool_)
    for i in range(nodes):
        backlog = 0.0
        for p in range(intervals):
            if backlog > 0.0:
                quiet[p] = False
                cost[p] += 1.0
            backlog = max(0.0, backlog + node_cpu[i, p] - per_subinterval[i])
    half = cost.sum() / 2
    best, best_gap, middle, middle_gap, before = intervals // 2, np.inf, intervals // 2, np.inf, 0.0
    for p in range(1, intervals):
        before += cost[p - 1]
        gap = abs(before - half)
        if gap < middle_gap:
            middle, middle_gap = p, gap
        if quiet[p] and gap < best_gap:
            best, best_gap = p, gap
    return best if best_gap < np.inf else middle


trailing_zeros = cast(Callable[[int], int], _intrinsic_trailing_zeros)
"""Zero bits below the lowest set bit of a word (compiled code only)."""

PARALLEL_FROM = 256
"""Subintervals from which the replay runs on two threads (below, the thread costs more
than it saves)."""

MAX_STATE_BYTES = 8 * 2**30
"""The largest replay state (the pending work of every operator and each node's busy
counts x backlog window, the old ring and the grown one together while it grows): a
clear error past it rather than a process that runs out of memory."""

BLOCK = 64
"""Ring slots per word of a node's busy bitmap (the ring's size is a power of two, at
least this); a word of the summary bitmap covers BLOCK words, BLOCK * BLOCK slots."""

RECEIVED = 8
"""Buckets a node that has served all it had in a step remembers receiving afterwards."""


def source_shares(source_fine: np.ndarray) -> np.ndarray:
    """Each source's share of its subinterval's events per sub-bucket (sources x D x k;
    1/k in a subinterval without events)."""
    total = source_fine.sum(axis=2, keepdims=True)
    k = source_fine.shape[2]
    return np.where(total > 0, source_fine / np.where(total > 0, total, 1.0), 1.0 / k)


@njit(cache=True, nogil=True)
def _spread_by_source(
    port_work: np.ndarray,
    shares: np.ndarray,
    row_source: np.ndarray,
    row_up: np.ndarray,
    offsets: np.ndarray,
    order: np.ndarray,
    node_of: np.ndarray,
    nodes: int,
) -> np.ndarray:
    """The node work per subinterval and sub-bucket (nodes x D x k) when each port's work
    is spread like its source's events (``row_source``) or like the operator feeding it
    (``row_up``), an operator's spread being its ports' mixed by their work (1/k per
    sub-bucket where it has none). Operators in topological ``order``, rows in the
    ``offsets`` of each (original numbering)."""
    intervals = port_work.shape[1]
    k = shares.shape[2]
    fine = np.zeros((nodes, intervals, k))
    sigma = np.zeros((node_of.size, k))
    mixed = np.zeros(k)
    for p in range(intervals):
        for o in order:
            mixed[:] = 0.0
            weight = 0.0
            for r in range(offsets[o], offsets[o + 1]):
                x = port_work[r, p]
                if x <= 0.0:
                    continue
                weight += x
                for j in range(k):
                    if row_source[r] >= 0:
                        mixed[j] += x * shares[row_source[r], p, j]
                    else:
                        mixed[j] += x * sigma[row_up[r], j]
            i = node_of[o]
            for j in range(k):
                fine[i, p, j] += mixed[j]
                sigma[o, j] = mixed[j] / weight if weight > 0.0 else 1.0 / k
    return fine


@njit(cache=True, nogil=True)
def _shares(
    port_work: np.ndarray,
    row_op: np.ndarray,
    row_up: np.ndarray,
    out_rows: np.ndarray,
    handed: int,
    nodes: int,
    node_of: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Per subinterval: each operator's work (D x operators), each node's (nodes x D), the
    share of its upstream operator's work each hand-on carries (D x hand-ons, columns in
    ``out_rows`` order so that an operator's hand-ons are adjacent), and the total."""
    rows, intervals = port_work.shape
    op_work = np.zeros((intervals, node_of.size))
    node_cpu = np.zeros((nodes, intervals))
    total = 0.0
    for r in range(rows):
        o = row_op[r]
        i = node_of[o]
        for p in range(intervals):
            x = port_work[r, p]
            op_work[p, o] += x
            node_cpu[i, p] += x
            total += x
    share = np.zeros((intervals, handed))
    for e in range(handed):
        r = out_rows[e]
        u = row_up[r]
        for p in range(intervals):
            if op_work[p, u] > 0.0:
                share[p, e] = port_work[r, p] / op_work[p, u]
    return op_work, node_cpu, share, total


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
    op_work: np.ndarray,
    node_cpu: np.ndarray,
    share: np.ndarray,
    total_work: float,
    source_share: np.ndarray,
    row_source: np.ndarray,
    begin: int,
    split: int,
    meet: np.ndarray,
    record: bool,
    max_slots: int,
) -> tuple[np.ndarray, int, int]:
    """Replay from bucket ``begin`` (a subinterval's first, nothing pending before it):
    latency per query and subinterval, and the backlog window that did not fit in
    ``max_slots`` (0 when all did). ``record``: mark in ``meet`` every subinterval whose
    start finds nothing pending; else, from bucket ``split`` on, stop at the first such
    start that ``meet`` marks too and return its subinterval (-1 when it ran to the end)."""
    rows, intervals = port_work.shape
    ops = node_of.size
    n = capacity.size
    buckets = intervals * k
    even = node_fine.shape[0] == 0
    # spread like the sources upstream: a port's work of a bucket is its source's share
    # of the subinterval's events there (a port fed by an operator: that operator's, so
    # a hand-on carries its share of what is served); node_fine is then the node work
    # this implies, read only to find the buckets where no node has more than C d
    by_source = source_share.shape[0] > 0
    out = np.zeros((queries, intervals))
    tolerance = 1e-12 * max(total_work, 1.0)
    # A bucket's work on node i is node i's share sigma(i, bucket) of the subinterval's:
    # node_fine / node CPU, or 1/k without a profile. A port fed by operator u receives
    # share[p, e] x sigma(its node) / sigma(u's node) per unit of u's work served.
    # The pending window [lo, top] lives in rings of `size` buckets (slot = bucket % size,
    # size a power of two, at least BLOCK): an operator's work of a slot is
    # pending[slot * operators + operator] (a node's operators adjacent, a bucket's work
    # in one stretch); `busy[slot * nodes + i]` counts node i's operators with work in a
    # slot, bit slot % 64 of `bits[i * (size // 64) + slot // 64]` says whether it is > 0
    # and bit (slot // 64) % 64 of `summary[i * max(1, size // 4096) + slot // 4096]`
    # whether that word is, so a scan finds a node's next busy slot a word at a time. A
    # slot's work is exactly 0 once nothing is left in it: a slot is reused as it is.
    size = BLOCK
    pending = np.zeros(ops * size)
    busy = np.zeros(n * size, dtype=np.int32)
    bits = np.zeros(n * (size // BLOCK), dtype=np.int64)
    summary = np.zeros(n, dtype=np.int64)
    first = np.full(n, begin, dtype=np.int64)
    clock = np.zeros(n)
    dirty = np.zeros(n, dtype=np.bool_)
    emptied = np.zeros(n, dtype=np.bool_)
    received = np.zeros(n, dtype=np.int64)
    inbox = np.zeros((n, RECEIVED), dtype=np.int64)
    sigma_now = np.zeros((k, n))  # sigma of the current subinterval's buckets
    sigma_ring = np.zeros(size * n)  # per slot, its bucket's sigma of each node
    subinterval = np.zeros(size, dtype=np.int64)  # per slot, its bucket's subinterval
    inverse = 1.0 / capacity
    hand_op = row_op[out_rows]
    calm = np.zeros(k, dtype=np.bool_)  # per bucket of the subinterval: no node above C d
    offered_now = np.zeros(k)
    arriving = np.zeros(port_work.shape[0], dtype=np.int64)  # ports fed at the step's start
    arriving_work = np.zeros(port_work.shape[0])
    arrivals = 0
    silent = np.zeros((k, n), dtype=np.int64)  # nodes with work in the subinterval, none in j
    silent_count = np.zeros(k, dtype=np.int64)
    remaining = 0.0  # work present on the operators
    offered = 0.0  # all work of the buckets replayed so far
    limit = -1
    step = begin
    while limit < 0 or step < limit:
        if step >= buckets and remaining <= tolerance:
            break
        if step < buckets and step % k == 0 and remaining <= tolerance:
            if record:
                meet[step // k] = 1
            elif 0 <= split <= step and meet[step // k] == 1:
                return out, 0, step // k
        if step == buckets:
            # each step from here serves min(C d, what is left) on some node: a bound
            # that only guards the loop
            limit = buckets + n * (int(np.ceil(offered / (capacity.min() * delta))) + 2)
        if step < buckets and step % k == 0:
            p = step // k
            calm[:] = True
            offered_now[:] = 0.0
            silent_count[:] = 0
            for i in range(n):
                for j in range(k):
                    if even:
                        sigma = 1.0 / k
                    elif node_cpu[i, p] > 0.0:
                        sigma = node_fine[i, p, j] / node_cpu[i, p]
                        if sigma <= 0.0 and not by_source:
                            silent[j, silent_count[j]] = i
                            silent_count[j] += 1
                    else:
                        sigma = 0.0
                    sigma_now[j, i] = sigma
                    offered_now[j] += node_cpu[i, p] * sigma
                    if node_cpu[i, p] * sigma > capacity[i] * delta * (1.0 + 1e-12):
                        calm[j] = False
            # ports whose work is there at the start of each step: fed by a source or by
            # an operator without work in the subinterval
            arrivals = 0
            for r in range(rows):
                x = port_work[r, p]
                if x > 0.0 and (row_up[r] < 0 or op_work[p, row_up[r]] <= 0.0):
                    arriving[arrivals] = r
                    arriving_work[arrivals] = x
                    arrivals += 1
        if step < buckets and calm[step % k] and remaining <= tolerance:
            # nothing pending and no node with more than C d of this bucket: everything
            # of it is served in its own step (no latency, nothing left)
            remaining = 0.0
            for i in range(n):
                first[i] = step + 1
            step += 1
            continue
        top = min(step, buckets - 1)
        lo = top
        for i in range(n):
            lo = min(lo, first[i])
        if top - lo + 1 > size:
            # by half the size (whole blocks), or just what the window needs when that
            # is all the limit leaves room for: the old and new rings coexist while copying
            grown = 2 * size
            while grown < top - lo + 1:
                grown *= 2
            if size + grown > max_slots:
                return out, top - lo + 1, -1
            new_pending = np.zeros(ops * grown)
            new_busy = np.zeros(n * grown, dtype=np.int32)
            new_bits = np.zeros(n * (grown // BLOCK), dtype=np.int64)
            new_summary = np.zeros(n * max(1, grown >> 12), dtype=np.int64)
            new_sigma = np.zeros(grown * n)
            new_subinterval = np.zeros(grown, dtype=np.int64)
            for b in range(lo, step):
                old, new = b & (size - 1), b & (grown - 1)
                new_subinterval[new] = subinterval[old]
                new_sigma[new * n : (new + 1) * n] = sigma_ring[old * n : (old + 1) * n]
            for i in range(n):
                count = node_start[i + 1] - node_start[i]
                for b in range(first[i], min(step, top + 1)):  # bucket `step` is not in yet
                    old, new = b & (size - 1), b & (grown - 1)
                    if busy[old * n + i] == 0:
                        continue
                    new_busy[new * n + i] = busy[old * n + i]
                    new_bits[i * (grown // BLOCK) + (new >> 6)] |= 1 << (new & 63)
                    new_summary[i * max(1, grown >> 12) + (new >> 12)] |= 1 << ((new >> 6) & 63)
                    at, to = old * ops + node_start[i], new * ops + node_start[i]
                    for c in range(count):
                        new_pending[to + c] = pending[at + c]
            sigma_ring, subinterval = new_sigma, new_subinterval
            pending, busy, bits, summary, size = new_pending, new_busy, new_bits, new_summary, grown
        # per node: words of the busy bitmap, of its summary, and slots per summary word
        words, wide, span, mask = size // BLOCK, max(1, size >> 12), min(size, 1 << 12), size - 1
        end = (step + 1) * delta
        if step < buckets:
            j = step % k
            slot = step & mask
            offered += offered_now[j]
            subinterval[slot] = step // k
            sigma_ring[slot * n : (slot + 1) * n] = sigma_now[j]
            # the slot last held a bucket older than the window: clear what is left of it
            # (at most a residue below the tolerance); writing the row in one sweep also
            # brings it into the cache before this bucket's work lands in it
            pending[slot * ops : (slot + 1) * ops] = 0.0
            for i in range(n):
                if busy[slot * n + i] > 0:
                    busy[slot * n + i] = 0
                    word = i * words + (slot >> 6)
                    bits[word] &= ~(1 << (slot & 63))
                    if bits[word] == 0:
                        summary[i * wide + (slot >> 12)] &= ~(1 << ((slot >> 6) & 63))
            for a in range(arrivals + silent_count[j]):
                if a < arrivals:
                    r = arriving[a]
                    x = arriving_work[a]
                else:  # a node without work in bucket j: its hand-ons' work is there now
                    r, x = -1, 0.0
                    iu = silent[j, a - arrivals]
                    for u in range(node_start[iu], node_start[iu + 1]):
                        if op_work[step // k, u] <= 0.0:
                            continue
                        for e in range(out_start[u], out_start[u + 1]):
                            d = row_op[out_rows[e]]
                            w = port_work[out_rows[e], step // k] * sigma_now[j, node_of[d]]
                            if w <= 0.0:
                                continue
                            i = node_of[d]
                            at = slot * ops + d
                            if pending[at] <= 0.0:
                                if busy[slot * n + i] == 0:
                                    if bits[i * words + (slot >> 6)] == 0:
                                        summary[i * wide + (slot >> 12)] |= 1 << ((slot >> 6) & 63)
                                    bits[i * words + (slot >> 6)] |= 1 << (slot & 63)
                                busy[slot * n + i] += 1
                            pending[at] += w
                            remaining += w
                            dirty[i] = True
                    continue
                o = row_op[r]
                i = node_of[o]
                if not by_source:
                    x *= sigma_now[j, i]
                elif row_source[r] >= 0:
                    x *= source_share[row_source[r], step // k, j]
                else:  # fed by an operator without work in the subinterval
                    x /= k
                if x <= 0.0:
                    continue
                at = slot * ops + o
                if pending[at] <= 0.0:
                    if busy[slot * n + i] == 0:
                        if bits[i * words + (slot >> 6)] == 0:
                            summary[i * wide + (slot >> 12)] |= 1 << ((slot >> 6) & 63)
                        bits[i * words + (slot >> 6)] |= 1 << (slot & 63)
                    busy[slot * n + i] += 1
                pending[at] += x
                remaining += x
                dirty[i] = True
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
                start, stop = node_start[i], node_start[i + 1]
                while clock[i] < end:
                    if listed:
                        if cursor >= count:
                            break
                        s = inbox[i, cursor]
                        cursor += 1
                        if cursor > 1 and s == inbox[i, cursor - 2]:
                            continue
                    else:
                        while s <= top:  # the next bucket from s with work on node i, if any
                            slot = s & mask
                            word = bits[i * words + (slot >> 6)] >> (slot & 63)
                            if word != 0:
                                s += trailing_zeros(word)
                                break
                            s += BLOCK - (slot & 63)  # the next word, then past empty words
                            slot = s & mask
                            word = summary[i * wide + (slot >> 12)] >> ((slot >> 6) & 63)
                            if word != 0:
                                s += BLOCK * trailing_zeros(word)
                            else:
                                s += span - (slot & (span - 1))
                        if s > top:
                            break
                    slot = s & mask
                    here = slot * n + i
                    if busy[here] == 0:
                        continue
                    p = subinterval[slot]
                    sigmas = slot * n  # this bucket's sigma of each node
                    base = slot * ops
                    unseen = busy[here]  # operators with work here not yet reached
                    for o in range(start, stop):
                        if unseen == 0 or clock[i] >= end:
                            break
                        amount = pending[base + o]
                        if amount <= 0.0:
                            continue
                        unseen -= 1
                        served = min(amount, (end - clock[i]) * capacity[i])
                        left = amount - served
                        if left > tolerance:
                            pending[base + o] = left
                        else:
                            pending[base + o] = 0.0
                            busy[here] -= 1
                            if busy[here] == 0:
                                word = i * words + (slot >> 6)
                                bits[word] &= ~(1 << (slot & 63))
                                if bits[word] == 0:
                                    summary[i * wide + (slot >> 12)] &= ~(1 << ((slot >> 6) & 63))
                        remaining -= amount - pending[base + o]
                        done = clock[i] + served * inverse[i]
                        clock[i] = done
                        q = sink_query[o]
                        if q >= 0 and served > tolerance:
                            late = done - (s + 1) * delta
                            if late > out[q, p]:
                                out[q, p] = late
                        per_sigma = 0.0 if even or by_source else served / sigma_ring[sigmas + i]
                        for e in range(out_start[o], out_start[o + 1]):
                            part = share[p, e]
                            if part <= 0.0:
                                continue
                            d = hand_op[e]
                            nd = node_of[d]
                            if even or by_source:  # both operators' share of a bucket agree
                                sent = served * part
                            else:
                                sent = per_sigma * part * sigma_ring[sigmas + nd]
                            if sent <= 0.0:
                                continue
                            there = slot * n + nd
                            at = slot * ops + d
                            if pending[at] <= 0.0:
                                if busy[there] == 0:
                                    if bits[nd * words + (slot >> 6)] == 0:
                                        summary[nd * wide + (slot >> 12)] |= 1 << ((slot >> 6) & 63)
                                    bits[nd * words + (slot >> 6)] |= 1 << (slot & 63)
                                busy[there] += 1
                                if nd == i:  # a later operator of this node, same bucket
                                    unseen += 1
                            pending[at] += sent
                            remaining += sent
                            if nd == i:
                                # served in this loop over the bucket: no visit to mark,
                                # and node i's own inbox is being read
                                continue
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
            s = first[i]
            while s <= top:  # the next bucket from s with work on node i, if any
                slot = s & mask
                word = bits[i * words + (slot >> 6)] >> (slot & 63)
                if word != 0:
                    s += trailing_zeros(word)
                    break
                s += BLOCK - (slot & 63)  # the next word, then past empty words
                slot = s & mask
                word = summary[i * wide + (slot >> 12)] >> ((slot >> 6) & 63)
                if word != 0:
                    s += BLOCK * trailing_zeros(word)
                else:
                    s += span - (slot & (span - 1))
            first[i] = min(s, top)
            if busy[(first[i] & mask) * n + i] > 0:  # work left: the node serves next step
                dirty[i] = True
        step += 1
    return out, 0, -1
