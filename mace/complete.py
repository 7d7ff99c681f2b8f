"""The alerts of a stored run within its complete subintervals (the rule is
:mod:`dashboard.core.complete`'s)."""

from __future__ import annotations

import dataclasses

import numpy as np

from dashboard.core.data import RunData
from estimator.alerts import MEASURED_BREACH, Alert


def complete_alerts(run: RunData, alerts: list[Alert], stop: int) -> list[Alert]:
    """``alerts`` within the complete subintervals [0, stop): a measured breach that
    reaches past them ends at ``stop - 1`` with its peak there, one that starts after them
    waits. Predicted breaches need no cut: a prediction reads the arrivals, whole once
    stored. Drift is looked for in complete subintervals only
    (:func:`dashboard.core.monitoring.run_drift`)."""
    kept = []
    for alert in alerts:
        if alert.kind != MEASURED_BREACH or alert.end < stop:
            kept.append(alert)
        elif alert.start < stop and alert.query is not None:
            peak = float(np.nanmax(run.latency[alert.query].lat_max[alert.start : stop]))
            kept.append(dataclasses.replace(alert, end=stop - 1, value=peak))
    return kept
