"""The fast engine: the reference semantics as a numba-compiled event loop.

Same rules as :mod:`simulator.reference` (read its docstring), on a
struct-of-arrays state: an event pool with a free list, singly linked FIFO
lists per operator for the operator-visiting policies (round-robin,
longest-queue, min-latency, min-cost), and one heap of timed events.

The key-ordered policies (stimulus, fifo, subinterval) pick the queued event
with the least (key, counter) at the node. Rather than one heap per node, the
engine keeps a FIFO per input port, which stays sorted because events reach a
port almost always in key order (the paper's k-FIFO scheme, section VI-A),
and a small per-node overflow heap for the rare event that arrives out of
order at its port (possible after network delays). The next event is the
least of the port FIFO heads and the heap top: the same choice as one heap.

Source events are merged from their sorted array instead of being pushed on
the timed heap (their counters 0..N-1 precede every other counter,
so at equal times they come first, exactly as in the reference). Compilation
is cached on disk (``cache=True``).

Placement changes: the placement-dependent arrays come as one row per placement
epoch (``*_e``), and the engine switches rows at each change time (before any
event at that time). A delivery carries the epoch it was sent in (in its count
field), so it reaches the consumers placed at its node then.

Speed: numba reference-counts arrays with atomic operations, and its pruning
pass misses most of them in a loop this size (numba issues 2345, 2350). Two
rules keep them out of the event loop, which spent over half its time in them:
the loop never reassigns an array (it stops before an event the pools have no
room for, or at a placement change; an outer loop grows the pools or switches
the epoch's rows and resumes it), and the helpers it calls with arrays
(``_before``, the heaps, ``_enqueue``) are compiled without the runtime
(``_nrt=False``: they only read and write arrays they are given, never allocate).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np
from numba import njit

from simulator.plan import (
    CONSTANT,
    LONGEST_QUEUE,
    MIN_COST,
    MIN_LATENCY,
    ROUND_ROBIN,
    STIMULUS,
    SUBINTERVAL,
    UNIFORM,
    Plan,
)
from simulator.trace import Trace

# the event loop's helpers that take arrays: compiled without numba's runtime, so no
# reference counting (they never allocate; ``_nrt`` is numba's own, unstubbed, option)
_no_runtime = njit(cache=True, _nrt=False)  # type: ignore[call-overload]

ARRIVAL, COMPLETION, DELIVERY, CHANGE = 0, 1, 2, 3
DONE, GROW = 0, 1  # why the event loop stopped (or CHANGE)
_U64 = np.uint64


@njit(cache=True, inline="always")
def _uniform(key: np.uint64, index: int) -> float:
    z = key + _U64(index + 1) * _U64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> _U64(30))) * _U64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> _U64(27))) * _U64(0x94D049BB133111EB)
    z = z ^ (z >> _U64(31))
    return float(z >> _U64(11)) * (1.0 / 9007199254740992.0)


@_no_runtime
def _before(k1: np.ndarray, k2: np.ndarray, a: int, b: int) -> bool:
    return k1[a] < k1[b] or (k1[a] == k1[b] and k2[a] < k2[b])


@_no_runtime
def _heap_push(heap: np.ndarray, size: int, item: int, k1: np.ndarray, k2: np.ndarray) -> None:
    i = size
    heap[i] = item
    while i > 0:
        parent = (i - 1) >> 1
        if _before(k1, k2, heap[i], heap[parent]):
            heap[i], heap[parent] = heap[parent], heap[i]
            i = parent
        else:
            break


@_no_runtime
def _heap_pop(heap: np.ndarray, size: int, k1: np.ndarray, k2: np.ndarray) -> int:
    top = heap[0]
    size -= 1
    heap[0] = heap[size]
    i = 0
    while True:
        left = 2 * i + 1
        if left >= size:
            break
        child = left
        if left + 1 < size and _before(k1, k2, heap[left + 1], heap[left]):
            child = left + 1
        if _before(k1, k2, heap[child], heap[i]):
            heap[i], heap[child] = heap[child], heap[i]
            i = child
        else:
            break
    return top


@njit(cache=True)
def _grow1(a: np.ndarray, n: int) -> np.ndarray:
    out = np.empty(max(n, 2 * a.shape[0]), a.dtype)
    out[: a.shape[0]] = a
    return out


@njit(cache=True)
def _grow2(a: np.ndarray, n: int) -> np.ndarray:
    out = np.empty((a.shape[0], max(n, 2 * a.shape[1])), a.dtype)
    out[:, : a.shape[1]] = a
    return out


@_no_runtime
def _enqueue(
    qs, there, by_op, policy, origin, subinterval, port_op, q_key, q_seq, q_stim, q_port,
    q_next, op_head, op_tail, op_count, node_queued, port_head, port_tail, node_heap, node_size,
):  # fmt: skip
    """Queue the pooled event ``qs`` (its counter, stimulus and port set) at node ``there``
    (its overflow heap has room for one more); returns that heap's size (0 if untouched)."""
    port = q_port[qs]
    if by_op[there]:
        op = port_op[port]
        q_next[qs] = -1
        if op_tail[op] >= 0:
            q_next[op_tail[op]] = qs
        else:
            op_head[op] = qs
        op_tail[op] = qs
        op_count[op] += 1
        return 0
    pol = policy[there]
    if pol == STIMULUS:
        q_key[qs] = q_stim[qs]
    elif pol == SUBINTERVAL:
        q_key[qs] = float(math.floor((q_stim[qs] - origin) / subinterval))
    else:
        q_key[qs] = 0.0
    node_queued[there] += 1
    tail = port_tail[port]
    if tail < 0 or q_key[qs] >= q_key[tail]:
        q_next[qs] = -1
        if tail >= 0:
            q_next[tail] = qs
        else:
            port_head[port] = qs
        port_tail[port] = qs
        return 0
    _heap_push(node_heap[there], node_size[there], qs, q_key, q_seq)
    node_size[there] += 1
    return node_size[there]


