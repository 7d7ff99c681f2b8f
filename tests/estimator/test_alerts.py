"""Alerts: objective breaches against a plain loop, drift events as alerts."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimator.alerts import (
    DRIFT,
    MEASURED_BREACH,
    PREDICTED_BREACH,
    Alert,
    breaches,
    drift_alerts,
)
from estimator.drift import ABOVE, DriftEvent
from estimator.errors import ModelError


def _plain(series: list[float], objective: float, gap: int) -> list[tuple[int, int, float]]:
    """Breach stretches with a loop: open at a value above, close after more than
    ``gap`` subintervals without one."""
    out: list[tuple[int, int, float]] = []
    current: list[int] | None = None
    for p, value in enumerate(series):
        if math.isfinite(value) and value > objective:
            if current is not None and p - current[1] - 1 <= gap:
                current[1] = p
            else:
                if current is not None:
                    out.append((current[0], current[1], 0.0))
                current = [p, p]
    if current is not None:
        out.append((current[0], current[1], 0.0))
    return [
        (a, b, max(v for v in series[a : b + 1] if math.isfinite(v)))
        for a, b, _ in out  # peak over the stretch
    ]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.one_of(st.floats(0.0, 3.0), st.just(math.nan)), max_size=40),
    st.floats(0.1, 2.5),
    st.integers(0, 4),
)
def test_breaches_match_a_plain_loop(series: list[float], objective: float, gap: int) -> None:
    got = breaches(np.array(series), objective, query="q", kind=MEASURED_BREACH, gap=gap)
    assert [(a.start, a.end, a.value) for a in got] == _plain(series, objective, gap)
    assert all(a.objective == objective and a.query == "q" for a in got)


def test_breaches_by_hand() -> None:
    series = np.array([0.5, 1.5, 0.5, 0.5, 2.0, math.nan, 0.2, 0.2, 0.2, 1.2])
    got = breaches(series, 1.0, query="q1", kind=PREDICTED_BREACH, gap=2)
    assert got == [
        Alert(PREDICTED_BREACH, "q1", 1, 4, 2.0, 1.0),
        Alert(PREDICTED_BREACH, "q1", 9, 9, 1.2, 1.0),
    ]
    assert len(breaches(series, 1.0, query="q1", kind=MEASURED_BREACH, gap=0)) == 3
    assert breaches(series, 5.0, query="q1", kind=MEASURED_BREACH) == []


def test_breaches_reject_bad_kind_and_gap() -> None:
    with pytest.raises(ModelError, match="kind"):
        breaches(np.ones(2), 1.0, query="q", kind=DRIFT)
    with pytest.raises(ModelError, match="gap"):
        breaches(np.ones(2), 1.0, query="q", kind=MEASURED_BREACH, gap=-1)


def test_drift_alerts() -> None:
    event = DriftEvent(3, 9, None, ABOVE, 7, 0.8)
    assert drift_alerts([event]) == [
        Alert(DRIFT, None, 3, 9, 0.8, None, "measured latency above the predicted band")
    ]
