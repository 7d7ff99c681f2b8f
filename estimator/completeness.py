"""Which subintervals of a run are complete: every event of theirs out and stored.

A live run's newest subintervals are not: their slow events are still queued or in
flight, and the files of the newest seconds are not ingested yet. Their measured
latency looks low (a backlog of 15 s reads as 0.2 s at "now") and their measured DLTS
too, so headline figures, alerts and drift must leave them out until they are complete.

Two rules, one per kind of telemetry:

* **Per-event runs** (``executions/``): nothing of subinterval p is in flight when
  every event sent along every edge has been executed at the other end: for each
  operator input port, the executions stored for p equal the events its producer
  emitted for p (the source's arrivals, or the upstream operator's outputs).
  :func:`in_flight` checks exactly that, with no model. (The newest subinterval's
  later arrivals may still be unwritten; what is stored of it is balanced or not.)
* **Counter runs** (``samples/``, bucketed by wall clock): no per-stimulus flow to
  balance, so a bound: an event of p leaves by ``(p + 1) w + upper_p``, ``upper_p``
  the upper edge of a latency band computed from the arrivals, and the data reach
  ``n w``; :func:`settled_by_bound`.

Headline figures use the leading complete subintervals (:func:`complete_prefix`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from estimator.model import Topology

BALANCE_TOLERANCE = 0.5
"""Events: counts are whole numbers stored as floats."""


def in_flight(
    topology: Topology, arrivals: np.ndarray, stats: pd.DataFrame, intervals: int
) -> np.ndarray:
    """Per subinterval: has some event of it been sent and not executed yet?

    ``arrivals`` are sources (topology order) x subintervals; ``stats`` the rows of
    ``operator, port, interval, events_in, events_out`` (operator_stats).
    """
    ops = {o: k for k, o in enumerate(topology.operator_ids)}
    cells = len(ops) * intervals
    received: dict[int, np.ndarray] = {}  # per port: operators x subintervals
    emitted = np.zeros((len(ops), intervals))
    if not stats.empty:
        rows = pd.Index(topology.operator_ids).get_indexer(pd.Index(stats["operator"]))
        cols = stats["interval"].to_numpy(dtype=np.int64)
        keep = (rows >= 0) & (cols >= 0) & (cols < intervals)
        flat = rows[keep] * intervals + cols[keep]
        out = stats["events_out"].to_numpy(dtype=float)[keep]
        emitted = np.bincount(flat, weights=out, minlength=cells).astype(float)
        emitted = emitted.reshape(len(ops), intervals)
        ports = stats["port"].to_numpy(dtype=np.int64)[keep]
        events_in = stats["events_in"].to_numpy(dtype=float)[keep]
        for port in np.unique(ports):
            mine = ports == port
            received[int(port)] = np.bincount(
                flat[mine], weights=events_in[mine], minlength=cells
            ).reshape(len(ops), intervals)
    sources = {s: k for k, s in enumerate(topology.source_ids)}
    pending = np.zeros(intervals, dtype=bool)
    for op in topology.operators:
        row = ops[op.id]
        for port, upstream in enumerate(op.inputs):
            sent = arrivals[sources[upstream]] if upstream in sources else emitted[ops[upstream]]
            got = received[port][row] if port in received else np.zeros(intervals)
            pending |= sent[:intervals] - got > BALANCE_TOLERANCE
    return pending


def settled_by_bound(upper: np.ndarray, subinterval: float) -> np.ndarray:
    """Per subinterval p of the ``upper`` series (one per stored subinterval): do its
    events leave by the end of the data, ``(p + 1) w + upper_p <= n w``? (NaN upper: no
    bound, never.)"""
    bound = np.nan_to_num(np.asarray(upper, dtype=float), nan=np.inf)
    ends = (np.arange(bound.size) + 1) * subinterval + bound
    return ends <= bound.size * subinterval + 1e-9


def complete_prefix(complete: np.ndarray) -> int:
    """How many leading subintervals are complete: the headline figures' range [0, this)
    (every later one is left out, even a complete one after an incomplete one)."""
    incomplete = np.flatnonzero(~np.asarray(complete, dtype=bool))
    return int(incomplete[0]) if incomplete.size else int(np.size(complete))
