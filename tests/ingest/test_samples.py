"""Counter samples -> deltas (ingest.samples) on tiny inline DataFrames, hand-computed."""

from __future__ import annotations

import math
import random

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.testing import assertDataFrameEqual

from ingest.samples import (
    DIP_SAMPLES,
    STATE_COLUMNS,
    last_samples,
    sample_deltas,
    sample_totals,
    walk_counters,
)
from ingest.transforms import RunSpec

pytestmark = pytest.mark.spark

SPEC = RunSpec(
    origin=100.0,
    subinterval=1.0,
    sources=("src",),
    ports_by_operator={"a": 1},
    capacity_by_node={"a-threads": 2.0},
    queries=("q",),
    sub_buckets=8,
)
ROWS = (
    "time double, node string, operator string, subtask long, port long, "
    "records_in double, records_out double, busy_seconds double, work_seconds double, "
    "reason string"
)
STATE = (
    "operator string, subtask long, port long, time double, node string, "
    "records_in double, records_out double, busy_seconds double, work_seconds double"
)
NAN = math.nan
TOTALS = (
    "operator string, node string, interval long, events_in long, events_out long, "
    "busy_seconds double, work_seconds double, restart long, dips long, busy_nan long, "
    "busy_negative long"
)


def _sample(time: float, records: float, busy: float, *, subtask: int = 0, op: str = "a",
            out: float | None = None, reason: str | None = None,
            work: float = NAN) -> tuple[object, ...]:  # fmt: skip
    node = "tm" if op == "src" else "a-threads"
    outputs = float(records if out is None else out)
    return (time, node, op, subtask, -1, float(records), outputs, busy, work, reason)


def _totals(spark, rows, previous=()):  # type: ignore[no-untyped-def]
    frame = spark.createDataFrame(list(rows), ROWS)
    state = spark.createDataFrame(list(previous), STATE)
    return sample_totals(sample_deltas(frame, state, SPEC))


def test_first_sample_is_a_baseline_and_deltas_split_by_overlap(spark) -> None:  # type: ignore[no-untyped-def]
    # 100 events already counted when the collector attached: not charged to any interval.
    # 100 -> 110 over [100.5, 101.5): half in interval 0, half in interval 1.
    rows = [_sample(100.5, 100, 1.0), _sample(101.5, 110, 1.5)]
    expected = [
        ("a", "a-threads", 0, 5, 5, 0.25, None, 0, 0, 0, 0),
        ("a", "a-threads", 1, 5, 5, 0.25, None, 0, 0, 0, 0),
    ]
    assertDataFrameEqual(_totals(spark, rows), spark.createDataFrame(expected, TOTALS))


def test_missing_samples_spread_the_delta_over_the_gap(spark) -> None:  # type: ignore[no-untyped-def]
    # 30 events and 3 s of busy time over [101.0, 104.0): 10 and 1.0 s per interval 1..3.
    rows = [_sample(101.0, 0, 0.0), _sample(104.0, 30, 3.0)]
    expected = [("a", "a-threads", k, 10, 10, 1.0, None, 0, 0, 0, 0) for k in (1, 2, 3)]
    assertDataFrameEqual(_totals(spark, rows), spark.createDataFrame(expected, TOTALS))


def test_whole_counts_add_up_exactly(spark) -> None:  # type: ignore[no-untyped-def]
    # 7 events over [100.5, 103.5): cumulative shares 1/6, 1/2, 5/6, 1 of 7 events are
    # 1.17, 3.5, 5.83, 7 -> rounded (half up) 1, 4, 6, 7 -> per interval 1, 3, 2, 1
    rows = [_sample(100.5, 0, 0.0), _sample(103.5, 7, 0.0)]
    totals = _totals(spark, rows).orderBy("interval").collect()
    assert [r["events_in"] for r in totals] == [1, 3, 2, 1]
    assert sum(r["events_in"] for r in totals) == 7


