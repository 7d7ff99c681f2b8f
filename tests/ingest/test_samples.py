"""Counter samples -> deltas (ingest.samples) on tiny inline DataFrames, hand-computed."""

from __future__ import annotations

import math

import pytest
from pyspark.testing import assertDataFrameEqual

from ingest.samples import STATE_COLUMNS, last_samples, sample_deltas, sample_totals
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
    "records_in double, records_out double, busy_seconds double, reason string"
)
STATE = (
    "operator string, subtask long, port long, time double, node string, "
    "records_in double, records_out double, busy_seconds double"
)
NAN = math.nan
TOTALS = (
    "operator string, node string, interval long, events_in long, events_out long, "
    "busy_seconds double, restart long, busy_nan long, busy_negative long"
)


def _sample(time: float, records: float, busy: float, *, subtask: int = 0, op: str = "a",
            out: float | None = None, reason: str | None = None) -> tuple[object, ...]:  # fmt: skip
    node = "tm" if op == "src" else "a-threads"
    outputs = float(records if out is None else out)
    return (time, node, op, subtask, -1, float(records), outputs, busy, reason)


def _totals(spark, rows, previous=()):  # type: ignore[no-untyped-def]
    frame = spark.createDataFrame(list(rows), ROWS)
    state = spark.createDataFrame(list(previous), STATE)
    return sample_totals(sample_deltas(frame, state, SPEC))


def test_first_sample_is_a_baseline_and_deltas_split_by_overlap(spark) -> None:  # type: ignore[no-untyped-def]
    # 100 events already counted when the collector attached: not charged to any interval.
    # 100 -> 110 over [100.5, 101.5): half in interval 0, half in interval 1.
    rows = [_sample(100.5, 100, 1.0), _sample(101.5, 110, 1.5)]
    expected = [
        ("a", "a-threads", 0, 5, 5, 0.25, 0, 0, 0),
        ("a", "a-threads", 1, 5, 5, 0.25, 0, 0, 0),
    ]
    assertDataFrameEqual(_totals(spark, rows), spark.createDataFrame(expected, TOTALS))


def test_missing_samples_spread_the_delta_over_the_gap(spark) -> None:  # type: ignore[no-untyped-def]
    # 30 events and 3 s of busy time over [101.0, 104.0): 10 and 1.0 s per interval 1..3.
    rows = [_sample(101.0, 0, 0.0), _sample(104.0, 30, 3.0)]
    expected = [("a", "a-threads", k, 10, 10, 1.0, 0, 0, 0) for k in (1, 2, 3)]
    assertDataFrameEqual(_totals(spark, rows), spark.createDataFrame(expected, TOTALS))


def test_whole_counts_add_up_exactly(spark) -> None:  # type: ignore[no-untyped-def]
    # 7 events over [100.5, 103.5): cumulative shares 1/6, 1/2, 5/6, 1 of 7 events are
    # 1.17, 3.5, 5.83, 7 -> rounded (half up) 1, 4, 6, 7 -> per interval 1, 3, 2, 1
    rows = [_sample(100.5, 0, 0.0), _sample(103.5, 7, 0.0)]
    totals = _totals(spark, rows).orderBy("interval").collect()
    assert [r["events_in"] for r in totals] == [1, 3, 2, 1]
    assert sum(r["events_in"] for r in totals) == 7


def test_a_counter_going_backwards_is_a_restart(spark) -> None:  # type: ignore[no-untyped-def]
    rows = [_sample(100.0, 50, 5.0), _sample(101.0, 60, 5.5), _sample(102.0, 4, 0.2)]
    totals = {r["interval"]: r for r in _totals(spark, rows).collect()}
    assert totals[0]["events_in"] == 10 and totals[0]["restart"] == 0
    assert totals[1]["events_in"] == 4  # counted from zero again
    assert totals[1]["busy_seconds"] == pytest.approx(0.2)
    assert totals[1]["restart"] == 1


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


def test_source_busy_time_is_not_a_problem_and_records_out_count(spark) -> None:  # type: ignore[no-untyped-def]
    rows = [_sample(100.2, 0, NAN, op="src", out=0), _sample(100.8, 0, NAN, op="src", out=12)]
    expected = [("src", "tm", 0, 0, 12, 0.0, 0, 0, 0)]
    assertDataFrameEqual(_totals(spark, rows), spark.createDataFrame(expected, TOTALS))


def test_parallel_subtasks_are_summed_and_quarantined_rows_ignored(spark) -> None:  # type: ignore[no-untyped-def]
    rows = [
        _sample(100.0, 0, 0.0, subtask=0),
        _sample(100.0, 0, 0.0, subtask=1),
        _sample(101.0, 6, 0.5, subtask=0),
        _sample(101.0, 4, 0.25, subtask=1),
        _sample(101.0, 1000, 9.0, subtask=1, reason="negative counter"),
    ]
    expected = [("a", "a-threads", 0, 10, 10, 0.75, 0, 0, 0)]
    assertDataFrameEqual(_totals(spark, rows), spark.createDataFrame(expected, TOTALS))


def test_previous_batch_state_gives_the_first_sample_a_predecessor(spark) -> None:  # type: ignore[no-untyped-def]
    previous = [("a", 0, -1, 100.0, "a-threads", 40.0, 40.0, 2.0)]
    rows = [_sample(101.0, 45, 2.5)]
    expected = [("a", "a-threads", 0, 5, 5, 0.5, 0, 0, 0)]
    assertDataFrameEqual(_totals(spark, rows, previous), spark.createDataFrame(expected, TOTALS))
    newest = last_samples(spark.createDataFrame(rows, ROWS), spark.createDataFrame(previous, STATE))
    expected_state = [("a", 0, -1, 101.0, "a-threads", 45.0, 45.0, 2.5)]
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