@njit(cache=True)
def _take_queued(
    op, node, by_op, op_first_port, op_ports, port_op, q_key, q_seq, q_port, q_next, op_head,
    op_tail, op_count, port_head, port_tail, node_heap, node_size, node_queued, q_used,
):  # fmt: skip
    """Remove every queued event of operator ``op`` from ``node``; returns their pool slots
    in counter order (the order they were first queued)."""
    moved = np.empty(q_used, np.int64)
    n_moved = 0
    if by_op[node]:
        qs = op_head[op]
        while qs >= 0:
            moved[n_moved] = qs
            n_moved += 1
            qs = q_next[qs]
        op_head[op] = -1
        op_tail[op] = -1
        op_count[op] = 0
    else:
        for port in range(op_first_port[op], op_first_port[op] + op_ports[op]):
            qs = port_head[port]
            while qs >= 0:
                moved[n_moved] = qs
                n_moved += 1
                qs = q_next[qs]
            port_head[port] = -1
            port_tail[port] = -1
        size = node_size[node]
        kept = np.empty(size, np.int64)
        n_kept = 0
        for h in range(size):
            qs = node_heap[node, h]
            if port_op[q_port[qs]] == op:
                moved[n_moved] = qs
                n_moved += 1
            else:
                kept[n_kept] = qs
                n_kept += 1
        node_size[node] = 0
        for h in range(n_kept):
            _heap_push(node_heap[node], node_size[node], kept[h], q_key, q_seq)
            node_size[node] += 1
        node_queued[node] -= n_moved
    out = moved[:n_moved]
    return out[np.argsort(q_seq[out])]


@njit(cache=True)
def _migrate(
    old, new, mark, position, left, by_op, policy, origin, subinterval, op_first_port, op_ports,
    port_op, q_key, q_seq, q_stim, q_port, q_next, op_head, op_tail, op_count, port_head,
    port_tail, node_heap, node_size, node_queued, q_used, heap_max,
):  # fmt: skip
    """A placement change from ``old`` to ``new`` (operator -> node): the queued events of
    each moved operator go to its new node in counter order; the nodes involved restart
    their visiting cycle and the new ones are marked for dispatch. The node heaps must have
    room for ``q_used`` more events; returns the largest heap size (``heap_max`` at least)."""
    for op in range(old.shape[0]):
        was = old[op]
        dest = new[op]
        if was == dest:
            continue
        position[was] = -1
        left[was] = 0
        position[dest] = -1
        left[dest] = 0
        mark[dest] = True
        moved = _take_queued(
            op, was, by_op, op_first_port, op_ports, port_op, q_key, q_seq, q_port, q_next,
            op_head, op_tail, op_count, port_head, port_tail, node_heap, node_size, node_queued,
            q_used,
        )  # fmt: skip
        for qs in moved:
            size = _enqueue(
                qs, dest, by_op, policy, origin, subinterval, port_op, q_key, q_seq, q_stim,
                q_port, q_next, op_head, op_tail, op_count, node_queued, port_head, port_tail,
                node_heap, node_size,
            )  # fmt: skip
            heap_max = max(heap_max, size)
    return heap_max