def test_a_counter_that_stays_low_restarted(spark) -> None:  # type: ignore[no-untyped-def]
    rows = [_sample(100.0, 50, 5.0), _sample(101.0, 60, 5.5), _sample(102.0, 4, 0.2)]
    rows += [_sample(103.0 + k, 4 + 2 * (k + 1), 0.2 * (k + 2)) for k in range(DIP_SAMPLES)]
    totals = {r["interval"]: r for r in _totals(spark, rows).collect()}
    assert totals[0]["events_in"] == 10 and totals[0]["restart"] == 0
    assert totals[1]["events_in"] == 4  # counted from zero again
    assert totals[1]["busy_seconds"] == pytest.approx(0.2)
    assert totals[1]["restart"] == 1 and totals[1]["dips"] == 0
    assert [totals[k]["events_in"] for k in (2, 3, 4)] == [2, 2, 2]


def test_a_counter_that_dips_and_comes_back_is_not_a_burst(spark) -> None:  # type: ignore[no-untyped-def]
    """A sample read from a stale subtask (the counter dips and is back at the next
    sample): no events for the dip, none twice after it; counted as a dip."""
    values = [100, 110, 120, 30, 130, 140]
    rows = [_sample(100.0 + k, v, 0.1 * v) for k, v in enumerate(values)]
    totals = {r["interval"]: r for r in _totals(spark, rows).collect()}
    assert sum(r["events_in"] for r in totals.values()) == 40
    assert sum(r["restart"] for r in totals.values()) == 0
    assert sum(r["dips"] for r in totals.values()) == 1
    # the delta 120 -> 130 spreads over the dip's span [102, 104)
    assert [totals[k]["events_in"] for k in range(5)] == [10, 10, 5, 5, 10]
    assert sum(r["busy_seconds"] for r in totals.values()) == pytest.approx(4.0)


def test_a_dip_at_the_end_of_a_batch_is_left_to_the_next(spark) -> None:  # type: ignore[no-untyped-def]
    """The state stays the sample before the dip; the next batch tells a dip (back above
    it) from a restart (still below), and no count is lost or doubled."""
    state_schema = spark.createDataFrame([], STATE).schema
    first = spark.createDataFrame(
        [_sample(100.0, 0, 0.0), _sample(101.0, 50, 1.0), _sample(102.0, 3, 0.3)], ROWS
    )
    empty = spark.createDataFrame([], state_schema)
    totals = sample_totals(sample_deltas(first, empty, SPEC)).collect()
    assert sum(r["events_in"] for r in totals) == 50
    state = last_samples(first, empty)
    assert [(r["time"], r["records_in"]) for r in state.collect()] == [(101.0, 50.0)]
    came_back = [_sample(103.0, 60, 2.0), _sample(104.0, 70, 3.0)]
    restarted = [_sample(103.0 + k, 5 + 2 * k, 0.5) for k in range(DIP_SAMPLES + 1)]
    for rows, events, restarts in ((came_back, 20, 0), (restarted, 5 + 2 * DIP_SAMPLES, 1)):
        frame = spark.createDataFrame(rows, ROWS)
        totals = sample_totals(sample_deltas(frame, state, SPEC)).collect()
        assert sum(r["events_in"] for r in totals) == events
        assert sum(r["restart"] for r in totals) == restarts


def _walk(values: list[float]) -> pd.DataFrame:
    samples = pd.DataFrame(
        {
            "operator": "a", "subtask": 0, "port": -1, "time": np.arange(len(values), dtype=float),
            "node": "n", "records_in": np.asarray(values, dtype=float),
            "records_out": 2 * np.asarray(values, dtype=float), "busy_seconds": 0.0,
            "work_seconds": NAN, "_new": 1,
        }
    )  # fmt: skip
    return walk_counters(samples)


