"""Drift and alerts of a stored run, shared by the pages and the alert pass
of ``mace ingest`` / ``mace serve``.

The predicted band is ``[Mace, path-aware estimate + w + eps]`` of the predictive
model (the path-aware estimator's :class:`estimator.runs.RunAnalysis` bounds, whatever
estimator the pages show), widened by ``tolerance`` on each side, one subinterval w by
default: bursts inside a subinterval put the measured latency above estimate + w + eps
in many subintervals while the model holds, and a late event waits behind backlogs on
several nodes, which Mace + 2w + eps misses; [Mace, path-aware + 2w + eps] held in
every subinterval of the accuracy study (docs/accuracy.md) and of the drift study
(benchmarks/drift_study.py), where the Mace band gave a false alarm. Only *settled*
subintervals are compared (:func:`estimator.drift.settled`), and only complete ones
(:func:`dashboard.core.complete.complete_count`): the slow outputs of the last few
subintervals of a live run are still queued and their measured maximum would look
low. A refit model (``training``) is checked from its window's start on: a model
fitted on recent data says nothing about the past. The default model (the run's first
share) is checked only once its window holds :data:`MIN_DRIFT_TRAINING` seconds.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from dashboard.core.data import RunData
from dashboard.core.report import predicted_analysis, system_lower
from estimator.alerts import (
    DEFAULT_GAP,
    MEASURED_BREACH,
    PREDICTED_BREACH,
    Alert,
    breaches,
    drift_alerts,
)
from estimator.drift import DEFAULT_K, DriftEvent, drift_events, query_drift_events, settled
from estimator.fitting import training_window
from estimator.runs import DEFAULT_TRAINING_SHARE

DRIFT_ESTIMATOR = "path"
"""The estimator whose bounds make the predicted band."""
MIN_DRIFT_TRAINING = 60.0
"""Seconds of training before drift is looked for with the default window (the run's
first 10%: from 600 s of run on, with w = 1 s). In 600 s runs of ``mace demo``, a model
fitted on the first 8 to 28 s of bursty arrivals put the measured latency outside the
predicted band for 6 to 16 s at a time (drift on the Overview, and two drift alerts).
In a 150 s demo fitted on 15 s, a source operator's cost came out 9 % high and the
predicted backlog of a 25 s burst 20 % high. Fitted on the first 60 s, the same run has
no drift. (Chosen from those runs: not an out-of-sample figure.)"""


def fitted_on_enough(intervals: int, subinterval: float) -> bool:
    """Does the default training window (the run's first share) hold at least
    :data:`MIN_DRIFT_TRAINING` seconds? A model fitted on less is not checked for drift."""
    start, stop = training_window(intervals, DEFAULT_TRAINING_SHARE)
    return (stop - start) * subinterval >= MIN_DRIFT_TRAINING


def run_drift(
    run: RunData,
    k: int = DEFAULT_K,
    *,
    tolerance: float | None = None,
    training: tuple[int, int] | None = None,
) -> list[DriftEvent]:
    """Drift events of the whole system (query None) and of each query, in time order:
    a measured max latency outside its predicted band (the system's, whose lower edge
    counts only the queries with an output, :func:`dashboard.core.report.system_lower`;
    or the query's own: its Mace to its path-aware estimate + w + eps), widened by
    ``tolerance`` seconds (default w), for ``k`` settled subintervals; the model is
    fitted on ``training`` (default: the first share of the run, and none until it holds
    :data:`MIN_DRIFT_TRAINING` seconds, :func:`fitted_on_enough`). Only complete
    subintervals count. A query's event over exactly the stretch of a system event is
    the system's (:func:`estimator.drift.query_drift_events`)."""
    key = ("drift", k, tolerance, training)
    return list(run.derived(key, lambda: tuple(_drift(run, k, tolerance, training))))


def _drift(
    run: RunData, k: int, tolerance: float | None, training: tuple[int, int] | None
) -> list[DriftEvent]:
    # complete.py reads DRIFT_ESTIMATOR from this module
    from dashboard.core.complete import complete_count

    if training is None and not fitted_on_enough(run.intervals, run.subinterval):
        return []
    predicted = predicted_analysis(run, estimator=DRIFT_ESTIMATOR, training=training)
    widen = run.subinterval if tolerance is None else tolerance
    complete = complete_count(run)

    def seen(measured: np.ndarray, upper: np.ndarray) -> np.ndarray:
        out = measured.copy()
        out[~settled(upper, run.subinterval)] = np.nan
        out[complete:] = np.nan
        if training is not None:
            out[: training[0]] = np.nan
        return out

    system = drift_events(
        seen(run.measured_system().lat_max, predicted.upper),
        system_lower(run, predicted),
        predicted.upper,
        k,
        tolerance=widen,
    )
    queries = [q for q in run.topology.queries if q in run.latency]
    upper = {q: predicted.query_upper(q) for q in queries}
    per_query = query_drift_events(
        {q: seen(run.latency[q].lat_max, upper[q]) for q in queries},
        {q: predicted.per_query_lower[q] for q in queries},
        upper,
        k,
        tolerance=widen,
        system=system,
    )
    return sorted([*system, *per_query], key=lambda e: (e.start, e.query or "", e.direction))


def run_alerts(
    run: RunData,
    objectives: Mapping[str, float],
    *,
    training: tuple[int, int] | None = None,
    k: int = DEFAULT_K,
    gap: int = DEFAULT_GAP,
) -> list[Alert]:
    """Every alert of a run: per query with an objective, the stretches where its
    measured and where its predicted latency (Mace of the model fitted on ``training``)
    are above it; and the drift of the system and of each query (:func:`run_drift`)."""
    alerts: list[Alert] = []
    watched = [q for q in run.topology.queries if q in objectives]
    if watched:
        predicted = predicted_analysis(run, training=training)
        for query in watched:
            for kind, series in (
                (MEASURED_BREACH, run.latency[query].lat_max),
                (PREDICTED_BREACH, predicted.per_query[query]),
            ):
                alerts += breaches(series, objectives[query], query=query, kind=kind, gap=gap)
    return alerts + drift_alerts(run_drift(run, k, training=training))
