"""The system's lower bound counts only the queries with an output in a subinterval: a
query that measured nothing there says nothing of the system's measured max."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from dashboard.core.data import QueryLatency, RunData, load_run
from dashboard.core.monitoring import run_drift
from dashboard.core.report import analyses, build_report, system_lower
from storage.db import connect_to_read


def _without_q1_output_at(run: RunData, p: int) -> RunData:
    """``run`` where q1 had no output in subinterval ``p`` (q2 still had)."""
    q1 = run.latency["q1"]
    gone = [np.array(a, dtype=float) for a in (q1.lat_max, q1.lat_p99, q1.lat_mean)]
    for series in gone:
        series[p] = np.nan
    outputs = np.array(q1.outputs, dtype=float)
    outputs[p] = 0
    latency = {**run.latency, "q1": QueryLatency(*gone, outputs)}
    return dataclasses.replace(run, latency=latency, _derived={})


@pytest.fixture
def run(small_db: Path) -> RunData:
    con = connect_to_read(small_db)
    try:
        return _without_q1_output_at(load_run(con, "small"), 1)
    finally:
        con.close()


def test_system_lower_is_the_largest_mace_of_the_queries_with_an_output(run: RunData) -> None:
    est = analyses(run).estimated
    q1, q2 = est.per_query_lower["q1"], est.per_query_lower["q2"]
    # q1 had outputs in 0, 2, 4; q2 in 0, 1, 2, 4 (the small run: no output in 3)
    assert q1[1] > run.measured_system().lat_max[1] >= q2[1]  # q1's Mace would refute it
    expected = [max(q1[0], q2[0]), q2[1], max(q1[2], q2[2]), 0.0, max(q1[4], q2[4])]
    assert system_lower(run, est) == pytest.approx(expected)


def test_system_coverage_ignores_a_query_without_output(run: RunData) -> None:
    est = analyses(run).estimated
    measured = run.measured_system().lat_max
    had = np.isfinite(measured)
    lower = np.array([est.per_query_lower["q2"][p] if p == 1 else est.lower[p] for p in range(5)])
    inside = (measured >= lower - 1e-9) & (measured <= est.upper + 1e-9)
    report = build_report(run, {})
    assert report["system"]["bound_coverage"] == pytest.approx(inside[had].mean())
    assert inside[1]  # subinterval 1 is inside once q1's bound is left out


def test_system_drift_ignores_a_query_without_output(run: RunData) -> None:
    """q2's measured 0.5 s in subinterval 1 is above its own Mace: no system drift below
    the band there (q1's larger Mace, with no q1 output, would have raised one)."""
    events = run_drift(run, k=1, tolerance=0.0)
    assert not [e for e in events if e.query is None and e.start <= 1 <= e.end]
