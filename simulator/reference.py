"""The reference simulation engine: a plain heapq discrete-event loop.

It is the readable statement of the simulator's semantics; the numba engine
in :mod:`simulator.fast` must produce identical traces. The rules:

* Timed events are source arrivals, execution completions and link
  deliveries, processed in (time, counter) order. Source events take counter
  values 0..N-1 in arrival order; every later enqueue or scheduled event takes
  the next counter value, so ties are broken deterministically.
* A source event is enqueued at every consuming (operator, port) at its
  stimulus time; then each consuming node, in node order, dispatches if idle.
* A node runs one execution (one input event) at a time. At dispatch the
  policy picks the event, its cost is drawn around the port's mean and its
  output count around the port's selectivity; it completes after
  cost / capacity seconds.
* At completion every output (carrying the input's stimulus time) is enqueued
  at the local consumers and sent once per remote consumer node over the link
  between the nodes (FIFO, bytes / bandwidth transmission, then the delay;
  instantaneous when no link is declared), then fanned out there. A sink's
  outputs are output events with the completion time as egress time.
* ``product`` operators (windowed joins) approximate their model with a
  symmetric join: an event at port q expects ``coef * prod_{r != q} n_r``
  outputs, ``n_r`` being the events already seen at port r with the same
  stimulus subinterval, so the outputs of a subinterval total about
  ``coef * prod_q A_q`` as the estimator assumes.
* **Placement changes** (``changes``: (time, plan) pairs, time-ordered) take
  effect before every event at their time or later. At a change, the queued
  (not started) events of each moved operator leave its old node and join the
  new node's queue in the order they were first queued (their counters are
  kept, so the new node's policy orders them as if they had been queued there);
  an execution in service finishes on the old node, and its outputs go where
  the consumers are placed at its completion. A delivery in flight stays
  addressed to the consumers placed at its node when it was sent: one that
  moved since gets the event at its new node on arrival, with no further link
  delay. The nodes that gained operators restart their visiting cycle and
  dispatch at once, in node order; so do, after a delivery, the delivery's node
  and the new nodes of moved consumers.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Sequence

import numpy as np

from simulator.plan import (
    LONGEST_QUEUE,
    MIN_COST,
    MIN_LATENCY,
    ROUND_ROBIN,
    STIMULUS,
    SUBINTERVAL,
    Plan,
)
from simulator.trace import Trace, draw_cost, draw_count, uniform

ARRIVAL, COMPLETION, DELIVERY = 0, 1, 2


class _Node:
    """A node's queues and scheduling state."""

    def __init__(self, plan: Plan, index: int):
        self.index = index
        self.policy = int(plan.policy[index])
        self.capacity = float(plan.capacity[index])
        self.train = int(plan.train[index])
        self.busy = False
        self.heap: list[tuple[float, int, int]] = []  # (key, counter, port) + stimulus by counter
        self.stimulus: dict[int, float] = {}
        self.fifo: dict[int, deque[tuple[int, int, float]]] = {}
        self.place(plan)

    def place(self, plan: Plan) -> None:
        """Take this node's operators and visiting cycle from ``plan``; the cycle restarts."""
        index = self.index
        ops = plan.node_ops[plan.node_ops_ptr[index] : plan.node_ops_ptr[index + 1]]
        self.members = [int(o) for o in ops]
        self.fifo = {o: self.fifo.get(o, deque()) for o in self.members}
        cycle = plan.cycle_ops[plan.cycle_ptr[index] : plan.cycle_ptr[index + 1]]
        self.cycle = [int(o) for o in cycle]
        self.position = -1
        self.left = 0

    def take_operator(self, plan: Plan, op: int) -> list[tuple[int, int, float]]:
        """Remove every queued event of operator ``op``: (counter, port, stimulus) each."""
        if self.by_operator:
            return list(self.fifo.pop(op, deque()))
        mine = [entry for entry in self.heap if int(plan.port_op[entry[2]]) == op]
        self.heap = [entry for entry in self.heap if int(plan.port_op[entry[2]]) != op]
        heapq.heapify(self.heap)
        return [(counter, port, self.stimulus.pop(counter)) for _, counter, port in mine]

    @property
    def by_operator(self) -> bool:
        return self.policy in (ROUND_ROBIN, LONGEST_QUEUE, MIN_LATENCY, MIN_COST)

    def empty(self) -> bool:
        if self.by_operator:
            return not any(self.fifo.values())
        return not self.heap

    def enqueue(self, plan: Plan, counter: int, port: int, stimulus: float) -> None:
        op = int(plan.port_op[port])
        if self.by_operator:
            self.fifo[op].append((counter, port, stimulus))
            return
        if self.policy == STIMULUS:
            key = stimulus
        elif self.policy == SUBINTERVAL:
            key = float(math.floor((stimulus - plan.origin) / plan.subinterval))
        else:
            key = 0.0
        heapq.heappush(self.heap, (key, counter, port))
        self.stimulus[counter] = stimulus

    def take(self) -> tuple[int, float]:
        """Remove the next event by this node's policy; returns (port, stimulus)."""
        if not self.by_operator:
            _, counter, port = heapq.heappop(self.heap)
            return port, self.stimulus.pop(counter)
        if self.policy == LONGEST_QUEUE:
            op = self.members[0]  # the longest queue; ties go to the first in file order
            for other in self.members[1:]:
                if len(self.fifo[other]) > len(self.fifo[op]):
                    op = other
        else:
            current = self.cycle[self.position] if self.position >= 0 else -1
            if not (self.left > 0 and current >= 0 and self.fifo[current]):
                for step in range(1, len(self.cycle) + 1):
                    spot = (self.position + step) % len(self.cycle)
                    if self.fifo[self.cycle[spot]]:
                        self.position = spot
                        break
                current = self.cycle[self.position]
                whole_queue = self.policy in (MIN_COST, MIN_LATENCY)
                self.left = len(self.fifo[current]) if whole_queue else self.train
            self.left -= 1
            op = current
        _, port, stimulus = self.fifo[op].popleft()
        return port, stimulus


