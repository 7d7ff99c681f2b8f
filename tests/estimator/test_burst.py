"""Burst-aware estimator: the (head, rise, tail) summary reproduces a plain-loop Lindley
recursion at sub-bucket resolution; one sub-bucket = Mace; never below Mace; monotone."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimator.burst import (
    burst_from_profile,
    burst_profile,
    even_profile,
    path_sum,
    peak_backlog,
    sub_bucket_of,
    sub_bucket_work,
)
from estimator.errors import ModelError
from estimator.evaluator import estimate
from estimator.mace import cumulative_excess, estimate_from_dlts
from estimator.pathaware import (
    ESTIMATORS,
    Detail,
    estimator_by_name,
    machine_paths,
    stage_rows,
)
from estimator.runs import analyse
from tests.estimator.helpers import chain


def loop_peaks(fine: np.ndarray, service: np.ndarray) -> np.ndarray:
    """Plain loop: Lindley per sub-bucket, the largest backlog after each sub-bucket of p."""
    resources, intervals, k = fine.shape
    out = np.zeros((resources, intervals))
    for i in range(resources):
        backlog = 0.0
        for p in range(intervals):
            peak = 0.0
            for j in range(k):
                backlog = max(0.0, backlog + fine[i, p, j] - service[i] / k)
                peak = max(peak, backlog)
            out[i, p] = peak
    return out


work = st.floats(0.0, 3.0, allow_nan=False, allow_infinity=False)


@st.composite
def profiles(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    resources = draw(st.integers(1, 3))
    intervals = draw(st.integers(1, 8))
    k = draw(st.integers(1, 6))
    values = draw(
        st.lists(work, min_size=resources * intervals * k, max_size=resources * intervals * k)
    )
    capacity = draw(st.lists(st.floats(0.5, 2.0), min_size=resources, max_size=resources))
    return np.array(values).reshape(resources, intervals, k), np.array(capacity)


@settings(max_examples=200, deadline=None)
@given(profiles())
def test_summary_reproduces_the_sub_bucket_loop(case: tuple[np.ndarray, np.ndarray]) -> None:
    fine, service = case
    peaks = peak_backlog(fine.sum(axis=2), service, burst_profile(fine, service))
    np.testing.assert_allclose(peaks, loop_peaks(fine, service), atol=1e-9)


@settings(max_examples=100, deadline=None)
@given(profiles())
def test_equals_mace_at_the_finer_width_maximised_per_subinterval(
    case: tuple[np.ndarray, np.ndarray],
) -> None:
    fine, service = case
    resources, intervals, k = fine.shape
    finer = cumulative_excess(fine.reshape(resources, intervals * k), service / k)
    expected = finer.reshape(resources, intervals, k).max(axis=2)
    peaks = peak_backlog(fine.sum(axis=2), service, burst_profile(fine, service))
    np.testing.assert_allclose(peaks, expected, atol=1e-9)


@settings(max_examples=100, deadline=None)
@given(profiles())
def test_one_sub_bucket_is_mace_and_any_profile_is_not_below(
    case: tuple[np.ndarray, np.ndarray],
) -> None:
    fine, service = case
    k = fine.shape[2]
    dlts = fine.sum(axis=2)
    mace_ce = cumulative_excess(dlts, service)
    np.testing.assert_allclose(
        peak_backlog(dlts, service, burst_profile(dlts[:, :, None], service)), mace_ce, atol=1e-9
    )
    np.testing.assert_allclose(
        peak_backlog(dlts, service, even_profile(dlts, service)), mace_ce, atol=1e-9
    )
    assert np.all(peak_backlog(dlts, service, burst_profile(fine, service)) >= mace_ce - 1e-9)
    # An even profile exceeds Mace only while a backlog drains, by less than C w.
    even = np.repeat((dlts / k)[:, :, None], k, axis=2)
    lifted = peak_backlog(dlts, service, burst_profile(even, service))
    np.testing.assert_allclose(
        lifted, peak_backlog(dlts, service, even_profile(dlts, service, k)), atol=1e-9
    )
    assert np.all(lifted - mace_ce <= service[:, None] * (1 - 1 / k) + 1e-9)


@settings(max_examples=100, deadline=None)
@given(profiles(), st.data())
def test_monotone_in_the_work_of_every_sub_bucket(
    case: tuple[np.ndarray, np.ndarray], data: st.DataObject
) -> None:
    fine, service = case
    more = fine.copy()
    index = tuple(data.draw(st.integers(0, n - 1)) for n in fine.shape)
    more[index] += data.draw(st.floats(0.0, 2.0))
    before = peak_backlog(fine.sum(axis=2), service, burst_profile(fine, service))
    after = peak_backlog(more.sum(axis=2), service, burst_profile(more, service))
    assert np.all(after >= before - 1e-9)


def test_sub_bucket_work_bins_by_stimulus_time() -> None:
    fine = sub_bucket_work(
        np.array([0, 0, 1, 1, 0]),
        np.array([0.1, 0.6, 0.3, 1.9, 5.0]),
        np.array([1.0, 2.0, 3.0, 4.0, 9.0]),
        resources=2,
        subinterval=1.0,
        sub_buckets=2,
        intervals=2,
    )
    assert fine.tolist() == [[[1.0, 2.0], [0.0, 0.0]], [[3.0, 0.0], [0.0, 4.0]]]
    with pytest.raises(ModelError, match="sub_buckets"):
        sub_bucket_work(np.array([0]), np.array([0.0]), np.array([1.0]), 1, 1.0, 0, 1)


def test_a_burst_early_in_the_subinterval_raises_the_estimate() -> None:
    # 1.5 s of work at a capacity of 1 in a 1 s subinterval: Mace sees 0.5 s at the
    # end; all of it in the first quarter peaks at 1.5 - 0.25 = 1.25 s, and the next
    # subinterval starts with the 0.5 s left, 0.25 s after its first quarter.
    dlts = np.array([[1.5, 0.0]])
    base = estimate_from_dlts(dlts, np.array([1.0]), ["n1"], 1.0, 0.0, {"q": np.array([True])})
    fine = np.array([[[1.5, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]])
    burst = burst_from_profile(base, burst_profile(fine, np.array([1.0])), {"q": np.array([True])})
    np.testing.assert_allclose(base.series, [0.5, 0.0])
    np.testing.assert_allclose(burst.series, [1.25, 0.25])
    np.testing.assert_allclose(burst.per_query["q"], [1.25, 0.25])
    np.testing.assert_allclose(burst.lower, base.lower)
    np.testing.assert_allclose(burst.upper, burst.series + 2 * 1.0 / 4)


def test_path_sum_adds_peaks_along_a_path_reaching_one_subinterval_later() -> None:
    peaks = np.array([[1.0, 0.0, 0.0], [0.0, 0.5, 0.0]])
    np.testing.assert_allclose(path_sum(peaks, [(0, 1)]), [1.5, 0.5, 0.0])
    np.testing.assert_allclose(path_sum(peaks, []), [0.0, 0.0, 0.0])


def test_registered_without_a_profile_it_is_mace_with_the_bursty_band() -> None:
    topology = chain()
    arrivals = np.array([[30.0, 80.0, 0.0, 10.0], [5.0, 40.0, 0.0, 0.0]])
    mace = estimate(topology, arrivals)
    burst = estimator_by_name("burst")(topology, arrivals)
    assert ESTIMATORS["burst"].label == "burst-aware"
    np.testing.assert_allclose(burst.series, mace.series, atol=1e-12)
    for query, series in mace.per_query.items():
        np.testing.assert_allclose(burst.per_query[query], series, atol=1e-12)
    assert np.all(burst.upper >= mace.series + 2 * topology.subinterval - 1e-12)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(0.0, 50.0), min_size=1, max_size=30),
    st.sampled_from([0.1, 0.25, 1.0, 3.0]),
    st.integers(1, 9),
)
def test_sub_buckets_stay_inside_the_interval_of_floor_t_over_w(
    times: list[float], width: float, k: int
) -> None:
    t = np.array(times)
    interval, bucket = sub_bucket_of(t, width, k)
    # plain loop: the interval rule of docs/design.md, "DuckDB store"
    for i, value in enumerate(times):
        assert interval[i] == int(np.floor(value / width))
        assert 0 <= bucket[i] < k
    fine = sub_bucket_work(np.zeros(t.size), t, np.ones(t.size), 1, width, k, 1000)
    coarse = np.bincount(interval, minlength=1000)
    np.testing.assert_array_equal(fine.sum(axis=2)[0], coarse)


def test_a_run_analysis_uses_the_measured_profile_for_burst_only() -> None:
    topology = chain()
    rng = np.random.default_rng(5)
    fine = rng.uniform(0.0, 0.5, size=(2, 6, 4))
    fine[0, 2] = [2.0, 0.0, 0.0, 0.0]  # a burst early in subinterval 2 on n1
    dlts = fine.sum(axis=2)
    placements, starts = [topology.placement], (0,)
    mace = analyse(topology, dlts, placements, starts, "mace", Detail(node_fine=fine))
    burst = analyse(topology, dlts, placements, starts, "burst", Detail(node_fine=fine))
    even = analyse(topology, dlts, placements, starts, "burst")
    np.testing.assert_allclose(mace.estimate, analyse(topology, dlts, placements, starts).estimate)
    np.testing.assert_allclose(even.estimate, mace.estimate)  # no profile: Mace's series
    caps = np.array([1.0, 2.0])
    # q2's join reads q1's filter: its events go through n1 too
    hosts = {"q1": np.array([True, False]), "q2": np.array([True, True])}
    base = estimate_from_dlts(dlts, caps, ["n1", "n2"], 1.0, mace.epsilon, hosts)
    rows = stage_rows(machine_paths(topology, base.resources))
    direct = burst_from_profile(base, burst_profile(fine, caps), hosts, rows)
    np.testing.assert_allclose(burst.estimate, direct.series)
    for query in ("q1", "q2"):
        np.testing.assert_allclose(burst.per_query[query], direct.per_query[query])
    assert burst.estimate[2] > mace.estimate[2] + 0.5
    with pytest.raises(ModelError, match="profile of shape"):
        analyse(topology, dlts, placements, starts, "burst", Detail(node_fine=fine[:, :5]))
