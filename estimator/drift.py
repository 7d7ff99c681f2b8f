"""Calibration and drift of the predictive model (docs/design.md, "Drift and verification").

The predicted latency comes from a model fitted on a training window (docs/design.md,
"Fitting and prediction", :func:`estimator.runs.predicted_operator_dlts`). Theorem 3 puts
the latency between
Mace and the estimate + w + eps; with the fitted model in place of the measured
DLTS that is the *predicted band* ``[lower, upper]``. While the model holds, the
measured max latency stays inside it. A **drift event** is a stretch of at least
``k`` consecutive subintervals with the measured latency on the same side outside
the band: costs, selectivities or the system changed since the model was fitted.
:func:`refit` fits the model again on a recent window.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from estimator.completeness import settled_by_bound
from estimator.errors import ModelError
from estimator.fitting import training_window
from estimator.model import Topology
from estimator.runs import fitted_operator_dlts

DEFAULT_K = 5
"""Consecutive subintervals outside the band that make a drift event."""
DEFAULT_ERROR_WINDOW = 30
"""Subintervals per window of :func:`rolling_error`."""
ABOVE = "above"
BELOW = "below"


def rolling_error(predicted: np.ndarray, measured: np.ndarray, window: int) -> np.ndarray:
    """Relative prediction error over the trailing ``window`` subintervals ending at each p:
    sum |predicted - measured| / sum measured over the subintervals of
    [max(0, p - window + 1), p] where both are finite (measured is NaN without outputs).
    NaN where no such subinterval exists or the measured sum is not positive."""
    if window < 1:
        raise ModelError(f"rolling error: window must be at least 1 subinterval, got {window}")
    pred = np.asarray(predicted, dtype=float)
    meas = np.asarray(measured, dtype=float)
    if pred.shape != meas.shape or pred.ndim != 1:
        raise ModelError(
            f"rolling error: predicted {pred.shape} and measured {meas.shape} must be "
            "series of the same length"
        )
    valid = np.isfinite(pred) & np.isfinite(meas)
    pad = window - 1
    error = np.concatenate([np.zeros(pad), np.where(valid, np.abs(pred - meas), 0.0)])
    scale = np.concatenate([np.zeros(pad), np.where(valid, meas, 0.0)])
    count = np.concatenate([np.zeros(pad, dtype=np.int64), valid.astype(np.int64)])
    view = np.lib.stride_tricks.sliding_window_view
    num = view(error, window).sum(axis=1)
    den = view(scale, window).sum(axis=1)
    seen = view(count, window).sum(axis=1)
    out = np.full(meas.shape, np.nan)
    ok = (seen > 0) & (den > 0)
    out[ok] = num[ok] / den[ok]
    return out


@dataclass(frozen=True)
class DriftEvent:
    """Measured latency outside the predicted band on one side for ``end - start + 1``
    consecutive subintervals (``end`` inclusive). ``flagged_at`` is the subinterval at
    which the k-th one was seen (when a live monitor raises it); ``peak`` the largest
    distance outside the band, in seconds; ``query`` None for the whole system."""

    start: int
    end: int
    query: str | None
    direction: str  # ABOVE or BELOW the band
    flagged_at: int
    peak: float


def runs_of(mask: np.ndarray) -> list[tuple[int, int]]:
    """Maximal stretches of True in a boolean series, as inclusive (first, last)."""
    flags = np.asarray(mask, dtype=bool)
    edges = np.diff(np.concatenate([[0], flags.astype(np.int8), [0]]))
    firsts = np.flatnonzero(edges == 1)
    lasts = np.flatnonzero(edges == -1) - 1
    return [(int(a), int(b)) for a, b in zip(firsts, lasts, strict=True)]


def drift_events(
    measured: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    k: int = DEFAULT_K,
    *,
    query: str | None = None,
    tolerance: float = 0.0,
) -> list[DriftEvent]:
    """Stretches of at least ``k`` consecutive subintervals where the measured latency is
    above ``upper + tolerance`` (or below ``lower - tolerance``), in time order.

    A subinterval without a measurement (NaN) ends a stretch: nothing was seen there."""
    if k < 1:
        raise ModelError(f"drift: k must be at least 1 subinterval, got {k}")
    meas = np.asarray(measured, dtype=float)
    lo = np.asarray(lower, dtype=float)
    hi = np.asarray(upper, dtype=float)
    if not meas.shape == lo.shape == hi.shape or meas.ndim != 1:
        raise ModelError("drift: measured, lower and upper must be series of the same length")
    with np.errstate(invalid="ignore"):
        distance = {ABOVE: meas - (hi + tolerance), BELOW: (lo - tolerance) - meas}
    events = []
    for direction, excess in distance.items():
        outside = np.isfinite(excess) & (excess > 0)
        for first, last in runs_of(outside):
            if last - first + 1 >= k:
                events.append(
                    DriftEvent(
                        start=first,
                        end=last,
                        query=query,
                        direction=direction,
                        flagged_at=first + k - 1,
                        peak=float(excess[first : last + 1].max()),
                    )
                )
    return sorted(events, key=lambda e: (e.start, e.direction))


def query_drift_events(
    measured: Mapping[str, np.ndarray],
    lower: Mapping[str, np.ndarray],
    upper: Mapping[str, np.ndarray],
    k: int = DEFAULT_K,
    *,
    tolerance: float = 0.0,
    system: Sequence[DriftEvent] = (),
) -> list[DriftEvent]:
    """Each query's drift events: its measured latency against its own predicted band
    (:func:`drift_events` with ``query`` set), for the queries in all three mappings,
    in time order. A query's event over exactly the stretch and side of one of the
    ``system`` events is left out: the system's event already says it (on a run of one
    query, every one)."""
    seen = {(e.start, e.end, e.direction) for e in system}
    events = [
        e
        for query in sorted(measured)
        if query in lower and query in upper
        for e in drift_events(
            measured[query], lower[query], upper[query], k, query=query, tolerance=tolerance
        )
        if (e.start, e.end, e.direction) not in seen
    ]
    return sorted(events, key=lambda e: (e.start, e.query or "", e.direction))


def settled(upper: np.ndarray, subinterval: float) -> np.ndarray:
    """Subintervals p whose outputs have all come out by the end of the data by the
    band's bound (:func:`estimator.completeness.settled_by_bound`, where the rule is
    written): the slow outputs of later ones may still be queued in a live run, so their
    measured maximum would look low."""
    return settled_by_bound(upper, subinterval)


def recent_window(n_intervals: int, fraction: float = 0.1) -> tuple[int, int]:
    """The last ``fraction`` of a run's intervals (at least one), as [start, stop):
    the mirror of :func:`estimator.fitting.training_window`."""
    _, length = training_window(n_intervals, fraction)
    return max(0, n_intervals - length), n_intervals


def refit(
    topology: Topology,
    operator_stats: pd.DataFrame,
    counts: np.ndarray,
    window: tuple[int, int],
) -> np.ndarray:
    """Operator DLTS (operators x intervals) predicted for the whole run by the model
    fitted again on ``window`` (e.g. :func:`recent_window`): feed it to
    :func:`estimator.runs.node_loads` and :func:`estimator.runs.analyse` for the band."""
    start, stop = window
    if not 0 <= start < stop:
        raise ModelError(f"refit: window [{start}, {stop}) holds no subinterval")
    return fitted_operator_dlts(topology, operator_stats, counts, window)
