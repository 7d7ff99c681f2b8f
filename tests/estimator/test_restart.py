"""A restart before a placement version (a Flink rescale: the job stops, then runs at the
new parallelism): nothing is served while it is stopped, and a record that arrives then
waits for the rest of the stop. Against a plain loop and by hand."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimator.delays import QueryDelay
from estimator.mace import estimate_from_dlts, stop_series
from estimator.runs import (
    RunAnalysis,
    analyse,
    restart_spans,
    restart_starts,
    version_stops,
    with_delays,
)
from estimator.verification import check_changes
from tests.estimator.test_rescale import NODES, THREE, VERTEX


def plain_restarted_mace(
    loads: np.ndarray,
    caps: np.ndarray,
    w: float,
    origin: float,
    stops: list[tuple[float, float]],
) -> tuple[np.ndarray, np.ndarray]:
    """Lindley's recursion one subinterval at a time, serving nothing while the job is
    stopped: C * w times the part of the subinterval it runs; CE/C plus the stop left at
    the subinterval's end, per node and the max over nodes. A stopped subinterval is
    served at the capacity of the first subinterval that starts once the job runs."""
    ce = np.zeros_like(loads)
    intervals = loads.shape[1]
    for i in range(loads.shape[0]):
        backlog = 0.0
        for p in range(intervals):
            begin, end = origin + p * w, origin + (p + 1) * w
            touching = [(a, b) for a, b in stops if a < end and b > begin]
            stopped = sum(min(end, b) - max(begin, a) for a, b in touching)
            running = max(0.0, 1.0 - stopped / w)
            left = max([b - end for a, b in touching if b > end], default=0.0)
            serving = p
            if touching:
                resumed = max(b for a, b in touching)
                while serving < intervals - 1 and origin + serving * w < resumed - 1e-9 * w:
                    serving += 1
            capacity = caps[i, serving]
            backlog = max(0.0, backlog + loads[i, p] - capacity * w * running)
            ce[i, p] = backlog / capacity + left
    return ce, ce.max(axis=0)


stop_pairs = st.lists(
    st.tuples(st.floats(0.0, 20.0), st.floats(0.05, 6.0)).map(lambda s: (s[0], s[0] + s[1])),
    max_size=2,
).map(lambda pairs: sorted(pairs))


def _disjoint(pairs: list[tuple[float, float]]) -> bool:
    return all(b[0] >= a[1] for a, b in itertools.pairwise(pairs))


@settings(max_examples=120, deadline=None)
@given(
    intervals=st.integers(1, 20),
    subinterval=st.sampled_from([0.5, 1.0, 2.0]),
    stops=stop_pairs,
    seed=st.integers(0, 10_000),
    rescaled=st.booleans(),
)
def test_a_stop_against_a_plain_loop(
    intervals: int,
    subinterval: float,
    stops: list[tuple[float, float]],
    seed: int,
    rescaled: bool,
) -> None:
    if not _disjoint(stops):
        stops = stops[:1]
    rng = np.random.default_rng(seed)
    origin = 100.0
    loads = rng.uniform(0, 3, (len(NODES), intervals))
    caps = np.repeat(rng.choice([0.5, 1.0, 2.0], len(NODES))[:, None], intervals, axis=1)
    shifted = [(origin + a, origin + b) for a, b in stops]
    series = stop_series(shifted, origin, subinterval, intervals)
    if rescaled:  # capacities change at a subinterval (a rescale), stops or not
        caps[:, rng.integers(0, intervals) :] *= rng.choice([0.5, 2.0, 3.0], (len(NODES), 1))
    got = estimate_from_dlts(
        loads, caps if rescaled else caps[:, 0], NODES, subinterval, 0.0, stops=series
    )
    ce, mace = plain_restarted_mace(loads, caps, subinterval, origin, shifted)
    np.testing.assert_allclose(got.series, mace, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(got.lower, mace, rtol=1e-9, atol=1e-9)
    left = ce - got.ce_seconds  # the stop still to come is the same for every node
    np.testing.assert_allclose(left, np.repeat(left[:1], len(NODES), axis=0), atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(intervals=st.integers(1, 15), seed=st.integers(0, 10_000))
def test_no_stop_is_todays_analysis_exactly(intervals: int, seed: int) -> None:
    loads = np.random.default_rng(seed).uniform(0, 3, (len(NODES), intervals))
    placements = [dict(THREE.placement), {"a": "n2", "b": "n3"}]
    starts = (0, intervals // 2)
    # a stop wholly before the run's first subinterval is no stop
    assert stop_series([(-5.0, -1.0)], 0.0, 1.0, intervals) is None
    for name in ("mace", "path", "burst"):
        today = analyse(THREE, loads, placements, starts, name)
        with_none = analyse(THREE, loads, placements, starts, name, stops=None)
        assert np.array_equal(today.estimate, with_none.estimate)
        assert np.array_equal(today.upper, with_none.upper)


def test_stop_series_by_hand() -> None:
    # origin 100, w = 1: stopped from 102.5 to 105.2. Subinterval 2 is half stopped and
    # a record arriving in it waits until 105.2, 2.2 s after its end; 3 and 4 are
    # stopped (1.2 s and 0.2 s left); 5 is stopped for 0.2 s, with nothing left.
    stops = stop_series([(102.5, 105.2)], 100.0, 1.0, 7)
    assert stops is not None
    np.testing.assert_allclose(stops.share, [0, 0, 0.5, 1, 1, 0.2, 0], atol=1e-12)
    np.testing.assert_allclose(stops.left, [0, 0, 2.2, 1.2, 0.2, 0, 0], atol=1e-12)


def test_a_restart_before_a_rescale_by_hand() -> None:
    # one operator (cost 0.1, 15 events/s: 1.5 CPU-s/s) on one thread, then two from
    # interval 3, the job stopped for all of interval 2 before it. One thread: CE 0.5,
    # 1.0, then 2.5 CPU-s (nothing served in interval 2), which the two threads serve
    # once the job runs: 1.25 s. Two threads: 2.0, 1.5, 1.0 over capacity 2: 1.0,
    # 0.75, 0.5. Without the stop the period after the change would be predicted at
    # 0.5 s. The period before the change ends where the restart began: intervals 0
    # and 1, the old configuration running (worst 1.0 s).
    stats = pd.DataFrame(
        [("op", 0, p, 0 if p == 2 else 15, 0 if p == 2 else 15, 0.0 if p == 2 else 1.5)
         for p in range(6)],
        columns=["operator", "port", "interval", "events_in", "events_out", "cpu_seconds"],
    )  # fmt: skip
    counts = np.full((1, 6), 15.0)
    placements = [dict(VERTEX.placement)] * 2
    capacities = [{"op-threads": 1.0}, {"op-threads": 2.0}]
    versions = [
        SimpleNamespace(valid_from=0.0, stopped_at=None, capacities={"op-threads": 1.0}),
        SimpleNamespace(valid_from=3.0, stopped_at=2.0, capacities={"op-threads": 2.0}),
    ]
    spans = restart_spans(versions)
    assert spans == [(2.0, 3.0)]
    stops = version_stops(spans, VERTEX.origin, VERTEX.subinterval, 6)
    restarts = restart_starts(versions, VERTEX.origin, VERTEX.subinterval)
    assert restarts == [None, 2]
    measured = np.array([0.6, 1.1, 3.0, 1.2, 0.8, 0.5])
    (check,) = check_changes(
        VERTEX, stats, counts, placements, (0, 3), measured, capacities=capacities, stops=stops
    )
    assert check.predicted_wc_before == pytest.approx(1.25)
    assert check.predicted_wc_after == pytest.approx(1.0)
    (running,) = check_changes(
        VERTEX, stats, counts, placements, (0, 3), measured, capacities=capacities,
        stops=stops, restarts=restarts,
    )  # fmt: skip
    assert (running.before, running.after, running.training) == ((0, 2), (3, 6), (0, 2))
    assert running.predicted_wc_before == pytest.approx(1.0)
    assert running.predicted_wc_after == pytest.approx(1.0)
    assert (running.measured_wc_before, running.measured_wc_after) == (1.1, 1.2)
    (unstopped,) = check_changes(
        VERTEX, stats, counts, placements, (0, 3), measured, capacities=capacities
    )
    assert unstopped.predicted_wc_after == pytest.approx(0.5)


def test_a_restart_lasts_until_every_subtask_runs_again() -> None:
    # stopped at 2.5, every subtask running again at 3.4 (the version's valid_from, its
    # first subinterval 4), the rescaled op neither busy nor taking records in 3 and 4
    # (the samples lag the restart): the stop ends at 3.4 all the same. Fitted on [0, 2):
    # cost 0.1, 1.5 CPU-s a subinterval. One thread: CE 0.5, 1.0; in 2 (half stopped)
    # 1.0 served, backlog 1.5 at the two threads' capacity, 0.75 s, plus the 0.4 s of
    # stop left; in 3 (0.4 stopped) 1.2 served: 1.8, 0.9 s; then 1.3, 0.8, 0.3, 0 CPU-s
    # at two threads: 0.65 s is the worst after the change. A stop until the op's first
    # busy subinterval (5.0) would leave 2.25 s there.
    stats = pd.DataFrame(
        [("op", 0, p, 0 if p in (3, 4) else 15, 0 if p in (3, 4) else 15,
          0.0 if p in (3, 4) else 1.5) for p in range(8)],
        columns=["operator", "port", "interval", "events_in", "events_out", "cpu_seconds"],
    )  # fmt: skip
    versions = [
        SimpleNamespace(valid_from=0.0, stopped_at=None),
        SimpleNamespace(valid_from=3.4, stopped_at=2.5),
    ]
    assert restart_spans(versions) == [(2.5, 3.4)]
    stops = version_stops(restart_spans(versions), VERTEX.origin, VERTEX.subinterval, 8)
    assert stops is not None
    np.testing.assert_allclose(stops.share, [0, 0, 0.5, 0.4, 0, 0, 0, 0], atol=1e-12)
    np.testing.assert_allclose(stops.left, [0, 0, 0.4, 0, 0, 0, 0, 0], atol=1e-12)
    (check,) = check_changes(
        VERTEX, stats, np.full((1, 8), 15.0), [dict(VERTEX.placement)] * 2, (0, 4),
        np.ones(8), capacities=[{"op-threads": 1.0}, {"op-threads": 2.0}], stops=stops,
        restarts=restart_starts(versions, VERTEX.origin, VERTEX.subinterval),
    )  # fmt: skip
    assert (check.before, check.after) == ((0, 2), (4, 8))
    assert check.predicted_wc_before == pytest.approx(1.0)
    assert check.predicted_wc_after == pytest.approx(0.65)


def test_the_period_after_a_change_ends_where_the_next_restart_begins() -> None:
    # versions from 0, 4 and 8 of 12 subintervals; the third began with a restart in 6
    stats = pd.DataFrame(
        [("op", 0, p, 15, 15, 1.5) for p in range(12)],
        columns=["operator", "port", "interval", "events_in", "events_out", "cpu_seconds"],
    )
    checks = check_changes(
        VERTEX, stats, np.full((1, 12), 5.0), [dict(VERTEX.placement)] * 3, (0, 4, 8),
        np.ones(12), restarts=[None, None, 6],
    )  # fmt: skip
    assert [(c.before, c.after) for c in checks] == [((0, 4), (4, 6)), ((4, 6), (8, 12))]


def test_records_in_the_pipeline_when_the_job_stops_are_left_out_of_both_periods() -> None:
    # versions from 0, 4 and 8 of 12 subintervals, the second and third began with a
    # restart (in 4 and 6). A pipeline delay of 1.5 s typical (calibrated by ``finish``)
    # keeps the records of the last ceil(1.5 / 1) = 2 subintervals before each stop in
    # flight: they waited for the restart (measured 9 s), so neither side counts them
    stats = pd.DataFrame(
        [("op", 0, p, 15, 15, 1.5) for p in range(12)],
        columns=["operator", "port", "interval", "events_in", "events_out", "cpu_seconds"],
    )

    def finish(analysis: RunAnalysis, window: tuple[int, int]) -> RunAnalysis:
        return with_delays(analysis, {"op": QueryDelay(1.0, 1.5, 2.0, 5)})

    measured = np.array([1.0, 1.2, 9.0, 9.0, 1.1, 9.0, 1.0, 1.0, 1.3, 1.0, 1.0, 1.0])
    checks = check_changes(
        VERTEX, stats, np.full((1, 12), 5.0), [dict(VERTEX.placement)] * 3, (0, 4, 8),
        measured, restarts=[None, 4, 6], finish=finish,
    )  # fmt: skip
    # (0, 4) less 2 before the stop in 4; (4, 6) keeps one; (8, 12) has no stop after it
    assert [(c.before, c.after) for c in checks] == [((0, 2), (4, 5)), ((4, 5), (8, 12))]
    assert [(c.measured_wc_before, c.measured_wc_after) for c in checks] == [
        (1.2, 1.1),
        (1.1, 1.3),
    ]
    plain = check_changes(
        VERTEX, stats, np.full((1, 12), 5.0), [dict(VERTEX.placement)] * 3, (0, 4, 8),
        measured, restarts=[None, 4, 6],
    )  # fmt: skip
    assert [(c.before, c.after) for c in plain] == [((0, 4), (4, 6)), ((4, 6), (8, 12))]
