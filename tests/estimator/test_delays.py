"""The engine's fixed pipeline delays, calibrated on calm subintervals."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimator.delays import CALM_BACKLOG, MIN_CALM, NO_DELAY, QueryDelay, calibrate, delay_floor
from estimator.runs import RunAnalysis, with_delays


def plain_delays(
    backlog: list[float], latency: list[float], w: float, window: tuple[int, int]
) -> tuple[float, float, float, int] | None:
    """The rule written out: a subinterval in the window is calm when it and the one
    before it (itself for the first) estimate a backlog of at most CALM_BACKLOG * w and
    it measured outputs; the delay is its latency less its backlog. The high delay is the
    quantile n / (n + 1), n the subintervals with outputs in the whole series."""
    values = []
    for p in range(window[0], window[1]):
        before = backlog[p - 1] if p > 0 else backlog[p]
        if (
            backlog[p] <= CALM_BACKLOG * w
            and before <= CALM_BACKLOG * w
            and not np.isnan(latency[p])
        ):
            values.append(latency[p] - backlog[p])
    if len(values) < MIN_CALM:
        return None
    measured = sum(not np.isnan(v) for v in latency)
    return (
        float(min(values)),
        float(np.median(values)),
        float(np.quantile(values, measured / (measured + 1))),
        len(values),
    )


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_calibration_follows_the_rule_written_out(data: st.DataObject) -> None:
    n = data.draw(st.integers(1, 30))
    backlog = data.draw(
        st.lists(
            st.one_of(st.just(0.0), st.floats(0, 0.2), st.floats(0, 5)), min_size=n, max_size=n
        )
    )
    latency = data.draw(
        st.lists(st.one_of(st.just(float("nan")), st.floats(0, 8)), min_size=n, max_size=n)
    )
    start = data.draw(st.integers(0, n - 1))
    stop = data.draw(st.integers(start + 1, n))
    fitted = calibrate({"q": np.array(backlog)}, {"q": np.array(latency)}, 1.0, (start, stop))["q"]
    expected = plain_delays(backlog, latency, 1.0, (start, stop))
    if expected is None:
        assert not fitted.calibrated
        assert (fitted.low, fitted.typical, fitted.high) == (0.0, 0.0, 0.0)
    else:
        assert fitted.calibrated
        np.testing.assert_allclose((fitted.low, fitted.typical, fitted.high, fitted.calm), expected)


def test_a_pipeline_delay_is_found_under_a_backlog_and_added_to_it() -> None:
    # calm for 6 s at 0.8-1.2 s of latency, then a backlog of up to 3 s on top of it
    backlog = np.array([0, 0, 0, 0, 0, 0, 1.0, 2.0, 3.0, 1.5, 0.0])
    measured = np.array([0.9, 1.0, 0.8, 1.2, 1.0, 1.1, 2.1, 3.0, 4.1, 2.4, 1.0])
    (delay,) = calibrate({"q": backlog}, {"q": measured}, 1.0).values()
    # the first calm subinterval after the backlog (10) had backlog before it: not calm
    assert delay.calm == 6
    assert delay.typical == 1.0
    assert delay.low == 0.8 and 1.15 < delay.high <= 1.2
    analysis = RunAnalysis(
        node_ids=("n",),
        ce_seconds=backlog[None, :],
        estimate=backlog,
        bottleneck=np.zeros(backlog.size, dtype=int),
        lower=backlog,
        upper=backlog + 0.5,
        epsilon=0.1,
        per_query={"q": backlog},
        per_query_lower={"q": backlog},
    )
    delayed = with_delays(analysis, {"q": delay})
    np.testing.assert_allclose(delayed.estimate, backlog + delay.high)
    # the worst subinterval met the top of the calm spread on top of its backlog: the
    # estimated worst case covers it, as the median (1.0) would not (4.0 < 4.1)
    assert measured.max() <= delayed.estimate.max() <= measured.max() + 0.1
    np.testing.assert_allclose(delayed.lower, backlog + delay.low)
    np.testing.assert_allclose(delayed.upper, backlog + 0.5 + delay.high)
    inside = (measured >= delayed.lower) & (measured <= delayed.upper)
    assert inside[6:].all()  # every loaded subinterval
    assert inside[:6].all()  # every calm one: the lower edge takes the least delay
    # without the delay the band misses every calm subinterval
    assert not ((measured <= analysis.upper) & (measured >= analysis.lower))[:6].any()


def test_the_high_delay_is_for_the_worst_of_the_whole_run_not_of_its_window() -> None:
    # ten calm subintervals, delays 1.0 to 1.9, then a run of backlog with outputs
    calm = np.linspace(1.0, 1.9, 10)
    highs = []
    for rest in (0, 10, 90):
        backlog = np.concatenate([np.zeros(10), np.full(rest, 3.0)])
        latency = np.concatenate([calm, np.full(rest, 4.0)])
        (delay,) = calibrate({"q": backlog}, {"q": latency}, 1.0, (0, 10)).values()
        n = 10 + rest
        # by hand: the n / (n + 1) quantile of ten evenly spread delays
        assert delay.high == pytest.approx(1.0 + 0.9 * n / (n + 1))
        assert delay.calm == 10
        highs.append(delay.high)
    # the longer the run, the nearer its worst subinterval comes to the calm top
    assert highs == sorted(highs) and highs[-1] < 1.9


def test_the_system_is_its_slowest_query_and_an_uncalibrated_run_is_left_alone() -> None:
    zero = np.zeros(5)
    analysis = RunAnalysis(
        node_ids=("n",),
        ce_seconds=zero[None, :],
        estimate=zero,
        bottleneck=np.zeros(5, dtype=int),
        lower=zero,
        upper=zero + 1.0,
        epsilon=0.0,
        per_query={"a": zero, "b": zero},
        per_query_lower={"a": zero, "b": zero},
    )
    delays = calibrate(
        {"a": zero, "b": zero}, {"a": zero + 0.5, "b": np.array([2.0, 2.0, 2.0, np.nan, 2.5])}, 1.0
    )
    delayed = with_delays(analysis, delays)
    np.testing.assert_allclose(delayed.per_query["a"], 0.5)
    # b's calm delays are 2, 2, 2 and 2.5 in 4 subintervals with outputs: the worst of 4
    # sits at the 4/5 quantile, by hand 2 + (0.8 * 3 - 2) * 0.5
    np.testing.assert_allclose(delayed.per_query["b"], 2.2)
    np.testing.assert_allclose(delayed.estimate, 2.2)
    np.testing.assert_allclose(delayed.query_upper("b"), 1.0 + delays["b"].high)
    short = calibrate({"a": zero}, {"a": np.array([1.0, np.nan, np.nan, np.nan, 1.0])}, 1.0)
    assert not short["a"].calibrated
    assert with_delays(analysis, short) is analysis


def test_the_floor_is_the_largest_calibrated_delay() -> None:
    fast, slow = QueryDelay(0.1, 0.2, 0.4, 9), QueryDelay(0.5, 1.0, 2.0, 9)
    # a larger delay calibrated on too few calm subintervals is in no estimate
    uncalibrated = QueryDelay(0.0, 0.0, 9.0, MIN_CALM - 1)
    assert delay_floor({"a": fast, "b": slow, "c": uncalibrated}) == ("b", 2.0)
    assert delay_floor({"a": NO_DELAY}) is None
    assert delay_floor({}) is None
