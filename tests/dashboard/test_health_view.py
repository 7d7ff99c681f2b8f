"""Freshness and age texts of the Data health page."""

from __future__ import annotations

from datetime import datetime

from hypothesis import given
from hypothesis import strategies as st

from dashboard.health.views import describe_age, freshness
from storage.health import IngestBatch
from storage.reads import RunInfo

LIVE_ORIGIN = 1_795_000_000.0  # 2026-11: a wall-clock start


@given(
    last=st.integers(0, 100_000),
    w=st.sampled_from([0.1, 0.5, 1.0, 2.5]),
    behind=st.floats(0, 10_000),
)
def test_lag_of_a_live_run_is_now_minus_the_end_of_its_newest_subinterval(
    last: int, w: float, behind: float
) -> None:
    run = RunInfo("r", "r", w, LIVE_ORIGIN, 0, last)
    end = LIVE_ORIGIN + (last + 1) * w
    fresh = freshness(run, [], end + behind)
    assert fresh.newest_data_end == end
    assert abs(fresh.lag_seconds - behind) < 1e-6
    assert fresh.last_batch_age_seconds is None


def test_batch_runs_and_empty_runs_have_no_lag_but_the_batch_age() -> None:
    batch = IngestBatch(
        3, 1, 10, 10, 0, datetime(2026, 11, 22, 3, 0, 0), datetime(2026, 11, 22, 3, 0, 5)
    )
    finished = datetime.fromisoformat("2026-11-22T03:00:05+00:00").timestamp()
    for run in (
        RunInfo("r", "r", 1.0, 0.0, 0, 99),
        RunInfo("r", "r", 1.0, LIVE_ORIGIN, None, None),
    ):
        fresh = freshness(run, [batch], finished + 42)
        assert fresh.lag_seconds is None and fresh.newest_data_end is None
        assert fresh.last_batch_age_seconds == 42


def test_ages_read_like_a_person_would_say_them() -> None:
    assert describe_age(None) == "-"
    assert describe_age(4.4) == "4 s"
    assert describe_age(185) == "3 min 5 s"
    assert describe_age(7440) == "2 h 4 min"