STEP = st.one_of(
    st.tuples(st.just("tick"), st.integers(0, 5)),
    st.tuples(st.just("restart"), st.integers(0, 5)),
    st.tuples(st.just("stale"), st.integers(1, DIP_SAMPLES)),
)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 100), st.lists(STEP, max_size=30), st.randoms(use_true_random=False))
def test_the_walk_counts_every_event_once_through_dips_and_restarts(
    start: int, steps: list[tuple[str, int]], draw: random.Random
) -> None:
    """A plain model of a counter: ticks add events, a restart counts from zero again, a
    stale read shows an older value (1 to DIP_SAMPLES samples, then a fresh one). The
    walk's deltas add up to the events the model counted, with its restarts."""
    value, values, events, restarts, stale = start, [float(start)], 0, 0, 0
    restart_allowed = False  # the counter well above what DIP_SAMPLES + 1 samples add
    for kind, n in [*steps, *[("tick", 0)] * DIP_SAMPLES]:
        if kind == "tick" or (kind == "restart" and not restart_allowed):
            value, events = value + n, events + n
            values.append(float(value))
        elif kind == "restart":
            value, events, restarts = n, events + n, restarts + 1
            values.append(float(value))
        else:
            for _ in range(n):
                values.append(float(draw.randrange(value)) if value else 0.0)
            stale += n if value else 0
            value, events = value + 1, events + 1  # a fresh sample after the stale read
            values.append(float(value))
        restart_allowed = kind != "stale" and value > 5 * (DIP_SAMPLES + 1)
    walked = _walk(values)
    deltas = walked[walked["_state"] == 0]
    counted = np.where(
        deltas["_restart"] == 1,
        deltas["records_in"],
        deltas["records_in"] - deltas["_prev_records_in"],
    )
    assert counted.sum() == events and (counted >= 0).all()
    assert int(deltas["_restart"].sum()) == restarts
    assert int(deltas["_dips"].sum()) <= stale
    (state,) = walked.loc[walked["_state"] == 1, "records_in"]
    assert state == values[-1]  # the trailing samples decide every dip and restart


def test_the_walk_skips_a_lone_dip_and_keeps_a_restart() -> None:
    walked = _walk([10, 20, 5, 30, 40])
    deltas = walked[walked["_state"] == 0]
    assert deltas["records_in"].tolist() == [20, 30, 40]
    assert deltas["_prev_records_in"].tolist() == [10, 20, 30]
    assert deltas["_dips"].tolist() == [0, 1, 0]
    walked = _walk([100, 200, 5, 6, 7, 8])
    deltas = walked[walked["_state"] == 0]
    assert deltas["_restart"].tolist() == [0, 1, 0, 0, 0]


def test_nan_and_negative_busy_time_are_clamped_and_counted(spark) -> None:  # type: ignore[no-untyped-def]
    rows = [
        _sample(100.0, 0, 1.0),
        _sample(101.0, 10, 0.8),  # busy went down while records went up: negative delta
        _sample(102.0, 20, NAN),  # busy unknown
        _sample(103.0, 30, 1.5),  # previous busy unknown: no delta either
        _sample(104.0, 40, 1.75),
    ]
    totals = {r["interval"]: r for r in _totals(spark, rows).collect()}
    assert [totals[k]["busy_seconds"] for k in range(4)] == [0.0, 0.0, 0.0, 0.25]
    assert [totals[k]["busy_negative"] for k in range(4)] == [1, 0, 0, 0]
    assert [totals[k]["busy_nan"] for k in range(4)] == [0, 1, 1, 0]
    assert [totals[k]["events_in"] for k in range(4)] == [10, 10, 10, 10]


def test_work_spreads_as_busy_time_and_stays_null_where_not_measured(spark) -> None:  # type: ignore[no-untyped-def]
    # a: 1.5 s of worker CPU over [101, 104): 0.5 s per interval; then it goes down
    # (a collector restarted its attribution): counted as 0. b measures no work.
    rows = [
        _sample(101.0, 0, 0.0, work=0.0),
        _sample(104.0, 30, 3.0, work=1.5),
        _sample(105.0, 40, 3.5, work=0.2),
        _sample(101.0, 0, 0.0, op="b"),
        _sample(102.0, 10, 0.5, op="b"),
    ]
    totals = {(r["operator"], r["interval"]): r for r in _totals(spark, rows).collect()}
    assert [totals["a", k]["work_seconds"] for k in (1, 2, 3, 4)] == pytest.approx(
        [0.5, 0.5, 0.5, 0.0]
    )
    assert totals["b", 1]["work_seconds"] is None
    assert totals["b", 1]["busy_seconds"] == pytest.approx(0.5)