def simulate_reference(
    plan: Plan,
    source: np.ndarray,
    times: np.ndarray,
    key: int,
    intervals: int,
    changes: Sequence[tuple[float, Plan]] = (),
) -> Trace:
    """Run the simulation of ``plan`` for source events (``source`` index, ``times``) sorted
    by time; ``key`` is the random stream and ``intervals`` bounds stimulus subintervals.
    ``changes`` are (time, plan with another placement) pairs in time order."""
    plans = [plan, *(p for _, p in changes)]
    epoch = 0
    nodes = [_Node(plan, k) for k in range(len(plan.node_ids))]
    n_ports = int(plan.port_op.size)
    seen = np.zeros((n_ports, max(intervals, 1)), dtype=np.int64)
    link_free = [0.0] * int(plan.link_delay.size)
    events: list[tuple[float, int, int, int, int, float, int]] = [
        (float(t), k, ARRIVAL, -1, int(s), float(t), 0)
        for k, (s, t) in enumerate(zip(source, times, strict=True))
    ]
    heapq.heapify(events)
    counter = len(events)
    executions: list[tuple[int, int, int, float, float, float, int]] = []
    outputs: list[tuple[int, float, float]] = []
    n_sources = plan.n_sources

    def consumers(producer: int) -> range:
        return range(int(plan.down_ptr[producer]), int(plan.down_ptr[producer + 1]))

    def enqueue(node: int, port: int, stimulus: float) -> None:
        nonlocal counter
        nodes[node].enqueue(plan, counter, port, stimulus)
        counter += 1

    def schedule(time: float, kind: int, node: int, item: int, stimulus: float, count: int) -> None:
        nonlocal counter
        heapq.heappush(events, (time, counter, kind, node, item, stimulus, count))
        counter += 1

    def dispatch(index: int, now: float) -> None:
        node = nodes[index]
        if node.busy or node.empty():
            return
        port, stimulus = node.take()
        op = int(plan.port_op[port])
        k = len(executions)
        cost = draw_cost(float(plan.port_cost[port]), plan.cost_distribution, uniform(key, 2 * k))
        if plan.op_product[op]:
            interval = _interval(plan, stimulus, intervals)
            expected = float(plan.op_coef[op])
            first = int(plan.op_first_port[op])
            for other in range(first, first + int(plan.op_ports[op])):
                if other != port:
                    expected *= float(seen[other, interval])
            seen[port, interval] += 1
        else:
            expected = float(plan.port_sel[port])
        count = draw_count(expected, uniform(key, 2 * k + 1))
        executions.append((index, op, int(plan.port_number[port]), stimulus, now, cost, count))
        node.busy = True
        schedule(now + cost / node.capacity, COMPLETION, index, op, stimulus, count)

    def change_placement(now: float) -> None:
        nonlocal plan, epoch
        old, new = plans[epoch], plans[epoch + 1]
        moved = [op for op in range(int(old.op_node.size)) if old.op_node[op] != new.op_node[op]]
        taken = {op: nodes[int(old.op_node[op])].take_operator(old, op) for op in moved}
        affected = sorted({int(p.op_node[op]) for op in moved for p in (old, new)})
        epoch += 1
        plan = new
        for index in affected:
            nodes[index].place(plan)
        for op in moved:
            for counter, port, stimulus in sorted(taken[op]):
                nodes[int(plan.op_node[op])].enqueue(plan, counter, port, stimulus)
        for index in sorted({int(plan.op_node[op]) for op in moved}):
            dispatch(index, now)

    while events:
        if epoch < len(changes) and changes[epoch][0] <= events[0][0]:
            change_placement(changes[epoch][0])
            continue
        now, _, kind, index, item, stimulus, count = heapq.heappop(events)
        if kind == ARRIVAL:
            for slot in consumers(item):
                port = int(plan.down_port[slot])
                enqueue(int(plan.op_node[plan.port_op[port]]), port, stimulus)
            ptr = plan.source_nodes_ptr
            for node in plan.source_nodes[ptr[item] : ptr[item + 1]]:
                dispatch(int(node), now)
        elif kind == COMPLETION:
            nodes[index].busy = False
            if plan.op_sink[item]:
                outputs.extend((item, stimulus, now) for _ in range(count))
            producer = n_sources + item
            for _ in range(count):
                remote: list[int] = []
                for slot in consumers(producer):
                    port = int(plan.down_port[slot])
                    there = int(plan.op_node[plan.port_op[port]])
                    if there == index:
                        enqueue(index, port, stimulus)
                    elif there not in remote:
                        remote.append(there)
                        link = int(plan.link_id[index, there])
                        arrive = now
                        if link >= 0:
                            start = max(now, link_free[link])
                            link_free[link] = start + float(
                                plan.producer_bytes[producer] / plan.link_bandwidth[link]
                            )
                            arrive = link_free[link] + float(plan.link_delay[link])
                        schedule(arrive, DELIVERY, there, producer, stimulus, epoch)
            dispatch(index, now)
        else:  # a delivery: `count` is the placement epoch at which it was sent
            sent_to = plans[count]
            touched = {index}
            for slot in consumers(item):
                port = int(plan.down_port[slot])
                op = int(plan.port_op[port])
                if int(sent_to.op_node[op]) == index:
                    there = int(plan.op_node[op])
                    enqueue(there, port, stimulus)
                    touched.add(there)
            for node_index in sorted(touched):
                dispatch(node_index, now)
    return _trace(executions, outputs)


def _interval(plan: Plan, stimulus: float, intervals: int) -> int:
    """The stimulus subinterval, clipped to the run's range."""
    p = math.floor((stimulus - plan.origin) / plan.subinterval)
    return min(max(int(p), 0), max(intervals, 1) - 1)


def _trace(
    executions: list[tuple[int, int, int, float, float, float, int]],
    outputs: list[tuple[int, float, float]],
) -> Trace:
    ex = list(zip(*executions, strict=True)) if executions else [()] * 7
    out = list(zip(*outputs, strict=True)) if outputs else [()] * 3
    ints, floats = np.int64, np.float64
    return Trace(
        exec_node=np.array(ex[0], dtype=ints),
        exec_op=np.array(ex[1], dtype=ints),
        exec_port=np.array(ex[2], dtype=ints),
        exec_stimulus=np.array(ex[3], dtype=floats),
        exec_start=np.array(ex[4], dtype=floats),
        exec_cpu=np.array(ex[5], dtype=floats),
        exec_outputs=np.array(ex[6], dtype=ints),
        out_op=np.array(out[0], dtype=ints),
        out_stimulus=np.array(out[1], dtype=floats),
        out_egress=np.array(out[2], dtype=floats),
    )
