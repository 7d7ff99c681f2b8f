"""The bundle cycle of a Python operator: the latency it adds, from its settings and its work.

A Python operator of Flink (``AbstractExternalPythonFunctionOperator``) hands the records
it takes to its Python worker in bundles. The Java side buffers them (Beam sends a
buffer to the worker only at 1 MB, far above a bundle of small records) and finishes a
bundle

- at once when it holds ``python.fn-execution.bundle.size`` records (1000 by default in
  Flink 2.x: ``checkInvokeFinishBundleByCount``),
- when a timer that fires every ``python.fn-execution.bundle.time`` T since the operator
  opened finds at least T gone since the *end* of the previous finish
  (``checkInvokeFinishBundleByTime``),
- on a checkpoint barrier and at the end of the input.

The finish blocks the task thread until the worker has run the whole bundle; the worker
returns its results as it goes, so the bundle's records leave in their order over the
time it runs. Records that come meanwhile wait in the input buffers, and the thread
takes them as soon as it is free. Hence, with a bundle taken at ``t_j`` that runs
``S_j``:

- a calm operator finishes a bundle every 2T, not every T (the tick T after a finish that
  ended just after a tick is too soon), and the record come just after a tick leaves a
  whole cycle later;
- the cycle stretches with the work a bundle carries well before the thread is full: at a
  load of 0.7, a bundle of 2T's records takes 1.4T, so the next cycle is 3T, whose bundle
  takes 2.1T, and so on;
- until a bundle fills: it is finished at once, the next one fills while it runs, and
  bundles follow each other with no gap (the thread then serves at its full rate, a
  backlog as Mace's CE has it, plus the wait for a bundle to fill).

:func:`cycle_latency` follows this bundle by bundle over a thread's work per subinterval
(spread evenly within it), exactly for that fluid work (compiled:
:mod:`estimator.bundle_play`); the timer's phase is unknown, and
:func:`cycle_excess` takes the median over ``PHASES`` phases of the rise above the calm
cycle, which the calm pipeline delay already holds (:mod:`estimator.delays`).
"""

from __future__ import annotations

import math

import numpy as np

from estimator.model import Topology

PHASES = 8
"""Phases of the bundle timer tried; the latency is their median."""


def calm_cycle(bundle_time: float, overhead: float = 0.0, checkpoint: float | None = None) -> float:
    """The latency a record meets at an operator with little work: a bundle that runs
    ``s0`` plus a sliver is taken every ``T (2 + floor(s0 / T))``, and the record that
    came just after one leaves with the next, ``s0`` after it is taken; checkpoint
    barriers more often than that take one at each."""
    cycle = bundle_time * (2 + math.floor(overhead / bundle_time)) + overhead
    return cycle if checkpoint is None else min(cycle, checkpoint + overhead)


def cycle_latency(
    work: np.ndarray,
    subinterval: float,
    bundle_time: float,
    overhead: float = 0.0,
    phase: float = 0.0,
    bundle_work: float = math.inf,
    checkpoint: float | None = None,
    checkpoint_phase: float = 0.0,
) -> np.ndarray:
    """Per subinterval, the largest latency at a Python operator's thread of the records
    that arrive in it, for ``work`` (seconds of the thread's work that arrive in each
    subinterval, spread evenly within it), the bundle time ``T``, the per-bundle
    ``overhead`` s0, the timer's ``phase`` in [0, T), ``bundle_work``, the work of a
    full bundle (``python.fn-execution.bundle.size`` records; inf: no such limit), and
    the ``checkpoint`` interval (None: no checkpoints) with its barriers' phase: a
    barrier finishes the bundle holding the records come before it as soon as the thread
    is free. The operator opens at time 0; a subinterval without arrivals gets the calm
    cycle."""
    from estimator.bundle_play import play  # numba loads when a bundle is played

    work = np.asarray(work, dtype=float)
    calm = calm_cycle(bundle_time, overhead)
    if work.size == 0 or not work.any():
        return np.full(work.size, calm)
    out = play(
        work,
        float(subinterval),
        float(bundle_time),
        float(overhead),
        float(phase),
        float(bundle_work),
        0.0 if checkpoint is None else float(checkpoint),
        float(checkpoint_phase),
    )
    return np.where(np.isfinite(out), out, calm)


def cycle_excess(
    work: np.ndarray,
    subinterval: float,
    bundle_time: float,
    overhead: float = 0.0,
    bundle_work: float = math.inf,
    checkpoint: float | None = None,
) -> np.ndarray:
    """Per subinterval, what a thread's bundle cycle adds above its calm cycle for the
    thread's ``work`` per subinterval: :func:`cycle_latency`, the median over ``PHASES``
    evenly spread phases of the timer (and of the checkpoints', spread over the same
    draws in another order: the two are not tied), which are unknown, less the calm
    cycle (with checkpoints more often than two bundle times, theirs)."""
    plays = [
        cycle_latency(
            work,
            subinterval,
            bundle_time,
            overhead,
            bundle_time * k / PHASES,
            bundle_work,
            checkpoint,
            0.0 if checkpoint is None else checkpoint * ((3 * k) % PHASES) / PHASES,
        )
        for k in range(PHASES)
    ]
    calm = calm_cycle(bundle_time, overhead, checkpoint)
    return np.maximum(np.median(plays, axis=0) - calm, 0.0)


def full_bundle_work(topology: Topology) -> dict[str, float]:
    """Per thread with a ``bundle_size``, the work (seconds) of a full bundle: that many
    records entering the thread, each costing :func:`record_work` under ``topology``'s
    costs and selectivities (the mean over the thread's input ports where it has several:
    a bundle counts the records of every input)."""
    out: dict[str, float] = {}
    for node in topology.nodes:
        if not node.bundles or node.bundle_size is None:
            continue
        heads = [
            (op.id, port)
            for op in topology.operators
            if topology.placement[op.id] == node.id
            for port, upstream in enumerate(op.inputs)
            if topology.placement.get(upstream) != node.id
        ]
        if heads:
            work = np.mean([record_work(topology, op, port) for op, port in heads])
            out[node.id] = node.bundle_size * float(work)
    return out


def record_work(topology: Topology, op_id: str, port: int) -> float:
    """The work one record entering ``op_id`` at ``port`` causes on that operator's
    thread: its cost there and, through the selectivities, that of the operators chained
    behind it on the same thread."""
    thread = topology.placement[op_id]
    op = topology.operator_by_id[op_id]
    work = op.cost[port]
    for down in topology.operators:
        if topology.placement[down.id] != thread:
            continue
        for down_port, upstream in enumerate(down.inputs):
            if upstream == op_id:
                work += op.selectivity[port] * record_work(topology, down.id, down_port)
    return work
