"""Transforms on tiny inline DataFrames (one shared local Spark session)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from estimator.burst import sub_bucket_of
from ingest.transforms import (
    RunSpec,
    arrival_aggregates,
    execution_aggregates,
    node_busy_rows,
    node_profile_cells,
    output_histograms,
    output_latency,
    source_profile_cells,
    whole_intervals,
    with_reason,
)

pytestmark = pytest.mark.spark

SPEC = RunSpec(
    origin=10.0,
    subinterval=2.0,
    sources=("s",),
    ports_by_operator={"a": 1},
    capacity_by_node={"n1": 0.5},
    queries=("q",),
    sub_buckets=8,
)

EXEC_COLUMNS = (
    "file string, block long, mid long, raw string, node string, node__problem string, "
    "operator string, operator__problem string, port long, port__problem string, "
    "stimulus_time double, stimulus_time__problem string, start_time double, "
    "start_time__problem string, cpu_seconds double, cpu_seconds__problem string, "
    "outputs long, outputs__problem string"
)


def _execution(mid: int, **overrides: object) -> tuple[object, ...]:
    row: dict[str, object] = {
        "node": "n1", "operator": "a", "port": 0, "stimulus_time": 10.5,
        "start_time": 11.0, "cpu_seconds": 0.25, "outputs": 1,
    }  # fmt: skip
    row.update(overrides)
    problems = {k: None for k in row}
    for key, value in overrides.items():
        if value is None:
            problems[key] = "missing field"
    values: list[object] = ["f.parquet", 0, mid, "{}"]
    for key in row:
        values += [row[key], problems[key]]
    return tuple(values)


def test_with_reason_names_the_first_problem_of_each_bad_row(spark) -> None:  # type: ignore[no-untyped-def]
    from pyspark.testing import assertDataFrameEqual

    rows = [
        _execution(0),
        _execution(1, cpu_seconds=None),
        _execution(2, cpu_seconds=float("nan")),
        _execution(3, cpu_seconds=-1.0),
        _execution(4, start_time=10.0),
        _execution(5, operator="zzz"),
        _execution(6, node="n9"),
        _execution(7, port=1),
    ]
    frame = spark.createDataFrame(rows, EXEC_COLUMNS)
    actual = with_reason(frame, "executions", SPEC).select("mid", "reason")
    expected = spark.createDataFrame(
        [
            (0, None),
            (1, "missing field 'cpu_seconds'"),
            (2, "NaN in 'cpu_seconds'"),
            (3, "negative cost (cpu_seconds)"),
            (4, "start before stimulus"),
            (5, "unknown operator 'zzz'"),
            (6, "unknown node 'n9'"),
            (7, "unknown port 1"),
        ],
        "mid long, reason string",
    )
    assertDataFrameEqual(actual, expected)


def test_execution_aggregates_split_busy_time_across_wall_intervals(spark) -> None:  # type: ignore[no-untyped-def]
    from pyspark.testing import assertDataFrameEqual

    # capacity 0.5: cpu 0.25 -> busy 0.5 s. Starts 11.0 (interval 0 = [10, 12)) and 11.75
    # (busy 11.75 .. 12.25 -> 0.25 s in interval 0 and 0.25 s in interval 1).
    rows = [_execution(0), _execution(1, start_time=11.75), _execution(2, start_time=None)]
    frame = with_reason(spark.createDataFrame(rows, EXEC_COLUMNS), "executions", SPEC)
    actual = execution_aggregates(frame, SPEC)
    expected = spark.createDataFrame(
        [
            ("f.parquet", False, "a", 0, "n1", 0, 0, 1, 2, 2, 0.5, 0.75, 0),
            ("f.parquet", False, "a", 0, "n1", 0, 1, 2, 0, 0, 0.0, 0.25, 0),
            ("f.parquet", True, None, None, None, None, None, None, 1, None, None, None, 0),
        ],
        "file string, bad boolean, operator string, port long, node string, interval long, "
        "wall_interval long, wall_end long, rows long, events_out long, cpu_seconds double, "
        "busy_seconds double, covering long",
    )
    assertDataFrameEqual(actual, expected, checkRowOrder=False, atol=1e-9)


def test_busy_spans_use_the_capacity_of_the_version_they_start_in(spark) -> None:  # type: ignore[no-untyped-def]
    from pyspark.testing import assertDataFrameEqual

    # n1 has capacity 0.5 until 12.0, 1.0 from then on (a version rescales it); n2
    # keeps 2.0. cpu 0.25: busy 0.5 s on n1 at 11.0, 0.25 s at 12.5 and at 12.0 (the
    # boundary belongs to the new version), 0.125 s on n2.
    spec = dataclasses.replace(
        SPEC,
        capacity_by_node={"n1": 0.5, "n2": 2.0},
        capacity_changes=((12.0, {"n1": 1.0, "n2": 2.0}),),
    )
    rows = [
        _execution(0),
        _execution(1, start_time=12.5),
        _execution(2, start_time=12.0),
        _execution(3, node="n2", start_time=12.5),
    ]
    frame = with_reason(spark.createDataFrame(rows, EXEC_COLUMNS), "executions", spec)
    actual = execution_aggregates(frame, spec).select("node", "wall_interval", "busy_seconds")
    expected = spark.createDataFrame(
        [("n1", 0, 0.5), ("n1", 1, 0.5), ("n2", 1, 0.125)],
        "node string, wall_interval long, busy_seconds double",
    )
    assertDataFrameEqual(actual, expected, checkRowOrder=False, atol=1e-9)


def test_a_version_that_only_moves_operators_keeps_the_capacities(spark) -> None:  # type: ignore[no-untyped-def]
    from pyspark.testing import assertDataFrameEqual

    spec = dataclasses.replace(SPEC, capacity_changes=((12.0, {"n1": 0.5}),))
    frame = with_reason(
        spark.createDataFrame([_execution(0, start_time=12.5)], EXEC_COLUMNS), "executions", spec
    )
    actual = execution_aggregates(frame, spec).select("wall_interval", "busy_seconds")
    assertDataFrameEqual(
        actual, spark.createDataFrame([(1, 0.5)], "wall_interval long, busy_seconds double")
    )


def _plain_node_busy(executions: list[tuple[float, float]], spec: RunSpec) -> dict[int, float]:
    """Busy seconds of node n1 per wall interval: each execution (start_time,
    cpu_seconds) walked interval by interval, its overlap with each added."""
    busy: dict[int, float] = {}
    for start_time, cpu in executions:
        start = (start_time - spec.origin) / spec.subinterval
        end = start + cpu / spec.capacity_by_node["n1"] / spec.subinterval
        k = math.floor(start)
        while True:
            overlap = (min(end, k + 1) - max(start, k)) * spec.subinterval
            busy[k] = busy.get(k, 0.0) + max(overlap, 0.0)
            k += 1
            if k >= end - 1e-9:
                break
    return busy


def _node_busy(spark, executions: list[tuple[float, float]]) -> tuple[dict[int, float], int]:  # type: ignore[no-untyped-def]
    """(busy seconds per wall interval of n1 as ingestion stores them, cells collected)."""
    rows = [_execution(k, start_time=t, cpu_seconds=c) for k, (t, c) in enumerate(executions)]
    frame = with_reason(spark.createDataFrame(rows, EXEC_COLUMNS), "executions", SPEC)
    cells = execution_aggregates(frame, SPEC).toPandas()
    stored = node_busy_rows(cells, "r", SPEC.subinterval)
    return dict(zip(stored["interval"], stored["busy_seconds"], strict=True)), len(cells)


def test_a_long_execution_is_at_most_three_pieces(spark) -> None:  # type: ignore[no-untyped-def]
    """An execution busy for a day of subintervals costs three cells, not one per
    subinterval; node_busy still has every one of its subintervals."""
    from ingest.transforms import MAX_COST_SECONDS

    busy, cells = _node_busy(spark, [(11.0, MAX_COST_SECONDS), (11.5, MAX_COST_SECONDS)])
    assert cells <= 6
    span = MAX_COST_SECONDS / 0.5 / SPEC.subinterval  # capacity 0.5: 86,400 subintervals
    assert sorted(busy) == list(range(int(span) + 1))
    assert busy[0] == pytest.approx(1.0 + 0.5) and busy[1] == pytest.approx(4.0)
    assert sum(busy.values()) == pytest.approx(2 * MAX_COST_SECONDS / 0.5)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example([(11.0, 1.0), (11.0, 2.0)])  # a span's last piece is another's whole span
@given(
    st.lists(
        st.tuples(
            st.floats(10.5, 40.0).map(lambda t: round(t, 2)),
            st.one_of(st.floats(0.0, 12.0), st.sampled_from([0.0, 0.5, 1.0, 2.0, 4.0])),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_node_busy_matches_a_plain_walk_over_the_intervals(
    spark,  # type: ignore[no-untyped-def]
    executions: list[tuple[float, float]],
) -> None:
    busy, _ = _node_busy(spark, executions)
    expected = _plain_node_busy(executions, SPEC)
    assert set(busy) == set(expected)
    for k, value in expected.items():
        assert busy[k] == pytest.approx(value, abs=1e-9), k


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["n1", "n2"]), st.integers(0, 30), st.integers(1, 30)),
        min_size=1,
        max_size=15,
    )
)
def test_whole_intervals_count_the_spans_covering_each_interval(
    spans: list[tuple[str, int, int]],
) -> None:
    frame = pd.DataFrame(
        [(node, lo, lo + length, 1) for node, lo, length in spans],
        columns=["node", "wall_interval", "wall_end", "covering"],
    )
    counted = whole_intervals(frame)
    plain: dict[tuple[str, int], int] = {}
    for node, lo, length in spans:
        for k in range(lo, lo + length):
            plain[(node, k)] = plain.get((node, k), 0) + 1
    got = {
        (str(n), int(k)): int(c)
        for n, k, c in zip(
            counted["node"], counted["wall_interval"], counted["covering"], strict=True
        )
    }
    assert got == plain and len(counted) == len(plain)


def test_node_profile_sums_good_cpu_per_node_interval_and_sub_bucket(spark) -> None:  # type: ignore[no-untyped-def]
    from pyspark.testing import assertDataFrameEqual

    # origin 10, w = 2, k = 4 (sub-buckets of 0.5 s): 10.5 and 10.6 -> (0, 1); 11.99 ->
    # (0, 3); 13.0 -> (1, 2); the bad row and the zero-CPU cell are left out.
    rows = [
        _execution(0, stimulus_time=10.5, start_time=10.5),
        _execution(1, stimulus_time=10.6, start_time=10.6, cpu_seconds=0.5),
        _execution(2, stimulus_time=11.99, start_time=12.0),
        _execution(3, stimulus_time=13.0, start_time=13.0, node="n2"),
        _execution(4, stimulus_time=15.0, start_time=15.0, cpu_seconds=0.0),
        _execution(5, cpu_seconds=None),
    ]
    spec = dataclasses.replace(SPEC, capacity_by_node={"n1": 0.5, "n2": 1.0})
    frame = with_reason(spark.createDataFrame(rows, EXEC_COLUMNS), "executions", spec)
    expected = spark.createDataFrame(
        [("n1", 0, 1, 0.75), ("n1", 0, 3, 0.25), ("n2", 1, 2, 0.25)],
        "node string, interval long, sub_bucket int, cpu_seconds double",
    )
    actual = node_profile_cells(frame, spec, 4)
    assertDataFrameEqual(actual, expected, checkRowOrder=False, atol=1e-12)
    # the estimator's rule (estimator.burst.sub_bucket_of) bins the same times alike
    times = np.array([10.5, 10.6, 11.99, 13.0]) - SPEC.origin
    assert sub_bucket_of(times, SPEC.subinterval, 4).T.tolist() == [[0, 1], [0, 1], [0, 3], [1, 2]]


def test_arrival_intervals_use_origin_and_subinterval(spark) -> None:  # type: ignore[no-untyped-def]
    from pyspark.testing import assertDataFrameEqual

    frame = spark.createDataFrame(
        [
            ("a.jsonl", 0, k, "{}", "s", None, t, None)
            for k, t in enumerate([9.9, 10.0, 11.9, 12.0])
        ],
        "file string, block long, mid long, raw string, source string, source__problem string, "
        "stimulus_time double, stimulus_time__problem string",
    )
    actual = arrival_aggregates(with_reason(frame, "arrivals", SPEC), SPEC)
    expected = spark.createDataFrame(
        [
            ("a.jsonl", True, None, None, 1),  # 9.9 is before the origin
            ("a.jsonl", False, "s", 0, 2),
            ("a.jsonl", False, "s", 1, 1),
        ],
        "file string, bad boolean, source string, interval long, rows long",
    )
    assertDataFrameEqual(actual, expected, checkRowOrder=False)


def test_source_profile_counts_good_arrivals_per_source_interval_and_sub_bucket(spark) -> None:  # type: ignore[no-untyped-def]
    from pyspark.testing import assertDataFrameEqual

    # origin 10, w = 2, k = 4 (sub-buckets of 0.5 s): 10.0 and 10.4 -> (0, 0); 11.5 and
    # 11.99 -> (0, 3); 12.6 -> (1, 1); 9.9 (before the origin) and an unknown source are
    # quarantined, so left out
    times = [(k, "s", t) for k, t in enumerate([9.9, 10.0, 10.4, 11.5, 11.99, 12.6])]
    frame = spark.createDataFrame(
        [("a.jsonl", 0, k, "{}", s, None, t, None) for k, s, t in [*times, (6, "x", 10.0)]],
        "file string, block long, mid long, raw string, source string, source__problem string, "
        "stimulus_time double, stimulus_time__problem string",
    )
    rows = with_reason(frame, "arrivals", SPEC)
    expected = spark.createDataFrame(
        [("s", 0, 0, 2), ("s", 0, 3, 2), ("s", 1, 1, 1)],
        "source string, interval long, sub_bucket int, events long",
    )
    actual = source_profile_cells(rows, SPEC, 4)
    assertDataFrameEqual(actual, expected, checkRowOrder=False)
    # the same rule as the node profile and the estimator's sub_bucket_of
    relative = np.array([10.0, 10.4, 11.5, 11.99, 12.6]) - SPEC.origin
    assert sub_bucket_of(relative, SPEC.subinterval, 4).T.tolist() == [
        [0, 0], [0, 0], [0, 3], [0, 3], [1, 1],
    ]  # fmt: skip
    # per (source, interval) the profile adds up to the arrivals' counts
    totals = arrival_aggregates(rows, SPEC).where("NOT bad").select("source", "interval", "rows")
    summed = actual.groupBy("source", "interval").sum("events")
    summed = summed.withColumnRenamed("sum(events)", "rows")
    assertDataFrameEqual(summed, totals, checkRowOrder=False)


OUT_COLUMNS = (
    "file string, block long, mid long, raw string, query string, query__problem string, "
    "operator string, operator__problem string, stimulus_time double, "
    "stimulus_time__problem string, egress_time double, egress_time__problem string, "
    "weight long, weight__problem string"
)
# latencies 0.125, 0.5 (a sampled row standing for 3 outputs), 0.75 in interval 0
# ([10, 12)), 0.25 in interval 1, one bad row; rows without weight count once
NO_WEIGHT = (None, "missing field")
OUTPUTS = [
    ("o.parquet", 0, 0, "{}", "q", None, "a", None, 10.5, None, 10.625, None, *NO_WEIGHT),
    ("o.parquet", 0, 1, "{}", "q", None, "a", None, 11.0, None, 11.5, None, 3, None),
    ("o.parquet", 0, 2, "{}", "q", None, "a", None, 11.25, None, 12.0, None, *NO_WEIGHT),
    ("o.parquet", 0, 3, "{}", "q", None, "a", None, 12.0, None, 12.25, None, *NO_WEIGHT),
    ("o.parquet", 0, 4, "{}", "q", None, "a", None, 13.0, None, 12.0, None, *NO_WEIGHT),
]


def test_output_histograms_count_rows_per_bucket(spark) -> None:  # type: ignore[no-untyped-def]
    from pyspark.testing import assertDataFrameEqual

    rows = with_reason(spark.createDataFrame(OUTPUTS, OUT_COLUMNS), "outputs", SPEC)
    # bucket = 1 + floor(20 log10(latency / 1e-6)): 0.125 -> 1 + floor(101.94) = 102,
    # 0.5 -> 1 + floor(113.98) = 114, 0.75 -> 1 + floor(117.50) = 118, 0.25 -> 108
    expected = spark.createDataFrame(
        [
            ("o.parquet", False, "q", 0, 102, 1, 1),
            ("o.parquet", False, "q", 0, 114, 1, 3),
            ("o.parquet", False, "q", 0, 118, 1, 1),
            ("o.parquet", False, "q", 1, 108, 1, 1),
            ("o.parquet", True, None, None, None, 1, None),
        ],
        "file string, bad boolean, query string, interval long, bucket int, rows long, "
        "outputs long",
    )
    assertDataFrameEqual(output_histograms(rows, SPEC), expected, checkRowOrder=False)


def test_output_latency_over_good_rows(spark) -> None:  # type: ignore[no-untyped-def]
    from pyspark.testing import assertDataFrameEqual

    rows = with_reason(spark.createDataFrame(OUTPUTS, OUT_COLUMNS), "outputs", SPEC)
    # interval 0, the weighted row repeated: [0.125, 0.5, 0.5, 0.5, 0.75]; sum 2.375;
    # p50 at rank 2 -> 0.5; p95 at rank 3.8 -> 0.5 + 0.8 * 0.25 = 0.7; p99 at rank 3.96
    # -> 0.74. The row with egress before stimulus is left out.
    expected = spark.createDataFrame(
        [
            ("q", 0, 5, 2.375, 0.75, 0.5, 0.7, 0.74),
            ("q", 1, 1, 0.25, 0.25, 0.25, 0.25, 0.25),
        ],
        "query string, interval long, outputs long, lat_sum double, lat_max double, "
        "lat_p50 double, lat_p95 double, lat_p99 double",
    )
    assertDataFrameEqual(output_latency(rows, SPEC), expected, checkRowOrder=False, atol=1e-12)


def test_spark_and_numpy_histogram_buckets_agree(spark) -> None:  # type: ignore[no-untyped-def]
    """The bucket formula runs in Spark at ingestion and in numpy in storage.histogram:
    both give the same bucket at, just below and just above every bucket edge."""
    from pyspark.sql import functions as F

    from ingest.transforms import _bucket
    from storage.histogram import BUCKETS, bucket_bounds, buckets_of

    values = [0.0, 1e-9, 5e-7, 1e12]
    for k in range(1, BUCKETS):
        edge = bucket_bounds(k)[0]
        values += [edge, edge * (1 - 1e-12), edge * (1 + 1e-12)]
    frame = spark.createDataFrame([(k, v) for k, v in enumerate(values)], "k long, v double")
    spark_buckets = [
        r["b"] for r in frame.select("k", _bucket(F.col("v")).alias("b")).orderBy("k").collect()
    ]
    assert spark_buckets == buckets_of(values).tolist()


def test_pandas_steps_build_table_rows() -> None:
    import numpy as np
    import pandas as pd

    from ingest.transforms import latency_rows, operator_stat_rows, source_arrival_rows

    counts = pd.DataFrame(
        {
            "file": ["x", "y", "y"],
            "bad": [False, False, True],
            "source": ["s", "s", None],
            "interval": [0, 0, None],
            "rows": [2, 3, 4],
        }
    )
    arrivals = source_arrival_rows(counts, "r")
    assert arrivals.to_dict("records") == [
        {"source": "s", "interval": 0, "events": 5, "run_id": "r"}
    ]
    cells = pd.DataFrame(
        {
            "bad": [False, False, False],
            "operator": ["a", "a", "a"],
            "port": [0, 0, 0],
            "interval": [0, 0, 1],
            "rows": [2, 1, 0],
            "events_out": [2, 1, 0],
            "cpu_seconds": [0.5, 0.25, 0.0],
        }
    )
    stats = operator_stat_rows(cells, "r")  # interval 1 only held busy time
    assert stats[["interval", "events_in", "cpu_seconds"]].values.tolist() == [[0, 3, 0.75]]
    hist_cells = pd.DataFrame(
        {
            "bad": [False, False, True],
            "query": ["q", "q", None],
            "interval": [0, 0, None],
            "bucket": [102, 114, None],
            "rows": [1, 2, 5],
            "outputs": [1, 4, None],  # weighted: bucket 114's two rows stand for 4
        }
    )
    latency = pd.DataFrame({"query": ["q"], "interval": [0], "outputs": [3]})
    out = latency_rows(hist_cells, latency, "r")
    expected = np.zeros(202, dtype=np.int64)
    expected[[102, 114]] = [1, 4]
    np.testing.assert_array_equal(out["histogram"].iloc[0], expected)
    assert out["run_id"].tolist() == ["r"]


def test_out_of_range_and_negative_times_are_quarantined_before_any_cast(spark) -> None:  # type: ignore[no-untyped-def]
    """1e300 in a time or a cost used to abort the batch (ARITHMETIC_OVERFLOW casting the
    interval to long); a stimulus before the run's origin used to be kept (docs/design.md,
    "Raw telemetry")."""
    from pyspark.testing import assertDataFrameEqual

    from ingest.transforms import MAX_COST_SECONDS

    rows = [
        _execution(0),
        _execution(1, stimulus_time=1e300, start_time=1e300),
        _execution(2, start_time=1e300),
        _execution(3, cpu_seconds=1e300),
        _execution(4, stimulus_time=5.0, start_time=11.0),  # origin is 10
        _execution(5, cpu_seconds=2 * MAX_COST_SECONDS),
        _execution(6, stimulus_time=-1e300, start_time=11.0),
    ]
    frame = with_reason(spark.createDataFrame(rows, EXEC_COLUMNS), "executions", SPEC)
    far = "more than 10 years from the run's origin"
    expected = spark.createDataFrame(
        [
            (0, None),
            (1, f"'stimulus_time' {far}"),
            (2, f"'start_time' {far}"),
            (3, f"'cpu_seconds' above {MAX_COST_SECONDS:g} s"),
            (4, "stimulus before the run's origin"),
            (5, f"'cpu_seconds' above {MAX_COST_SECONDS:g} s"),
            (6, f"'stimulus_time' {far}"),
        ],
        "mid long, reason string",
    )
    assertDataFrameEqual(frame.select("mid", "reason"), expected)
    cells = execution_aggregates(frame, SPEC).collect()  # no overflow
    assert sum(r["rows"] for r in cells if r["bad"]) == 6


def test_out_of_range_arrivals_and_outputs_do_not_overflow(spark) -> None:  # type: ignore[no-untyped-def]
    arrivals = spark.createDataFrame(
        [("a.jsonl", 0, k, "{}", "s", None, t, None) for k, t in enumerate([10.5, 1e300, 5.0])],
        "file string, block long, mid long, raw string, source string, source__problem string, "
        "stimulus_time double, stimulus_time__problem string",
    )
    cells = arrival_aggregates(with_reason(arrivals, "arrivals", SPEC), SPEC).collect()
    assert sorted((r["bad"], r["rows"]) for r in cells) == [(False, 1), (True, 2)]
    outputs = [
        OUTPUTS[0],
        ("o.parquet", 0, 5, "{}", "q", None, "a", None, 10.5, None, 1e300, None, *NO_WEIGHT),
        ("o.parquet", 0, 6, "{}", "q", None, "a", None, 1e300, None, 1e300, None, *NO_WEIGHT),
    ]
    rows = with_reason(spark.createDataFrame(outputs, OUT_COLUMNS), "outputs", SPEC)
    cells = output_histograms(rows, SPEC).collect()
    assert sorted((r["bad"], r["rows"]) for r in cells) == [(False, 1), (True, 2)]
    assert [r["outputs"] for r in output_latency(rows, SPEC).collect()] == [1]
