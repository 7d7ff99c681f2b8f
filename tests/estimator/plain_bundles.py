"""The bundle play of :mod:`estimator.bundles` written out in plain Python: the reference
the compiled play (:mod:`estimator.bundle_play`) is tested against, step for step."""

from __future__ import annotations

import math

import numpy as np

from estimator.bundles import calm_cycle


def plain_cycle_latency(
    work: np.ndarray,
    subinterval: float,
    bundle_time: float,
    overhead: float,
    phase: float,
    bundle_work: float,
    checkpoint: float | None,
    checkpoint_phase: float,
) -> np.ndarray:
    """:func:`estimator.bundles.cycle_latency`, every step in Python, bundle by bundle."""
    work = np.asarray(work, dtype=float)
    n = work.size
    calm = calm_cycle(bundle_time, overhead)
    if n == 0 or not work.any():
        return np.full(n, calm)
    edges = np.arange(n + 1) * subinterval
    cumulative = np.concatenate([[0.0], np.cumsum(work)])
    total = float(cumulative[n])
    rate = work / subinterval

    def arrived(x: float) -> float:
        """Work arrived in [0, x]."""
        k = min(max(int(x // subinterval), 0), n)
        if k >= n:
            return total
        return float(cumulative[k] + rate[k] * (x - edges[k]))

    def reached(target: float) -> float:
        """The first time the work arrived reaches ``target`` (inf: never)."""
        if target > total + 1e-12 * max(total, 1.0):
            return math.inf
        k = int(np.searchsorted(cumulative, min(target, total), side="left"))
        if k == 0:
            return 0.0
        k -= 1  # cumulative[k] < target <= cumulative[k + 1]: work arrives in k
        return float(edges[k] + (min(target, total) - cumulative[k]) / rate[k])

    def at_or_after(x: float, period: float, offset: float) -> float:
        return offset + math.ceil((x - offset) / period - 1e-9) * period

    def after(x: float, period: float, offset: float) -> float:
        return offset + (math.floor((x - offset) / period + 1e-9) + 1) * period

    out = np.full(n, -math.inf)
    taken = 0.0  # every record arrived by here is in a bundle
    last_end = 0.0  # the previous finish ended (the operator opened at 0)
    while total - arrived(taken) > 1e-12 * total:
        base = arrived(taken)
        first = _next_arrival(work, subinterval, taken)  # no bundle closes before one
        full_at = reached(base + bundle_work)
        tick = at_or_after(last_end + bundle_time, bundle_time, phase)
        if arrived(tick) - base <= 0:
            tick = after(max(tick, first), bundle_time, phase)
        # (when the bundle closes, the last arrival it holds)
        choices = [(max(last_end, full_at), full_at), (tick, tick)]
        if checkpoint is not None:
            barrier = after(max(first, taken), checkpoint, checkpoint_phase)
            choices.append((max(last_end, barrier), barrier))
        close, until = min(choices)
        # a record come at a leaves at close + s0 + the work before it in the bundle;
        # the latency is linear in a within a subinterval: its ends are the candidates
        for k in range(max(int(taken // subinterval), 0), min(math.ceil(until / subinterval), n)):
            lo, hi = max(taken, edges[k]), min(until, edges[k + 1])
            if work[k] > 0 and hi >= lo:
                for a in (lo, hi):
                    out[k] = max(out[k], close + overhead + arrived(a) - base - a)
        last_end = close + overhead + arrived(until) - base
        # a cut a rounding error short of a subinterval's edge is at the edge
        edge = round(until / subinterval) * subinterval
        taken = edge if abs(until - edge) < 1e-9 else until
    return np.where(np.isfinite(out), out, calm)


def _next_arrival(work: np.ndarray, subinterval: float, after: float) -> float:
    """The first time after ``after`` at which work arrives (inf: none does)."""
    k = int(after // subinterval)
    rest = np.flatnonzero(work[k:] > 0)
    if rest.size == 0:
        return math.inf
    return max(after, (k + int(rest[0])) * subinterval)