# the scalars of an engine state: slots of ``EngineState.ints`` and ``EngineState.floats``
(
    I_EPOCH, I_NEXT_CHANGE, I_N_FREE, I_Q_USED, I_HEAP_MAX, I_TN_FREE, I_T_USED, I_TSIZE,
    I_COUNTER, I_CHANGED, I_EXECUTIONS,
) = range(11)  # fmt: skip
F_NOW = 0
_GROWN = (
    "q_key", "q_seq", "q_stim", "q_port", "q_next", "q_free", "node_heap", "t_time", "t_seq",
    "t_kind", "t_node", "t_item", "t_stim", "t_count", "t_free", "theap",
)  # fmt: skip
"""The state arrays the engine may reallocate (grow): it returns them after the trace."""


# nogil: a live simulation runs beside the dashboard in one process (``mace demo``);
# holding the GIL for a whole segment (seconds) stalled every callback meanwhile
@njit(cache=True, nogil=True)
def _engine(
    capacity, policy, train, op_node_e, op_sink, op_product, op_coef, op_first_port, op_ports,
    port_op, port_number, port_cost, port_sel, down_ptr, down_port, producer_bytes, link_id,
    link_delay, link_bandwidth, cycle_ptr_e, cycle_ops_e, node_ops_ptr_e, node_ops_e,
    node_ports_ptr_e, node_ports_e, source_nodes_ptr_e, source_nodes_e, change_times,
    origin, subinterval, distribution, src, times, key, horizon, ints, floats, seen, link_free,
    q_key, q_seq, q_stim, q_port, q_next, q_free, node_heap, node_size, node_queued, port_head,
    port_tail, op_head, op_tail, op_count, busy, position, left, t_time, t_seq, t_kind, t_node,
    t_item, t_stim, t_count, t_free, theap,
):  # fmt: skip
    # the run's state comes in (see EngineState) and goes on from where the last call
    # stopped: the scalars in ``ints``/``floats``, written back on return, the arrays
    # mutated in place or, when they had to grow, returned
    # the placement-dependent arrays of the current placement epoch (rows of the *_e arrays)
    epoch = ints[I_EPOCH]
    next_change = ints[I_NEXT_CHANGE]
    n_free = ints[I_N_FREE]
    q_used = ints[I_Q_USED]
    heap_max = ints[I_HEAP_MAX]  # the largest node_size so far
    tn_free = ints[I_TN_FREE]
    t_used = ints[I_T_USED]
    tsize = ints[I_TSIZE]
    counter = ints[I_COUNTER]
    changed = ints[I_CHANGED] != 0  # a placement change applied, its dispatch not done yet
    exec_base = ints[I_EXECUTIONS]  # executions of earlier calls: the random stream goes on
    now = floats[F_NOW]
    op_node = op_node_e[epoch]
    cycle_ptr = cycle_ptr_e[epoch]
    cycle_ops = cycle_ops_e[epoch]
    node_ops_ptr = node_ops_ptr_e[epoch]
    node_ops = node_ops_e[epoch]
    node_ports_ptr = node_ports_ptr_e[epoch]
    node_ports = node_ports_e[epoch]
    source_nodes_ptr = source_nodes_ptr_e[epoch]
    source_nodes = source_nodes_e[epoch]
    n_changes = change_times.shape[0]
    n_nodes = capacity.shape[0]
    n_sources = source_nodes_ptr.shape[0] - 1
    n_events = times.shape[0]
    intervals = seen.shape[1]
    ukey = _U64(key)
    # the most (port) enqueues one output or source event causes
    fanout = 0
    for producer in range(down_ptr.shape[0] - 1):
        fanout = max(fanout, down_ptr[producer + 1] - down_ptr[producer])
    cap = q_key.shape[0]
    tcap = t_time.shape[0]
    by_op = (
        (policy == ROUND_ROBIN)
        | (policy == LONGEST_QUEUE)
        | (policy == MIN_LATENCY)
        | (policy == MIN_COST)
    )

    # results
    ecap = max(1024, 8 * n_events)
    e_node = np.empty(ecap, np.int64)
    e_op = np.empty(ecap, np.int64)
    e_port = np.empty(ecap, np.int64)
    e_stim = np.empty(ecap)
    e_start = np.empty(ecap)
    e_cpu = np.empty(ecap)
    e_out = np.empty(ecap, np.int64)
    n_exec = 0
    ocap = 1024
    o_op = np.empty(ocap, np.int64)
    o_stim = np.empty(ocap)
    o_egress = np.empty(ocap)
    n_out = 0

    next_source = 0
    touched = np.empty(n_nodes, np.int64)
    remote = np.empty(n_nodes, np.int64)
    mark = np.zeros(n_nodes, np.bool_)
    rounds = 0  # of the next event: its enqueue rounds, and the room they need
    spread = 0

    # the event loop (inner) never reassigns an array (see the module docstring): it stops
    # before an event the pools have no room for, or at a placement change, and the outer
    # loop grows the pools or switches to the next epoch's rows before resuming it
    while True:
        stop = DONE
        while True:
            # ---- next event, not taken yet: a placement change wins ties, then a source;
            # only events before the horizon (the next call's sources may come at it) ----
            if changed:
                kind = CHANGE
                rounds = 0
            else:
                upcoming = math.inf
                if next_source < n_events:
                    upcoming = times[next_source]
                if tsize > 0 and t_time[theap[0]] < upcoming:
                    upcoming = t_time[theap[0]]
                if (
                    next_change < n_changes
                    and change_times[next_change] <= upcoming
                    and change_times[next_change] < horizon
                ):
                    stop = CHANGE
                    break
                if upcoming >= horizon or upcoming == math.inf:
                    break
                if next_source < n_events and (
                    tsize == 0 or times[next_source] <= t_time[theap[0]]
                ):
                    kind = ARRIVAL
                    rounds = 1
                else:
                    kind = t_kind[theap[0]]
                    rounds = t_count[theap[0]] if kind == COMPLETION else 1
            # room for what it can add: enqueues and deliveries per round, one execution
            # and its completion per node, the outputs of a sink
            spread = rounds * fanout
            if (
                q_used + spread > cap
                or heap_max + spread > node_heap.shape[1]
                or t_used + spread + n_nodes > tcap
                or n_exec + n_nodes > ecap
                or n_out + rounds > ocap
            ):
                stop = GROW
                break

            # ---- take it ----
            n_touched = 0
            if kind == CHANGE:
                changed = False
                item = -1
                stim = now
                node = -1
                count = 0
            elif kind == ARRIVAL:
                now = times[next_source]
                item = src[next_source]
                stim = now
                node = -1
                count = 0
                next_source += 1
            else:
                slot = _heap_pop(theap, tsize, t_time, t_seq)
                tsize -= 1
                now = t_time[slot]
                node = t_node[slot]
                item = t_item[slot]
                stim = t_stim[slot]
                count = t_count[slot]
                t_free[tn_free] = slot
                tn_free += 1

            # ---- collect the (node, port) enqueues of this event ----
            if kind == CHANGE:  # its queued work moved in the outer loop
                first = 0
                last = 0
            elif kind == ARRIVAL:
                first = down_ptr[item]
                last = down_ptr[item + 1]
            elif kind == COMPLETION:
                busy[node] = False
                if op_sink[item]:
                    for _ in range(count):
                        o_op[n_out] = item
                        o_stim[n_out] = stim
                        o_egress[n_out] = now
                        n_out += 1
                first = down_ptr[n_sources + item]
                last = down_ptr[n_sources + item + 1]
            else:
                first = down_ptr[item]
                last = down_ptr[item + 1]
            for _ in range(rounds):
                n_remote = 0
                for s in range(first, last):
                    port = down_port[s]
                    there = op_node[port_op[port]]
                    if kind == DELIVERY:
                        # addressed to the consumers placed at `node` when it was sent
                        # (`count` holds that placement epoch); one moved since goes on there
                        if op_node_e[count, port_op[port]] != node:
                            continue
                        if there != node:
                            mark[there] = True
                    if kind == COMPLETION and there != node:
                        seen_before = False
                        for r in range(n_remote):
                            if remote[r] == there:
                                seen_before = True
                        if seen_before:
                            continue
                        remote[n_remote] = there
                        n_remote += 1
                        producer = n_sources + item
                        link = link_id[node, there]
                        arrive = now
                        if link >= 0:
                            start = max(now, link_free[link])
                            sending = producer_bytes[producer] / link_bandwidth[link]
                            link_free[link] = start + sending
                            arrive = link_free[link] + link_delay[link]
                        # schedule a delivery
                        if tn_free > 0:
                            tn_free -= 1
                            ts = t_free[tn_free]
                        else:
                            ts = t_used
                            t_used += 1
                        t_time[ts] = arrive
                        t_seq[ts] = counter
                        counter += 1
                        t_kind[ts] = DELIVERY
                        t_node[ts] = there
                        t_item[ts] = producer
                        t_stim[ts] = stim
                        t_count[ts] = epoch
                        _heap_push(theap, tsize, ts, t_time, t_seq)
                        tsize += 1
                        continue
                    # enqueue (stim, port) at node `there`
                    if n_free > 0:
                        n_free -= 1
                        qs = q_free[n_free]
                    else:
                        qs = q_used
                        q_used += 1
                    q_seq[qs] = counter
                    counter += 1
                    q_stim[qs] = stim
                    q_port[qs] = port
                    size = _enqueue(
                        qs, there, by_op, policy, origin, subinterval, port_op, q_key, q_seq,
                        q_stim, q_port, q_next, op_head, op_tail, op_count, node_queued,
                        port_head, port_tail, node_heap, node_size,
                    )  # fmt: skip
                    heap_max = max(heap_max, size)

            # ---- nodes to dispatch, ascending ----
            if kind == ARRIVAL:
                for r in range(source_nodes_ptr[item], source_nodes_ptr[item + 1]):
                    touched[n_touched] = source_nodes[r]
                    n_touched += 1
            elif kind == COMPLETION:
                touched[0] = node
                n_touched = 1
            else:  # a delivery's node and the nodes of moved consumers; a change's new nodes
                if kind == DELIVERY:
                    mark[node] = True
                for nd in range(n_nodes):
                    if mark[nd]:
                        mark[nd] = False
                        touched[n_touched] = nd
                        n_touched += 1

            for r in range(n_touched):
                nd = touched[r]
                if busy[nd]:
                    continue
                pol = policy[nd]
                if by_op[nd]:
                    lo = node_ops_ptr[nd]
                    hi = node_ops_ptr[nd + 1]
                    total = 0
                    for j in range(lo, hi):
                        total += op_count[node_ops[j]]
                    if total == 0:
                        continue
                    if pol == LONGEST_QUEUE:
                        best = -1
                        for j in range(lo, hi):
                            o = node_ops[j]
                            if best < 0 or op_count[o] > op_count[best]:
                                best = o
                        op = best
                    else:
                        clo = cycle_ptr[nd]
                        length = cycle_ptr[nd + 1] - clo
                        cur = cycle_ops[clo + position[nd]] if position[nd] >= 0 else -1
                        if not (left[nd] > 0 and cur >= 0 and op_count[cur] > 0):
                            for step in range(1, length + 1):
                                spot = (position[nd] + step) % length
                                if op_count[cycle_ops[clo + spot]] > 0:
                                    position[nd] = spot
                                    break
                            cur = cycle_ops[clo + position[nd]]
                            if pol == ROUND_ROBIN:
                                left[nd] = train[nd]
                            else:
                                left[nd] = op_count[cur]
                        left[nd] -= 1
                        op = cur
                    qs = op_head[op]
                    op_head[op] = q_next[qs]
                    if op_head[op] < 0:
                        op_tail[op] = -1
                    op_count[op] -= 1
                else:
                    if node_queued[nd] == 0:
                        continue
                    node_queued[nd] -= 1
                    qs = -1
                    best_port = -1
                    for j in range(node_ports_ptr[nd], node_ports_ptr[nd + 1]):
                        head = port_head[node_ports[j]]
                        if head >= 0 and (qs < 0 or _before(q_key, q_seq, head, qs)):
                            qs = head
                            best_port = node_ports[j]
                    if node_size[nd] > 0 and (
                        qs < 0 or _before(q_key, q_seq, node_heap[nd, 0], qs)
                    ):
                        qs = _heap_pop(node_heap[nd], node_size[nd], q_key, q_seq)
                        node_size[nd] -= 1
                    else:
                        port_head[best_port] = q_next[qs]
                        if q_next[qs] < 0:
                            port_tail[best_port] = -1
                port = q_port[qs]
                st = q_stim[qs]
                q_free[n_free] = qs
                n_free += 1
                op = port_op[port]
                # draws
                u = _uniform(ukey, 2 * (exec_base + n_exec))
                mean = port_cost[port]
                if distribution == CONSTANT:
                    cost = mean
                elif distribution == UNIFORM:
                    cost = mean * (0.5 + u)
                else:
                    cost = -mean * math.log(1.0 - u)
                if op_product[op]:
                    p = math.floor((st - origin) / subinterval)
                    iv = min(max(int(p), 0), intervals - 1)
                    expected = op_coef[op]
                    f0 = op_first_port[op]
                    for other in range(f0, f0 + op_ports[op]):
                        if other != port:
                            expected *= float(seen[other, iv])
                    seen[port, iv] += 1
                else:
                    expected = port_sel[port]
                whole = math.floor(expected)
                outs = int(whole)
                if _uniform(ukey, 2 * (exec_base + n_exec) + 1) < expected - whole:
                    outs += 1
                e_node[n_exec] = nd
                e_op[n_exec] = op
                e_port[n_exec] = port_number[port]
                e_stim[n_exec] = st
                e_start[n_exec] = now
                e_cpu[n_exec] = cost
                e_out[n_exec] = outs
                n_exec += 1
                busy[nd] = True
                # schedule the completion
                if tn_free > 0:
                    tn_free -= 1
                    ts = t_free[tn_free]
                else:
                    ts = t_used
                    t_used += 1
                t_time[ts] = now + cost / capacity[nd]
                t_seq[ts] = counter
                counter += 1
                t_kind[ts] = COMPLETION
                t_node[ts] = nd
                t_item[ts] = op
                t_stim[ts] = st
                t_count[ts] = outs
                _heap_push(theap, tsize, ts, t_time, t_seq)
                tsize += 1

        if stop == DONE:
            break
        if stop == GROW:
            if q_used + spread > cap:
                cap = max(2 * cap, q_used + spread)
                q_key = _grow1(q_key, cap)
                q_seq = _grow1(q_seq, cap)
                q_stim = _grow1(q_stim, cap)
                q_port = _grow1(q_port, cap)
                q_next = _grow1(q_next, cap)
                q_free = _grow1(q_free, cap)
            if heap_max + spread > node_heap.shape[1]:
                node_heap = _grow2(node_heap, heap_max + spread)
            if t_used + spread + n_nodes > tcap:
                tcap = max(2 * tcap, t_used + spread + n_nodes)
                t_time = _grow1(t_time, tcap)
                t_seq = _grow1(t_seq, tcap)
                t_kind = _grow1(t_kind, tcap)
                t_node = _grow1(t_node, tcap)
                t_item = _grow1(t_item, tcap)
                t_stim = _grow1(t_stim, tcap)
                t_count = _grow1(t_count, tcap)
                t_free = _grow1(t_free, tcap)
                theap = _grow1(theap, tcap)
            if n_exec + n_nodes > ecap:
                ecap = max(2 * ecap, n_exec + n_nodes)
                e_node = _grow1(e_node, ecap)
                e_op = _grow1(e_op, ecap)
                e_port = _grow1(e_port, ecap)
                e_stim = _grow1(e_stim, ecap)
                e_start = _grow1(e_start, ecap)
                e_cpu = _grow1(e_cpu, ecap)
                e_out = _grow1(e_out, ecap)
            if n_out + rounds > ocap:
                ocap = max(2 * ocap, n_out + rounds)
                o_op = _grow1(o_op, ocap)
                o_stim = _grow1(o_stim, ocap)
                o_egress = _grow1(o_egress, ocap)
            continue
        # a placement change: the next epoch's rows; queued work of each moved operator
        # moves to its new node, in counter order; its dispatch is the next event
        now = change_times[next_change]
        next_change += 1
        old = op_node_e[epoch]
        epoch += 1
        op_node = op_node_e[epoch]
        cycle_ptr = cycle_ptr_e[epoch]
        cycle_ops = cycle_ops_e[epoch]
        node_ops_ptr = node_ops_ptr_e[epoch]
        node_ops = node_ops_e[epoch]
        node_ports_ptr = node_ports_ptr_e[epoch]
        node_ports = node_ports_e[epoch]
        source_nodes_ptr = source_nodes_ptr_e[epoch]
        source_nodes = source_nodes_e[epoch]
        if heap_max + q_used > node_heap.shape[1]:
            node_heap = _grow2(node_heap, heap_max + q_used)
        heap_max = _migrate(
            old, op_node, mark, position, left, by_op, policy, origin, subinterval,
            op_first_port, op_ports, port_op, q_key, q_seq, q_stim, q_port, q_next, op_head,
            op_tail, op_count, port_head, port_tail, node_heap, node_size, node_queued, q_used,
            heap_max,
        )  # fmt: skip
        changed = True

    ints[I_EPOCH] = epoch
    ints[I_NEXT_CHANGE] = next_change
    ints[I_N_FREE] = n_free
    ints[I_Q_USED] = q_used
    ints[I_HEAP_MAX] = heap_max
    ints[I_TN_FREE] = tn_free
    ints[I_T_USED] = t_used
    ints[I_TSIZE] = tsize
    ints[I_COUNTER] = counter
    ints[I_CHANGED] = 1 if changed else 0
    ints[I_EXECUTIONS] = exec_base + n_exec
    floats[F_NOW] = now
    return (
        e_node[:n_exec].copy(), e_op[:n_exec].copy(), e_port[:n_exec].copy(),
        e_stim[:n_exec].copy(), e_start[:n_exec].copy(), e_cpu[:n_exec].copy(),
        e_out[:n_exec].copy(), o_op[:n_out].copy(), o_stim[:n_out].copy(), o_egress[:n_out].copy(),
        q_key, q_seq, q_stim, q_port, q_next, q_free, node_heap, t_time, t_seq, t_kind, t_node,
        t_item, t_stim, t_count, t_free, theap,
    )  # fmt: skip


