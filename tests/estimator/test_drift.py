"""Calibration and drift: rolling error and drift events against
plain loops, hand-made series, and a refit on a recent window."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimator.drift import (
    ABOVE,
    BELOW,
    DriftEvent,
    drift_events,
    query_drift_events,
    recent_window,
    refit,
    rolling_error,
    runs_of,
    settled,
)
from estimator.errors import ModelError
from estimator.model import topology_from_dict
from estimator.propagation import build_load_model

values = st.one_of(st.just(0.0), st.floats(1e-6, 10.0), st.just(math.nan))


def _plain_error(pred: list[float], meas: list[float], window: int) -> list[float]:
    out = []
    for p in range(len(meas)):
        num = den = 0.0
        seen = 0
        for k in range(max(0, p - window + 1), p + 1):
            if math.isfinite(pred[k]) and math.isfinite(meas[k]):
                num += abs(pred[k] - meas[k])
                den += meas[k]
                seen += 1
        out.append(num / den if seen and den > 0 else math.nan)
    return out


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 40).flatmap(
        lambda n: st.tuples(
            st.lists(values, min_size=n, max_size=n), st.lists(values, min_size=n, max_size=n)
        )
    ),
    st.integers(1, 12),
)
def test_rolling_error_matches_a_plain_loop(
    series: tuple[list[float], list[float]], window: int
) -> None:
    pred, meas = series
    got = rolling_error(np.array(pred), np.array(meas), window)
    want = _plain_error(pred, meas, window)
    assert got.shape == (len(meas),)
    for g, w in zip(got, want, strict=True):
        assert (math.isnan(g) and math.isnan(w)) or g == pytest.approx(w, rel=1e-9, abs=1e-12)


def test_rolling_error_by_hand() -> None:
    pred = np.array([1.0, 1.0, 2.0, 2.0])
    meas = np.array([1.0, 2.0, math.nan, 1.0])
    # window 2: p0 0/1, p1 (0+1)/(1+2), p2 only p1 counts 1/2, p3 only p3: 1/1
    assert rolling_error(pred, meas, 2) == pytest.approx([0.0, 1 / 3, 0.5, 1.0])


def test_rolling_error_rejects_bad_input() -> None:
    with pytest.raises(ModelError, match="window"):
        rolling_error(np.ones(3), np.ones(3), 0)
    with pytest.raises(ModelError, match="same length"):
        rolling_error(np.ones(3), np.ones(4), 2)


def _plain_events(
    meas: list[float], lower: list[float], upper: list[float], k: int
) -> list[tuple[int, int, str, int, float]]:
    events = []
    for direction in (ABOVE, BELOW):
        start = None
        for p in range(len(meas) + 1):
            outside = False
            excess = 0.0
            if p < len(meas) and math.isfinite(meas[p]):
                excess = meas[p] - upper[p] if direction == ABOVE else lower[p] - meas[p]
                outside = excess > 0
            if outside and start is None:
                start = p
            if not outside and start is not None:
                if p - start >= k:
                    peak = max(
                        (meas[q] - upper[q]) if direction == ABOVE else (lower[q] - meas[q])
                        for q in range(start, p)
                    )
                    events.append((start, p - 1, direction, start + k - 1, peak))
                start = None
    return sorted(events, key=lambda e: (e[0], e[2]))


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 50).flatmap(
        lambda n: st.tuples(
            st.lists(values, min_size=n, max_size=n),
            st.lists(st.floats(0.0, 5.0), min_size=n, max_size=n),
            st.lists(st.floats(0.0, 5.0), min_size=n, max_size=n),
        )
    ),
    st.integers(1, 6),
)
def test_drift_events_match_a_plain_loop(
    series: tuple[list[float], list[float], list[float]], k: int
) -> None:
    meas, a, b = series
    lower = [min(x, y) for x, y in zip(a, b, strict=True)]
    upper = [max(x, y) for x, y in zip(a, b, strict=True)]
    got = drift_events(np.array(meas), np.array(lower), np.array(upper), k, query="q1")
    want = _plain_events(meas, lower, upper, k)
    assert [(e.start, e.end, e.direction, e.flagged_at) for e in got] == [w[:4] for w in want]
    assert [e.peak for e in got] == pytest.approx([w[4] for w in want])
    assert all(e.query == "q1" for e in got)


def test_drift_events_by_hand() -> None:
    upper = np.full(12, 2.0)
    lower = np.full(12, 1.0)
    meas = np.array([1.5, 2.5, 2.6, 2.7, 1.5, 3.0, 3.0, 3.5, math.nan, 0.5, 0.4, 0.3])
    # above for 3 (1..3) then 3 (5..7); the NaN at 8 ends the second; below for 3 (9..11)
    assert drift_events(meas, lower, upper, 3) == [
        DriftEvent(1, 3, None, ABOVE, 3, pytest.approx(0.7)),
        DriftEvent(5, 7, None, ABOVE, 7, 1.5),
        DriftEvent(9, 11, None, BELOW, 11, 0.7),
    ]
    assert drift_events(meas, lower, upper, 4) == []
    # a tolerance widens the band
    assert [e.start for e in drift_events(meas, lower, upper, 3, tolerance=0.65)] == [5]


def test_per_query_drift_against_each_querys_own_band() -> None:
    # q1 has a backlog (band [1, 4]) and stays in it; q2 none (band [0, 1.5]) and
    # leaves it above from 4 to 8, while the worst query stays inside the system's band
    # [1, 4]: only the per-query check sees q2. q3 drops below its band for 2 only.
    n = 10
    lower = {"q1": np.full(n, 1.0), "q2": np.zeros(n), "q3": np.full(n, 0.5)}
    upper = {"q1": np.full(n, 4.0), "q2": np.full(n, 1.5), "q3": np.full(n, 1.5)}
    measured = {
        "q1": np.full(n, 2.5),
        "q2": np.array([0.2, 0.2, 0.2, 0.2, 3.0, 3.0, 3.2, 3.0, 3.0, 0.2]),
        "q3": np.array([1.0, 1.0, 0.1, 0.1, 1.0, 1.0, 1.0, 0.1, 0.1, 0.1]),
        "q4": np.full(n, 99.0),  # no band: not checked
    }
    system = np.max(np.vstack([measured[q] for q in ("q1", "q2", "q3")]), axis=0)
    assert drift_events(system, lower["q1"], upper["q1"], 3) == []
    got = query_drift_events(measured, lower, upper, 3)
    assert got == [
        DriftEvent(4, 8, "q2", ABOVE, 6, pytest.approx(1.7)),
        DriftEvent(7, 9, "q3", BELOW, 9, pytest.approx(0.4)),
    ]
    assert [(e.query, e.flagged_at) for e in query_drift_events(measured, lower, upper, 4)] == [
        ("q2", 7)
    ]
    # a query's event over exactly the stretch and side of a system event is the system's
    assert query_drift_events(
        measured, lower, upper, 3, system=[DriftEvent(4, 8, None, ABOVE, 6, 1.7)]
    ) == [got[1]]
    shifted = DriftEvent(4, 7, None, ABOVE, 6, 1.7)
    assert len(query_drift_events(measured, lower, upper, 3, system=[shifted])) == 2


def test_drift_rejects_bad_k_and_shapes() -> None:
    with pytest.raises(ModelError, match="k must be"):
        drift_events(np.ones(3), np.ones(3), np.ones(3), 0)
    with pytest.raises(ModelError, match="same length"):
        drift_events(np.ones(3), np.ones(2), np.ones(3))


def test_runs_of() -> None:
    assert runs_of(np.array([1, 1, 0, 1, 0, 0, 1], dtype=bool)) == [(0, 1), (3, 3), (6, 6)]
    assert runs_of(np.zeros(0, dtype=bool)) == []


def test_recent_window_mirrors_the_training_window() -> None:
    assert recent_window(100) == (90, 100)
    assert recent_window(5, 0.1) == (4, 5)
    assert recent_window(100, 1.0) == (0, 100)


def test_refit_on_a_recent_window_learns_the_new_cost() -> None:
    topology = topology_from_dict(
        {
            "name": "one",
            "nodes": [{"id": "n1", "capacity": 1.0}],
            "sources": [{"id": "s"}],
            "operators": [{"id": "a", "query": "q", "inputs": ["s"], "cost": 0.01}],
            "placement": {"a": "n1"},
        }
    )
    counts = np.full((1, 20), 10.0)
    # the cost doubles from interval 10 on
    cost = np.where(np.arange(20) < 10, 0.01, 0.02)
    stats = pd.DataFrame(
        {
            "operator": "a",
            "port": 0,
            "interval": np.arange(20),
            "events_in": 10,
            "events_out": 10,
            "cpu_seconds": cost * 10,
        }
    )
    old = build_load_model(topology, counts).operator_dlts()
    assert old[0] == pytest.approx(np.full(20, 0.1))
    assert refit(topology, stats, counts, recent_window(20, 0.25))[0] == pytest.approx(
        np.full(20, 0.2)
    )
    assert refit(topology, stats, counts, (0, 10))[0] == pytest.approx(np.full(20, 0.1))
    with pytest.raises(ModelError, match="holds no subinterval"):
        refit(topology, stats, counts, (5, 5))


def test_settled_subintervals_have_all_their_outputs_in() -> None:
    # 5 subintervals of 1 s, data up to t = 5: p = 2 with bound 2.0 ends at 5 (in), p = 3
    # with bound 1.5 at 5.5 (out), p = 4 with bound 0 at 5 (in); NaN bound: unknown, out
    upper = np.array([0.5, 3.0, 2.0, 1.5, 0.0])
    assert settled(upper, 1.0).tolist() == [True, True, True, False, True]
    assert settled(np.array([math.nan, 0.0]), 1.0).tolist() == [False, True]
