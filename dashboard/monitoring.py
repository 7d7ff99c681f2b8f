"""Drift and alerts of a stored run (issue 15), shared by the pages and the alert pass
of ``mace ingest`` / ``mace serve``.

The predicted band is the predicted analysis's ``[lower, upper]`` (Mace and
estimate + w + eps from the fitted model), widened by ``tolerance`` on each side:
by default one subinterval w, because bursts inside a subinterval put the measured
latency above estimate + w + eps in many subintervals while the model holds, but
above estimate + 2w + eps hardly ever (docs/accuracy.md). Only *settled*
subintervals are compared: those whose outputs have all come out by the end of
the data (stimulus end + predicted upper bound), since the slow outputs of the
last few subintervals of a live run are still queued and their measured maximum
would look low.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from dashboard.data import RunData
from dashboard.report import RunAnalyses
from estimator.alerts import (
    DEFAULT_GAP,
    MEASURED_BREACH,
    PREDICTED_BREACH,
    Alert,
    breaches,
    drift_alerts,
)
from estimator.drift import DEFAULT_K, DriftEvent, drift_events, settled


def run_drift(
    run: RunData,
    computed: RunAnalyses,
    k: int = DEFAULT_K,
    tolerance: float | None = None,
    since: int = 0,
) -> list[DriftEvent]:
    """Drift events of the whole system: its measured max latency outside the predicted
    band (widened by ``tolerance`` seconds, default w) for ``k`` settled subintervals
    from ``since`` on (the start of a refit model's training window: a model fitted on
    recent data says nothing about the past)."""
    predicted = computed.predicted
    measured = run.measured_system().lat_max.copy()
    measured[~settled(predicted.upper, run.subinterval)] = np.nan
    measured[: max(0, since)] = np.nan
    return drift_events(
        measured,
        predicted.lower,
        predicted.upper,
        k,
        tolerance=run.subinterval if tolerance is None else tolerance,
    )


def run_alerts(
    run: RunData,
    objectives: Mapping[str, float],
    computed: RunAnalyses,
    *,
    k: int = DEFAULT_K,
    gap: int = DEFAULT_GAP,
    since: int = 0,
) -> list[Alert]:
    """Every alert of a run: per query with an objective, the stretches where its
    measured and where its predicted latency are above it; and the system's drift
    (from ``since`` on, see :func:`run_drift`)."""
    alerts: list[Alert] = []
    for query in run.topology.queries:
        objective = objectives.get(query)
        if objective is None:
            continue
        for kind, series in (
            (MEASURED_BREACH, run.latency[query].lat_max),
            (PREDICTED_BREACH, computed.predicted.per_query[query]),
        ):
            alerts += breaches(series, objective, query=query, kind=kind, gap=gap)
    return alerts + drift_alerts(run_drift(run, computed, k, since=since))