@dataclass
class EngineState:
    """Everything a run carries from one engine call to the next: the clock, the queued
    events (pool, per-port and per-operator FIFOs, overflow heaps), the timed events in
    flight (completions, deliveries), busy nodes and visiting cycles, link backlogs, the
    product operators' counts per subinterval, the counter that breaks ties and how many
    executions drew from the random stream."""

    ints: np.ndarray
    floats: np.ndarray
    seen: np.ndarray
    link_free: np.ndarray
    q_key: np.ndarray
    q_seq: np.ndarray
    q_stim: np.ndarray
    q_port: np.ndarray
    q_next: np.ndarray
    q_free: np.ndarray
    node_heap: np.ndarray
    node_size: np.ndarray
    node_queued: np.ndarray
    port_head: np.ndarray
    port_tail: np.ndarray
    op_head: np.ndarray
    op_tail: np.ndarray
    op_count: np.ndarray
    busy: np.ndarray
    position: np.ndarray
    left: np.ndarray
    t_time: np.ndarray
    t_seq: np.ndarray
    t_kind: np.ndarray
    t_node: np.ndarray
    t_item: np.ndarray
    t_stim: np.ndarray
    t_count: np.ndarray
    t_free: np.ndarray
    theap: np.ndarray

    @classmethod
    def new(cls, plan: Plan) -> EngineState:
        """An empty system at time 0: no event queued or in flight, every node idle."""
        n_nodes, n_ports, n_ops = plan.capacity.shape[0], plan.port_op.shape[0], plan.op_node.size
        cap, tcap = 1024, 256
        return cls(
            ints=np.zeros(11, np.int64),
            floats=np.zeros(1),
            seen=np.zeros((n_ports, 1), np.int64),
            link_free=np.zeros(plan.link_delay.shape[0]),
            q_key=np.empty(cap), q_seq=np.empty(cap, np.int64), q_stim=np.empty(cap),
            q_port=np.empty(cap, np.int64), q_next=np.empty(cap, np.int64),
            q_free=np.empty(cap, np.int64),
            node_heap=np.empty((n_nodes, 256), np.int64),
            node_size=np.zeros(n_nodes, np.int64),
            node_queued=np.zeros(n_nodes, np.int64),
            port_head=np.full(n_ports, -1, np.int64), port_tail=np.full(n_ports, -1, np.int64),
            op_head=np.full(n_ops, -1, np.int64), op_tail=np.full(n_ops, -1, np.int64),
            op_count=np.zeros(n_ops, np.int64),
            busy=np.zeros(n_nodes, np.bool_),
            position=np.full(n_nodes, -1, np.int64),
            left=np.zeros(n_nodes, np.int64),
            t_time=np.empty(tcap), t_seq=np.empty(tcap, np.int64),
            t_kind=np.empty(tcap, np.int64), t_node=np.empty(tcap, np.int64),
            t_item=np.empty(tcap, np.int64), t_stim=np.empty(tcap),
            t_count=np.empty(tcap, np.int64), t_free=np.empty(tcap, np.int64),
            theap=np.empty(tcap, np.int64),
        )  # fmt: skip

    def copy(self) -> EngineState:
        """An independent copy (a checkpoint to go back to)."""
        return EngineState(**{f.name: getattr(self, f.name).copy() for f in fields(self)})

    @property
    def now(self) -> float:
        """The time of the last event taken."""
        return float(self.floats[F_NOW])

    @property
    def in_flight(self) -> int:
        """Events queued or scheduled (completions, deliveries) but not done yet."""
        return int(self.ints[I_Q_USED] - self.ints[I_N_FREE] + self.ints[I_TSIZE])


