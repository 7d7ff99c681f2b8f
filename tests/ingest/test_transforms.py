"""Transforms on tiny inline DataFrames (one shared local Spark session)."""

from __future__ import annotations

import pytest

from ingest.transforms import RunSpec, arrival_aggregates, execution_aggregates, with_reason

pytestmark = pytest.mark.spark

SPEC = RunSpec(
    origin=10.0,
    subinterval=2.0,
    sources=("s",),
    ports_by_operator={"a": 1},
    capacity_by_node={"n1": 0.5},
    queries=("q",),
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
            ("f.parquet", False, "a", 0, "n1", 0, 0, 2, 2, 0.5, 0.75),
            ("f.parquet", False, "a", 0, "n1", 0, 1, 0, 0, 0.0, 0.25),
            ("f.parquet", True, None, None, None, None, None, 1, None, None, None),
        ],
        "file string, bad boolean, operator string, port long, node string, interval long, "
        "wall_interval long, rows long, events_out long, cpu_seconds double, busy_seconds double",
    )
    assertDataFrameEqual(actual, expected, checkRowOrder=False, atol=1e-9)


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
            ("a.jsonl", False, "s", -1, 1),
            ("a.jsonl", False, "s", 0, 2),
            ("a.jsonl", False, "s", 1, 1),
        ],
        "file string, bad boolean, source string, interval long, rows long",
    )
    assertDataFrameEqual(actual, expected, checkRowOrder=False)
