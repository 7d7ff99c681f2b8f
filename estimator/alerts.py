"""Alerts of a run (docs/design.md, "Alerts"): latency objectives breached, measured or
predicted, and drift of the predictive model.

An alert covers a stretch of subintervals ``[start, end]`` (``end`` inclusive). A
breach is a stretch where a query's latency is above its objective; stretches less
than ``gap`` subintervals apart make one breach, so a latency hovering around its
objective raises one alert, not one per crossing. A drift alert is a
:class:`estimator.drift.DriftEvent`. Storing them so that re-evaluating a run never
duplicates an alert is the storage layer's part (``storage.alerts``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from estimator.drift import DriftEvent, runs_of
from estimator.errors import ModelError

MEASURED_BREACH = "measured_breach"
PREDICTED_BREACH = "predicted_breach"
DRIFT = "drift"
KINDS = (MEASURED_BREACH, PREDICTED_BREACH, DRIFT)
DEFAULT_GAP = 5
"""Subintervals within the objective that still belong to the same breach."""


@dataclass(frozen=True)
class Alert:
    """One alert of a run. ``value`` is the peak latency of a breach (seconds) or the
    peak distance outside the predicted band of a drift; ``objective`` the breached
    objective (None for drift); ``detail`` a short text (the drift's direction)."""

    kind: str
    query: str | None
    start: int
    end: int
    value: float
    objective: float | None = None
    detail: str = ""


def breaches(
    series: np.ndarray, objective: float, *, query: str, kind: str, gap: int = DEFAULT_GAP
) -> list[Alert]:
    """Stretches where ``series`` (NaN: no value) is above ``objective``, stretches at
    most ``gap`` subintervals apart merged, each with its peak as ``value``."""
    if kind not in (MEASURED_BREACH, PREDICTED_BREACH):
        raise ModelError(f"breach kind must be {MEASURED_BREACH} or {PREDICTED_BREACH}")
    if gap < 0:
        raise ModelError(f"breach gap must be at least 0 subintervals, got {gap}")
    values = np.asarray(series, dtype=float)
    above = np.isfinite(values) & (values > objective)
    merged: list[tuple[int, int]] = []
    for first, last in runs_of(above):
        if merged and first - merged[-1][1] - 1 <= gap:
            merged[-1] = (merged[-1][0], last)
        else:
            merged.append((first, last))
    return [
        Alert(
            kind=kind,
            query=query,
            start=first,
            end=last,
            value=float(np.nanmax(values[first : last + 1])),
            objective=float(objective),
        )
        for first, last in merged
    ]


def drift_alerts(events: Iterable[DriftEvent]) -> list[Alert]:
    """One alert per drift event; its value is the event's peak distance outside the band."""
    return [
        Alert(
            kind=DRIFT,
            query=e.query,
            start=e.start,
            end=e.end,
            value=e.peak,
            detail=f"measured latency {e.direction} the predicted band",
        )
        for e in events
    ]
