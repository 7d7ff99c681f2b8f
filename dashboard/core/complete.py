"""A stored run cut to its complete subintervals (every event of theirs out and
stored): the rule the pages, ``mace report`` and the alert pass share.

Which subintervals are complete is :mod:`estimator.completeness`'s rule: no event in
flight for a per-event run; for a counter run, the upper bound of the band of the estimate
from the measured load (:data:`dashboard.core.monitoring.DRIFT_ESTIMATOR`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from dashboard.core.data import LazyProfile, QueryLatency, RunData
from dashboard.core.estimators import report_with_estimator
from dashboard.core.monitoring import DRIFT_ESTIMATOR
from dashboard.core.report import estimated_analysis
from estimator.arrivals import Arrivals
from estimator.completeness import complete_prefix, in_flight, settled_by_bound


def complete_count(run: RunData) -> int:
    """How many leading subintervals of ``run`` are complete (computed once per run)."""
    return run.derived("complete_count", lambda: _complete_count(run))


def _complete_count(run: RunData) -> int:
    if run.intervals == 0:
        return 0
    if run.info.counters:
        # the estimate from the measured load, not the prediction: a prediction fitted on
        # a calm window can be far off, and would hold back a finished run's last minute
        estimated = estimated_analysis(run, DRIFT_ESTIMATOR)
        return complete_prefix(settled_by_bound(estimated.upper, run.subinterval))
    counts = run.arrivals.for_topology(run.topology)
    pending = in_flight(run.topology, counts, run.operator_stats, run.intervals)
    return complete_prefix(~pending)


def in_flight_seconds(run: RunData) -> float:
    """How many of the newest seconds are not complete yet."""
    return (run.intervals - complete_count(run)) * run.subinterval


def _first(profile: LazyProfile | None, stop: int) -> LazyProfile | None:
    """The profile's first ``stop`` subintervals, read on first use as the whole one."""
    if profile is None:
        return None
    read: Callable[[], np.ndarray | None] = profile.get

    def cut() -> np.ndarray | None:
        whole = read()
        return None if whole is None else whole[:, :stop]

    return LazyProfile(cut)


def cut(run: RunData, stop: int) -> RunData:
    """``run`` with its subintervals [0, stop) only (stop at most ``run.intervals``)."""
    stop = max(0, min(stop, run.intervals))
    if stop == run.intervals:
        return run
    stats = run.operator_stats
    return dataclasses.replace(
        run,
        info=dataclasses.replace(run.info, last_interval=stop - 1 if stop else None),
        arrivals=Arrivals(run.arrivals.sources, run.arrivals.counts[:, :stop]),
        operator_stats=stats[stats["interval"] < stop].reset_index(drop=True),
        operator_dlts=run.operator_dlts[:, :stop],
        node_dlts=run.node_dlts[:, :stop],
        busy=run.busy[:, :stop],
        latency={
            q: QueryLatency(s.lat_max[:stop], s.lat_p99[:stop], s.lat_mean[:stop], s.outputs[:stop])
            for q, s in run.latency.items()
        },
        profile=_first(run.profile, stop),
        arrival_profile=_first(run.arrival_profile, stop),
        _derived={},
    )


def complete_report(
    run: RunData, goals: Mapping[str, float], training_share: float, estimator: str
) -> dict[str, Any]:
    """The report of ``run`` over its complete subintervals by ``estimator`` (``auto``:
    the one the run's size allows, :mod:`dashboard.core.estimators`), with how many
    subintervals are complete of how many (``complete_intervals``, ``intervals``): the
    newest ones' events are not all out yet."""
    complete = complete_count(run)
    # the cut run lives as long as the run, so its estimates are computed once
    part = run.derived(("complete part", complete), lambda: cut(run, complete))
    report = report_with_estimator(part, goals, training_share, estimator)
    return {**report, "intervals": run.intervals, "complete_intervals": complete}