def advance(
    plan: Plan,
    state: EngineState,
    source: np.ndarray,
    times: np.ndarray,
    key: int,
    horizon: float,
    changes: Sequence[tuple[float, Plan]] = (),
) -> Trace:
    """Take the events before ``horizon`` (source events given here, sorted, all before it,
    all at or after the previous horizon) and return their trace; ``state`` goes on.

    Calls with consecutive horizons give, concatenated, the trace of one call with every
    source event: nothing before a horizon depends on what comes at or after it (a source
    event wins ties, so a timed event at the horizon waits for the next call).
    ``changes`` are all the run's (time, plan) pairs in time order, the earlier ones too.
    """
    plans = [plan, *(p for _, p in changes)]
    times = np.ascontiguousarray(times, dtype=np.float64)
    if times.size:  # the product operators count events per stimulus subinterval
        needed = math.floor((float(times[-1]) - plan.origin) / plan.subinterval) + 1
        if needed > state.seen.shape[1]:
            grown = np.zeros((state.seen.shape[0], max(needed, 2 * state.seen.shape[1])), np.int64)
            grown[:, : state.seen.shape[1]] = state.seen
            state.seen = grown
    s = state
    arrays = _engine(
        plan.capacity, plan.policy, plan.train, _rows(plans, "op_node"), plan.op_sink,
        plan.op_product, plan.op_coef, plan.op_first_port, plan.op_ports, plan.port_op,
        plan.port_number, plan.port_cost, plan.port_sel, plan.down_ptr, plan.down_port,
        plan.producer_bytes, plan.link_id, plan.link_delay, plan.link_bandwidth,
        _rows(plans, "cycle_ptr"), _rows(plans, "cycle_ops"), _rows(plans, "node_ops_ptr"),
        _rows(plans, "node_ops"), _rows(plans, "node_ports_ptr"), _rows(plans, "node_ports"),
        _rows(plans, "source_nodes_ptr"), _rows(plans, "source_nodes"),
        np.array([t for t, _ in changes], dtype=np.float64),
        float(plan.origin), float(plan.subinterval), int(plan.cost_distribution),
        np.ascontiguousarray(source, dtype=np.int64), times, np.uint64(key), float(horizon),
        s.ints, s.floats, s.seen, s.link_free, s.q_key, s.q_seq, s.q_stim, s.q_port, s.q_next,
        s.q_free, s.node_heap, s.node_size, s.node_queued, s.port_head, s.port_tail, s.op_head,
        s.op_tail, s.op_count, s.busy, s.position, s.left, s.t_time, s.t_seq, s.t_kind,
        s.t_node, s.t_item, s.t_stim, s.t_count, s.t_free, s.theap,
    )  # fmt: skip
    for name, array in zip(_GROWN, arrays[10:], strict=True):
        setattr(state, name, array)
    return Trace(*arrays[:10])