def test_source_busy_time_is_not_a_problem_and_records_out_count(spark) -> None:  # type: ignore[no-untyped-def]
    rows = [_sample(100.2, 0, NAN, op="src", out=0), _sample(100.8, 0, NAN, op="src", out=12)]
    expected = [("src", "tm", 0, 0, 12, 0.0, None, 0, 0, 0, 0)]
    assertDataFrameEqual(_totals(spark, rows), spark.createDataFrame(expected, TOTALS))


def test_parallel_subtasks_are_summed_and_quarantined_rows_ignored(spark) -> None:  # type: ignore[no-untyped-def]
    rows = [
        _sample(100.0, 0, 0.0, subtask=0),
        _sample(100.0, 0, 0.0, subtask=1),
        _sample(101.0, 6, 0.5, subtask=0),
        _sample(101.0, 4, 0.25, subtask=1),
        _sample(101.0, 1000, 9.0, subtask=1, reason="negative counter"),
    ]
    expected = [("a", "a-threads", 0, 10, 10, 0.75, None, 0, 0, 0, 0)]
    assertDataFrameEqual(_totals(spark, rows), spark.createDataFrame(expected, TOTALS))


def test_previous_batch_state_gives_the_first_sample_a_predecessor(spark) -> None:  # type: ignore[no-untyped-def]
    previous = [("a", 0, -1, 100.0, "a-threads", 40.0, 40.0, 2.0, NAN)]
    rows = [_sample(101.0, 45, 2.5)]
    expected = [("a", "a-threads", 0, 5, 5, 0.5, None, 0, 0, 0, 0)]
    assertDataFrameEqual(_totals(spark, rows, previous), spark.createDataFrame(expected, TOTALS))
    newest = last_samples(spark.createDataFrame(rows, ROWS), spark.createDataFrame(previous, STATE))
    expected_state = [("a", 0, -1, 101.0, "a-threads", 45.0, 45.0, 2.5, None)]
    assertDataFrameEqual(newest, spark.createDataFrame(expected_state, STATE))
    assert tuple(newest.columns) == STATE_COLUMNS


def test_out_of_range_sample_times_and_counters_are_quarantined(spark) -> None:  # type: ignore[no-untyped-def]
    """A sample time or counter of 1e300 used to abort the batch (cast to long overflowed)."""
    from ingest.transforms import with_reason

    columns = [c for c in ROWS.split(", ") if not c.startswith("reason")]
    fields = ", ".join(f"{c}, {c.split()[0]}__problem string" for c in columns)
    schema = f"file string, block long, mid long, raw string, {fields}"

    def parsed(mid: int, sample: tuple[object, ...]) -> tuple[object, ...]:
        values: list[object] = ["s.jsonl", 0, mid, "{}"]
        for value in sample[:-1]:
            values += [value, None]
        return tuple(values)

    samples = [
        _sample(100.0, 0, 0.0),
        _sample(101.0, 10, 0.5),
        _sample(1e300, 20, 1.0),
        _sample(102.0, 1e300, 1.0),
        _sample(102.5, 30, 1e300),
        _sample(103.0, 40, NAN),
    ]
    frame = spark.createDataFrame([parsed(k, s) for k, s in enumerate(samples)], schema)
    rows = with_reason(frame, "samples", SPEC)
    reasons = [r["reason"] for r in rows.orderBy("mid").collect()]
    assert reasons == [
        None,
        None,
        "'time' more than 10 years from the run's origin",
        "'records_in' above 2^53",
        "'busy_seconds' above 2^53",
        None,
    ]
    state = spark.createDataFrame([], STATE)
    totals = sample_totals(sample_deltas(rows, state, SPEC)).collect()
    assert sum(r["events_in"] for r in totals) == 40
