"""The bundle cycle of a Python operator: the latency it adds, from its bundle time and its work.

A Python operator of Flink (``AbstractExternalPythonFunctionOperator``) hands the records
it takes to its Python worker in bundles. The Java side buffers them (Beam sends a
buffer to the worker only at 1 MB, far above a bundle of small records) and finishes a
bundle when a timer that fires every ``python.fn-execution.bundle.time`` T since the
operator opened finds at least T gone since the *end* of the previous finish (or when
``python.fn-execution.bundle.size`` records are in, or on a checkpoint barrier). The
finish blocks the task thread until the worker has run the whole bundle; the worker
returns its results as it goes, so the bundle's records leave in their order over the
time it runs. Records that come meanwhile wait in the input buffers and join the next
bundle. Hence, with a bundle taken at tick ``t_j`` and run for ``S_j``:

- the next bundle is taken at the first tick at least T after ``t_j + S_j``: at ``t_j +
  2T`` while ``S_j < T`` (a calm operator finishes a bundle every 2T, not every T), at
  ``t_j + 3T`` while ``T <= S_j < 2T``, and so on;
- bundle ``j + 1`` holds what came in ``(t_j, t_{j+1}]`` and runs ``S = s0 + its
  work``; its first record, come just after ``t_j``, leaves at ``t_{j+1} + s0``.

The cycle stretches with the work a bundle carries well before the thread saturates:
at a load of 0.7, a bundle of 2T's records takes 1.4T, so the next cycle is 3T, whose
bundle takes 2.1T, and so on. A burst of a few seconds sees only the first steps of
that, so a steady-state ``T / (1 - load)`` overshoots: the cycle is followed bundle by
bundle over the run's own work series (:func:`cycle_latency`).

The ticks' phase (when the operator opened) is unknown; the latency is the median over
``PHASES`` evenly spread phases, per subinterval. The rise above the calm cycle
(:func:`cycle_excess`) is what the estimate adds on top of the calm pipeline delay,
which already holds the calm cycle (:mod:`estimator.delays`).
"""

from __future__ import annotations

import math

import numpy as np

PHASES = 8
"""Phases of the bundle timer tried; the latency is their median."""


def calm_cycle(bundle_time: float, overhead: float = 0.0) -> float:
    """The latency a record meets at an operator with little work: a bundle that runs
    ``s0`` plus a sliver is taken every ``T (2 + floor(s0 / T))``, and the record that
    came just after one leaves with the next, ``s0`` after it is taken."""
    return bundle_time * (2 + math.floor(overhead / bundle_time)) + overhead


def cycle_latency(
    work: np.ndarray,
    subinterval: float,
    bundle_time: float,
    overhead: float = 0.0,
    phase: float = 0.0,
) -> np.ndarray:
    """Per subinterval, the largest latency of the records that leave a Python operator
    in it, for ``work`` (seconds of the thread's work that arrive in each subinterval,
    spread evenly within it), the bundle time ``T``, the per-bundle ``overhead`` s0 and
    the timer's ``phase`` in [0, T). A subinterval where no record leaves keeps the value
    of the one before (the calm cycle before the first)."""
    work = np.asarray(work, dtype=float)
    n = work.size
    out = np.full(n, np.nan)
    if n == 0:
        return out
    cumulative = np.concatenate([[0.0], np.cumsum(work)])
    horizon = n * subinterval

    def arrived(x: float) -> float:
        """Work arrived in [0, x]."""
        k = min(max(int(x // subinterval), 0), n)
        if k >= n:
            return float(cumulative[n])
        return float(cumulative[k] + work[k] * (x - k * subinterval) / subinterval)

    taken = 0.0  # the previous bundle's tick: it took everything up to here
    last_end = -math.inf
    tick = phase if phase > 0 else bundle_time
    while tick < horizon + bundle_time:
        if tick - last_end >= bundle_time:
            content = arrived(tick) - arrived(taken)
            if content > 0:
                # the slowest record: the first after ``taken`` or one after a stretch
                # where work came faster than the thread runs it
                base = arrived(taken)
                worst = max(
                    tick + overhead + arrived(a) - base - a
                    for a in _record_times(work, subinterval, taken, tick)
                )
                span = content + overhead
                first = int((tick + overhead) // subinterval)
                last = int((tick + span) // subinterval)
                for k in range(max(first, 0), min(last, n - 1) + 1):
                    out[k] = worst if np.isnan(out[k]) else max(out[k], worst)
                last_end = tick + span
                taken = tick
        tick += bundle_time
    calm = calm_cycle(bundle_time, overhead)
    previous = calm
    for k in range(n):
        if np.isnan(out[k]):
            out[k] = previous
        previous = out[k]
    return out


def _record_times(work: np.ndarray, subinterval: float, start: float, stop: float) -> list[float]:
    """The arrival times in (``start``, ``stop``] where a bundle's slowest record can be:
    the edges of the stretches of subintervals with work (the latency of the records in
    between is linear in their arrival time)."""
    out = []
    first = int(start // subinterval)
    last = min(math.ceil(stop / subinterval), work.size)
    for k in range(max(first, 0), last):
        if work[k] <= 0:
            continue
        lo, hi = max(start, k * subinterval), min(stop, (k + 1) * subinterval)
        if lo < hi:
            out += [lo, hi]
    return out


def typical_cycle_latency(
    work: np.ndarray, subinterval: float, bundle_time: float, overhead: float = 0.0
) -> np.ndarray:
    """:func:`cycle_latency` per subinterval, the median over ``PHASES`` evenly spread
    timer phases (the phase is unknown; the worst phase overshot on the runs the rule
    was chosen on)."""
    phases = [bundle_time * k / PHASES for k in range(PHASES)]
    return np.median(
        [cycle_latency(work, subinterval, bundle_time, overhead, p) for p in phases], axis=0
    )


def cycle_excess(
    work: np.ndarray,
    subinterval: float,
    bundle_time: float,
    overhead: float = 0.0,
    stages: int = 1,
) -> np.ndarray:
    """Per subinterval, what the bundle cycles of ``stages`` Python operators in a row on
    one thread add above their calm cycle, for the thread's ``work`` per subinterval
    (each stage is charged the thread's work: its bundles block the thread for all)."""
    rise = typical_cycle_latency(work, subinterval, bundle_time, overhead)
    return stages * np.maximum(rise - calm_cycle(bundle_time, overhead), 0.0)
