"""The bundle-by-bundle play of :func:`estimator.bundles.cycle_latency`, compiled (numba).

The play is a loop over bundles with a few scalar steps each, run for each Python
thread by every estimate, every what-if candidate and every step of ``mace plan
parallelism``: compiled, an hour of 1 s subintervals takes milliseconds a thread, some
sixty times less than the same loop in Python (``benchmarks/bench_bundles.py``). The
rules are those of :mod:`estimator.bundles` (its docstring says why); this module only
runs them. Work arrives evenly within each subinterval: ``cumulative`` is the work
arrived by each subinterval's start, ``rate`` the work a second within it. It is kept
apart from :mod:`estimator.kernels` so that numba loads only when a bundle is played.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

TIE = 1e-9
"""A tick or an edge this close (in periods or seconds) to a time counts as at it."""


@njit(cache=True)
def _arrived(x: float, cumulative: np.ndarray, rate: np.ndarray, subinterval: float) -> float:
    """Work arrived in [0, x]."""
    n = rate.size
    k = min(max(int(x // subinterval), 0), n)
    if k >= n:
        return cumulative[n]
    return cumulative[k] + rate[k] * (x - k * subinterval)


@njit(cache=True)
def _reached(target: float, cumulative: np.ndarray, rate: np.ndarray, subinterval: float) -> float:
    """The first time the work arrived reaches ``target`` (inf: never)."""
    total = cumulative[rate.size]
    if target > total + 1e-12 * max(total, 1.0):
        return math.inf
    goal = min(target, total)
    k = int(np.searchsorted(cumulative, goal))
    if k == 0:
        return 0.0
    k -= 1  # cumulative[k] < goal <= cumulative[k + 1]: work arrives in k
    return k * subinterval + (goal - cumulative[k]) / rate[k]


@njit(cache=True)
def _at_or_after(x: float, period: float, offset: float) -> float:
    return offset + math.ceil((x - offset) / period - TIE) * period


@njit(cache=True)
def _after(x: float, period: float, offset: float) -> float:
    return offset + (math.floor((x - offset) / period + TIE) + 1) * period


@njit(cache=True)
def _next_arrival(work: np.ndarray, subinterval: float, after: float) -> float:
    """The first time after ``after`` at which work arrives (inf: none does)."""
    for k in range(max(int(after // subinterval), 0), work.size):
        if work[k] > 0:
            return max(after, k * subinterval)
    return math.inf


@njit(cache=True)
def play(
    work: np.ndarray,
    subinterval: float,
    bundle_time: float,
    overhead: float,
    phase: float,
    bundle_work: float,
    checkpoint: float,
    checkpoint_phase: float,
) -> np.ndarray:
    """Per subinterval, the largest latency of the records arriving in it (-inf where
    none does); ``checkpoint`` <= 0 for none. :func:`estimator.bundles.cycle_latency`
    says what each argument is."""
    n = work.size
    cumulative = np.zeros(n + 1)
    for k in range(n):
        cumulative[k + 1] = cumulative[k] + work[k]
    total = cumulative[n]
    rate = work / subinterval
    out = np.full(n, -math.inf)
    taken = 0.0  # every record arrived by here is in a bundle
    last_end = 0.0  # the previous finish ended (the operator opened at 0)
    while total - _arrived(taken, cumulative, rate, subinterval) > 1e-12 * total:
        base = _arrived(taken, cumulative, rate, subinterval)
        first = _next_arrival(work, subinterval, taken)  # no bundle closes before one
        full_at = _reached(base + bundle_work, cumulative, rate, subinterval)
        tick = _at_or_after(last_end + bundle_time, bundle_time, phase)
        if _arrived(tick, cumulative, rate, subinterval) - base <= 0:
            tick = _after(max(tick, first), bundle_time, phase)
        # when the bundle closes, and the last arrival it holds: the earliest of a full
        # bundle (once the thread is free), the tick, and a checkpoint's barrier
        close, until = max(last_end, full_at), full_at
        if tick < close or (tick == close and tick < until):
            close, until = tick, tick
        if checkpoint > 0:
            barrier = _after(max(first, taken), checkpoint, checkpoint_phase)
            at = max(last_end, barrier)
            if at < close or (at == close and barrier < until):
                close, until = at, barrier
        # a record come at a leaves at close + s0 + the work before it in the bundle;
        # the latency is linear in a within a subinterval: its ends are the candidates
        lo_k = max(int(taken // subinterval), 0)
        hi_k = min(math.ceil(until / subinterval), n)
        for k in range(lo_k, hi_k):
            lo, hi = max(taken, k * subinterval), min(until, (k + 1) * subinterval)
            if work[k] > 0 and hi >= lo:
                for a in (lo, hi):
                    latency = close + overhead + _arrived(a, cumulative, rate, subinterval)
                    latency -= base + a
                    if latency > out[k]:
                        out[k] = latency
        last_end = close + overhead + _arrived(until, cumulative, rate, subinterval) - base
        # a cut a rounding error short of a subinterval's edge is at the edge
        edge = round(until / subinterval) * subinterval
        taken = edge if abs(until - edge) < TIE else until
    return out