def simulate_fast(
    plan: Plan,
    source: np.ndarray,
    times: np.ndarray,
    key: int,
    intervals: int,
    changes: Sequence[tuple[float, Plan]] = (),
) -> Trace:
    """Run the compiled engine on a whole run; arguments as
    :func:`simulator.reference.simulate_reference`."""
    state = EngineState.new(plan)
    state.seen = np.zeros((plan.port_op.shape[0], max(intervals, 1)), np.int64)
    return advance(plan, state, source, times, key, math.inf, changes)


def _rows(plans: Sequence[Plan], name: str) -> np.ndarray:
    """One placement-dependent array per placement epoch, as the rows of one C-contiguous
    array (shorter ones padded; their lengths are given by the matching ``*_ptr`` row)."""
    arrays = [getattr(p, name) for p in plans]
    out = np.zeros((len(arrays), max(1, *(a.size for a in arrays))), dtype=np.int64)
    for row, a in zip(out, arrays, strict=True):
        row[: a.size] = a
    return out


def warm_up() -> float:
    """Compile (or load from the cache) the engine; returns the seconds it took."""
    from estimator.model import topology_from_dict
    from simulator.plan import compile_plan

    started = time.perf_counter()
    topology = topology_from_dict(
        {
            "nodes": [{"id": "n", "capacity": 1.0}],
            "sources": [{"id": "s"}],
            "operators": [{"id": "a", "inputs": ["s"], "cost": 0.1}],
            "placement": {"a": "n"},
        }
    )
    plan = compile_plan(topology)
    simulate_fast(plan, np.zeros(1, np.int64), np.zeros(1), 1, 1)
    return time.perf_counter() - started
