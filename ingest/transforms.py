"""Pure transforms: parsed record sets -> validated rows -> aggregates.

The pipeline reads extract (:mod:`ingest.extract`), transform (this module), load
(:mod:`ingest.job` into :mod:`storage.writes`). The Spark functions here reduce
raw rows to small per-file cells; the pandas steps at the end (``*_rows``) turn
collected cells into the rows of the DuckDB tables. Every function takes frames
and plain scalars and returns a frame.

Input contract (built by :mod:`ingest.extract`): one row per record with
``file`` (file name), ``block`` and ``mid`` (for row numbers), ``raw`` (the
record as text), and per field ``f`` its typed value plus ``f__problem``
(``MISSING``, ``WRONG_TYPE``, ``MALFORMED`` or null). Every function here takes
DataFrames and plain scalars and returns a DataFrame; nothing is collected.

``interval = floor((stimulus_time - origin) / subinterval)`` (docs/design.md, "DuckDB store");
node_busy buckets the wall-clock span ``[start_time, start_time + cpu_seconds /
capacity)`` (the node's capacity when the execution started: a version may change it)
and splits it across interval boundaries (in at most three pieces per execution,
however long its span).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import reduce
from typing import TYPE_CHECKING, cast

import numpy as np
import pandas as pd

from estimator.arrivals import MAX_INTERVALS
from storage.histogram import BUCKETS, buckets_of

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

STRING, DOUBLE, LONG = "string", "double", "long"
MISSING, WRONG_TYPE, MALFORMED = "missing field", "wrong type for field", "malformed"
MAX_INTEGER = 2**32
"""Largest magnitude of an integer field (``port``, ``outputs``, ``weight``, ``subtask``):
beyond it a value is quarantined before it is cast, and sums of up to 2^31 of them in one
cell still fit a long."""
OUT_OF_RANGE = "integer beyond 2^32 in field"

RECORD_SETS: dict[str, dict[str, str]] = {
    "arrivals": {"source": STRING, "stimulus_time": DOUBLE},
    "executions": {
        "node": STRING,
        "operator": STRING,
        "port": LONG,
        "stimulus_time": DOUBLE,
        "start_time": DOUBLE,
        "cpu_seconds": DOUBLE,
        "outputs": LONG,
    },
    "outputs": {
        "query": STRING,
        "operator": STRING,
        "stimulus_time": DOUBLE,
        "egress_time": DOUBLE,
        "weight": LONG,
    },
    "samples": {
        "time": DOUBLE,
        "node": STRING,
        "operator": STRING,
        "subtask": LONG,
        "port": LONG,
        "records_in": DOUBLE,
        "records_out": DOUBLE,
        "busy_seconds": DOUBLE,
        "work_seconds": DOUBLE,
    },
}
OPTIONAL_FIELDS: dict[str, set[str]] = {"outputs": {"weight"}, "samples": {"work_seconds"}}
"""Fields a file may leave out: ``weight`` defaults to 1, ``work_seconds`` is then not
measured (docs/design.md, "Raw telemetry")."""
NAN_ALLOWED: dict[str, set[str]] = {"samples": {"busy_seconds", "work_seconds"}}
"""Fields whose NaN is data: Flink reports a source's busy time as NaN, and work is NaN
where it is not measured."""

MAX_TIME_SPAN_SECONDS = 10 * 365.25 * 86_400.0
"""A time further than this (10 years) from the run's origin is quarantined: no run
is that long, and bucketing such a time would overflow the interval number."""
MILLISECONDS = (1e11, 1e14)
"""Times in this range (as epoch seconds the years 5138 to 3 million; as epoch
milliseconds 1973 to 5138) that are also too far from the origin are named as epoch
milliseconds in their quarantine reason: the contract's times are epoch seconds, and
Java's ``System.currentTimeMillis()`` is not."""
MAX_RUN_INTERVALS = MAX_INTERVALS
"""Largest subinterval number of a run (the estimator's limit): a row whose time, or an
execution whose busy span, lies beyond it is quarantined, so that no later step allocates
for a run made absurdly long by one row."""
MAX_COST_SECONDS = 86_400.0
"""Largest ``cpu_seconds`` of one execution (a day of reference CPU); above it the row
is quarantined."""
MAX_COUNTER = float(2**53)
"""Largest cumulative counter of a sample (``records_in``, ``records_out``,
``busy_seconds``): above 2^53 a double no longer holds every whole number."""
TIME_FIELDS: dict[str, tuple[str, ...]] = {
    "arrivals": ("stimulus_time",),
    "executions": ("stimulus_time", "start_time"),
    "outputs": ("stimulus_time", "egress_time"),
    "samples": ("time",),
}
"""Fields that are times, checked against :data:`MAX_TIME_SPAN_SECONDS`."""


@dataclass(frozen=True)
class RunSpec:
    """What validation and bucketing need to know about a run (plain scalars)."""

    origin: float
    subinterval: float
    sources: tuple[str, ...]
    ports_by_operator: Mapping[str, int]
    capacity_by_node: Mapping[str, float]
    queries: tuple[str, ...]
    sub_buckets: int  # k of the run's node_profile (storage: runs.profile_sub_buckets)
    capacity_changes: tuple[tuple[float, Mapping[str, float]], ...] = ()
    """Later versions' (valid_from, node capacities), from ``topology-<epoch>.yaml``."""


def capacity_at(spec: RunSpec, time: Column) -> Column:
    """The capacity of the row's ``node`` at ``time``: that of the last version valid
    from then or earlier (``capacity_changes``), else topology.yaml's; null for an
    unknown node. A busy span is divided by the capacity its execution started with."""
    from pyspark.sql import functions as F

    def lookup(capacities: Mapping[str, float]) -> Column:
        pairs = [F.lit(x) for node, c in capacities.items() for x in (node, float(c))]
        return F.element_at(F.create_map(*pairs), F.col("node"))

    column = lookup(spec.capacity_by_node)
    current = dict(spec.capacity_by_node)
    for valid_from, capacities in sorted(spec.capacity_changes, key=lambda c: c[0]):
        if dict(capacities) != current:  # a version that only moves operators adds nothing
            column = F.when(time >= F.lit(float(valid_from)), lookup(capacities)).otherwise(column)
            current = dict(capacities)
    return column


def _first_reason(checks: Sequence[tuple[Column, Column | str]]) -> Column:
    """The reason of the first failing check (null when every check passes)."""
    from pyspark.sql import functions as F

    expr = None
    for failed, reason in checks:
        value = F.lit(reason) if isinstance(reason, str) else reason
        expr = F.when(failed, value) if expr is None else expr.when(failed, value)
    assert expr is not None
    return expr


def _field_checks(record_set: str) -> list[tuple[Column, Column | str]]:
    from pyspark.sql import functions as F

    fields = RECORD_SETS[record_set]
    optional = OPTIONAL_FIELDS.get(record_set, set())
    checks: list[tuple[Column, Column | str]] = []
    for name in fields:
        problem = F.col(f"{name}__problem")
        if name in optional:
            problem = F.when(problem != MISSING, problem)
        reason = F.when(problem == MALFORMED, F.lit("malformed JSON line")).otherwise(
            F.concat(problem, F.lit(f" '{name}'"))
        )
        checks.append((problem.isNotNull(), reason))
    for name, kind in fields.items():
        if kind == DOUBLE and name not in NAN_ALLOWED.get(record_set, set()):
            value = F.col(name)
            checks.append((F.isnan(value), f"NaN in '{name}'"))
            checks.append((value.isin(float("inf"), float("-inf")), f"infinite value in '{name}'"))
    return checks


def _range_checks(record_set: str, spec: RunSpec) -> list[tuple[Column, Column | str]]:
    """Values out of the plausible range (checked before any cast to a whole number):
    times within :data:`MAX_TIME_SPAN_SECONDS` of the origin, stimulus not before the
    origin (docs/design.md, "Raw telemetry"), costs and counters below their maximum."""
    from pyspark.sql import functions as F

    years = MAX_TIME_SPAN_SECONDS / (365.25 * 86_400)
    checks: list[tuple[Column, Column | str]] = []
    for name in TIME_FIELDS[record_set]:
        far = F.abs(F.col(name) - F.lit(spec.origin)) > F.lit(MAX_TIME_SPAN_SECONDS)
        checks += [
            (
                far & F.abs(F.col(name)).between(*MILLISECONDS),
                f"'{name}' looks like epoch milliseconds: times are epoch seconds",
            ),
            (far, f"'{name}' more than {years:g} years from the run's origin"),
        ]
    checks += [
        (
            (F.col(name) - F.lit(spec.origin)) / F.lit(spec.subinterval)
            >= F.lit(float(MAX_RUN_INTERVALS)),
            f"'{name}' beyond the run's {MAX_RUN_INTERVALS} subintervals",
        )
        for name in TIME_FIELDS[record_set]
    ]
    if "stimulus_time" in TIME_FIELDS[record_set]:
        checks.append(
            (F.col("stimulus_time") < F.lit(spec.origin), "stimulus before the run's origin")
        )
    if record_set == "executions":
        checks.append(
            (
                F.col("cpu_seconds") > F.lit(MAX_COST_SECONDS),
                f"'cpu_seconds' above {MAX_COST_SECONDS:g} s",
            )
        )
    if record_set == "samples":
        for name in ("records_in", "records_out", "busy_seconds", "work_seconds"):
            value = F.col(name)  # NaN compares above every number in Spark: keep it apart
            too_big = ~F.isnan(value) & (value > F.lit(MAX_COUNTER))  # null: not measured
            checks.append((F.coalesce(too_big, F.lit(False)), f"'{name}' above 2^53"))
    return checks


def _unknown(column: str, known: Sequence[str], what: str) -> tuple[Column, Column]:
    from pyspark.sql import functions as F

    return (
        ~F.col(column).isin(list(known)),
        F.concat(F.lit(f"unknown {what} '"), F.col(column), F.lit("'")),
    )


def with_reason(parsed: DataFrame, record_set: str, spec: RunSpec) -> DataFrame:
    """Add ``reason``: why the row is quarantined, or null for a good row."""
    from pyspark.sql import functions as F

    if record_set not in RECORD_SETS:
        raise ValueError(f"unknown record set {record_set!r}")
    checks = _field_checks(record_set) + _range_checks(record_set, spec)
    if record_set == "arrivals":
        checks.append(_unknown("source", spec.sources, "source"))
    elif record_set == "executions":
        ports = F.create_map(
            *[F.lit(x) for op, n in spec.ports_by_operator.items() for x in (op, n)]
        )
        busy_end = F.col("start_time") + F.col("cpu_seconds") / capacity_at(
            spec, F.col("start_time")
        )
        checks += [
            (
                (busy_end - F.lit(spec.origin)) / F.lit(spec.subinterval)
                >= F.lit(float(MAX_RUN_INTERVALS)),
                f"busy span (cpu_seconds / capacity) beyond the run's {MAX_RUN_INTERVALS} "
                "subintervals",
            ),
            (F.col("cpu_seconds") < 0, "negative cost (cpu_seconds)"),
            (F.col("outputs") < 0, "negative outputs"),
            (F.col("start_time") < F.col("stimulus_time"), "start before stimulus"),
            _unknown("operator", list(spec.ports_by_operator), "operator"),
            _unknown("node", list(spec.capacity_by_node), "node"),
            (
                (F.col("port") < 0) | (F.col("port") >= F.element_at(ports, F.col("operator"))),
                F.concat(F.lit("unknown port "), F.col("port").cast("string")),
            ),
        ]
    elif record_set == "outputs":
        checks += [
            (F.col("egress_time") < F.col("stimulus_time"), "egress before stimulus"),
            _unknown("operator", list(spec.ports_by_operator), "operator"),
            _unknown("query", spec.queries, "query"),
            (F.col("weight") < 1, "weight below 1"),
        ]
    elif record_set == "samples":
        counters = ("records_in", "records_out", "busy_seconds")
        checks += [
            *[(F.col(c) < 0, f"negative counter '{c}'") for c in counters],
            (F.col("subtask") < 0, "negative subtask"),
            _unknown("operator", [*spec.ports_by_operator, *spec.sources], "operator"),
        ]
    else:
        raise ValueError(f"unknown record set {record_set!r}")
    return parsed.withColumn("reason", _first_reason(checks))


def _interval(column: str, origin: float, subinterval: float) -> Column:
    from pyspark.sql import functions as F

    return F.floor((F.col(column) - F.lit(origin)) / F.lit(subinterval)).cast("long")


def _bad() -> Column:
    from pyspark.sql import functions as F

    return F.col("reason").isNotNull()


def arrival_aggregates(rows: DataFrame, spec: RunSpec) -> DataFrame:
    """(file, bad, source, interval, rows): good rows counted per source and interval;
    bad rows counted per file with null keys."""
    from pyspark.sql import functions as F

    good = ~_bad()
    return rows.groupBy(
        "file",
        _bad().alias("bad"),
        F.when(good, F.col("source")).alias("source"),
        F.when(good, _interval("stimulus_time", spec.origin, spec.subinterval)).alias("interval"),
    ).agg(F.count(F.lit(1)).alias("rows"))


def execution_aggregates(rows: DataFrame, spec: RunSpec) -> DataFrame:
    """One pass over executions for both operator_stats and node_busy.

    Returns (file, bad, operator, port, node, interval, wall_interval, wall_end, rows,
    events_out, cpu_seconds, busy_seconds, covering); ``interval`` buckets stimulus time,
    ``wall_interval`` wall-clock time. An execution's busy span becomes at most three
    pieces, whatever its length: the wall interval it starts in and the one it ends in
    (``wall_end = wall_interval + 1``, ``busy_seconds`` the overlap) and, between them,
    the whole intervals ``[wall_interval, wall_end)`` it covers (``covering`` executions,
    each busy for a whole subinterval in each of them; :func:`node_busy_rows` spreads
    them). ``rows``, ``events_out`` and ``cpu_seconds`` count only on the first piece.
    """
    from pyspark.sql import functions as F

    good = ~_bad()
    width = F.lit(spec.subinterval)
    # bad rows get null spans: their values may be out of range for the casts below
    start = F.when(good, (F.col("start_time") - F.lit(spec.origin)) / width)
    busy = F.when(good, F.col("cpu_seconds") / capacity_at(spec, F.col("start_time")) / width)
    first = F.floor(start).cast("long")
    # the tolerance keeps a span ending on a boundary (up to rounding) out of the next interval
    last = F.greatest(first, (F.ceil(start + busy - F.lit(1e-9)) - 1).cast("long"))

    def piece(lo: Column, hi: Column, whole: bool) -> Column:
        return F.struct(lo.alias("lo"), hi.alias("hi"), F.lit(whole).alias("whole"))

    one = F.lit(1).cast("long")
    # a bad row (its times may be null) keeps one piece so that it is still counted
    pieces = (
        F.when(~good, F.array(piece(F.lit(0).cast("long"), one, False)))
        .when(first == last, F.array(piece(first, first + one, False)))
        .when(
            last == first + one,
            F.array(piece(first, last, False), piece(last, last + one, False)),
        )
        .otherwise(
            F.array(
                piece(first, first + one, False),
                piece(first + one, last, True),
                piece(last, last + one, False),
            )
        )
    )
    exploded = rows.select(
        "*",
        first.alias("_first"),
        start.alias("_start"),
        (start + busy).alias("_end"),
        F.explode(pieces).alias("_piece"),
    )
    lo, whole = F.col("_piece.lo"), F.col("_piece.whole")
    overlap = (
        F.least(F.col("_end"), lo + 1) - F.greatest(F.col("_start"), lo.cast("double"))
    ) * width
    is_first = F.when(~good, F.lit(1)).otherwise((lo == F.col("_first")).cast("long"))
    return exploded.groupBy(
        "file",
        _bad().alias("bad"),
        F.when(good, F.col("operator")).alias("operator"),
        F.when(good, F.col("port")).alias("port"),
        F.when(good, F.col("node")).alias("node"),
        F.when(good, _interval("stimulus_time", spec.origin, spec.subinterval)).alias("interval"),
        F.when(good, lo).alias("wall_interval"),
        F.when(good, F.col("_piece.hi")).alias("wall_end"),
    ).agg(
        F.sum(is_first).alias("rows"),
        F.sum(F.when(good, F.col("outputs") * is_first)).alias("events_out"),
        F.sum(F.when(good, F.col("cpu_seconds") * is_first)).alias("cpu_seconds"),
        F.sum(F.when(good & ~whole, overlap).when(good, F.lit(0.0))).alias("busy_seconds"),
        F.sum(F.when(good & whole, one).otherwise(F.lit(0).cast("long"))).alias("covering"),
    )


def _sub_bucket(column: str, spec: RunSpec, sub_buckets: int) -> Column:
    """The sub-bucket of a time inside its interval: ``floor((x - floor(x)) * k)`` with
    ``x = (t - origin) / subinterval``, clipped to [0, k - 1]. The expression of
    :func:`estimator.burst.sub_bucket_of`, so a record lands in the interval its
    per-subinterval row counts it in; written once for every profile table."""
    from pyspark.sql import functions as F

    scaled = (F.col(column) - F.lit(spec.origin)) / F.lit(spec.subinterval)
    bucket = F.floor((scaled - F.floor(scaled)) * F.lit(sub_buckets))
    return F.least(F.lit(sub_buckets - 1), F.greatest(F.lit(0), bucket)).cast("int")


def node_profile_cells(rows: DataFrame, spec: RunSpec, sub_buckets: int) -> DataFrame:
    """(node, interval, sub_bucket, cpu_seconds): the good executions' CPU-seconds per
    node, stimulus-time interval and sub-bucket of that interval (:func:`_sub_bucket`),
    for the burst-aware and per-origin estimators. Cells of zero CPU are left out."""
    from pyspark.sql import functions as F

    return (
        rows.where(~_bad())
        .groupBy(
            "node",
            _interval("stimulus_time", spec.origin, spec.subinterval).alias("interval"),
            _sub_bucket("stimulus_time", spec, sub_buckets).alias("sub_bucket"),
        )
        .agg(F.sum("cpu_seconds").alias("cpu_seconds"))
        .where(F.col("cpu_seconds") > 0)
    )


def source_profile_cells(rows: DataFrame, spec: RunSpec, sub_buckets: int) -> DataFrame:
    """(source, interval, sub_bucket, events): the good arrivals counted per source,
    stimulus-time interval and sub-bucket of that interval (:func:`_sub_bucket`, as
    :func:`node_profile_cells`), for predictions that push them through the fitted model.
    Per source and interval the events add up to :func:`arrival_aggregates`' count."""
    from pyspark.sql import functions as F

    return (
        rows.where(~_bad())
        .groupBy(
            "source",
            _interval("stimulus_time", spec.origin, spec.subinterval).alias("interval"),
            _sub_bucket("stimulus_time", spec, sub_buckets).alias("sub_bucket"),
        )
        .agg(F.count(F.lit(1)).alias("events"))
    )


def _bucket(latency: Column) -> Column:
    """Histogram bucket of each latency: :func:`storage.histogram.buckets_of` itself, run
    on Arrow batches, so the bucket formula exists once (a log10 evaluated by the JVM
    can land an exact bucket edge in the bucket below)."""
    from pyspark.sql import functions as F

    @F.pandas_udf("int")  # type: ignore[call-overload]
    def buckets(values: pd.Series) -> pd.Series:
        return pd.Series(buckets_of(values.to_numpy(dtype=float)), index=values.index)

    return buckets(latency)


def _weight() -> Column:
    """A sampled output row stands for ``weight`` outputs (1 when the file has none)."""
    from pyspark.sql import functions as F

    return F.coalesce(F.col("weight"), F.lit(1)).cast("long")


def output_histograms(rows: DataFrame, spec: RunSpec) -> DataFrame:
    """(file, bad, query, interval, bucket, rows, outputs): latency histogram cells per
    file; ``rows`` counts records, ``outputs`` the outputs they stand for (weights)."""
    from pyspark.sql import functions as F

    good = ~_bad()
    latency = F.col("egress_time") - F.col("stimulus_time")
    return rows.groupBy(
        "file",
        _bad().alias("bad"),
        F.when(good, F.col("query")).alias("query"),
        F.when(good, _interval("stimulus_time", spec.origin, spec.subinterval)).alias("interval"),
        F.when(good, _bucket(latency)).cast("int").alias("bucket"),
    ).agg(
        F.count(F.lit(1)).alias("rows"),
        F.sum(F.when(good, _weight())).alias("outputs"),
    )


def output_latency(rows: DataFrame, spec: RunSpec) -> DataFrame:
    """(query, interval, outputs, lat_sum, lat_max, lat_p50, lat_p95, lat_p99) over the
    good rows, each standing for ``weight`` outputs; quantiles are exact (linear
    interpolation between order statistics, a row repeated ``weight`` times)."""
    from pyspark.sql import functions as F

    latency = (F.col("egress_time") - F.col("stimulus_time")).alias("latency")
    good = rows.where(~_bad()).select(
        "query",
        _interval("stimulus_time", spec.origin, spec.subinterval).alias("interval"),
        latency,
        _weight().alias("weight"),
    )
    quantiles = F.percentile(
        F.col("latency"), F.array(F.lit(0.5), F.lit(0.95), F.lit(0.99)), F.col("weight")
    )
    return (
        good.groupBy("query", "interval")
        .agg(
            F.sum("weight").alias("outputs"),
            F.sum(F.col("latency") * F.col("weight")).alias("lat_sum"),
            F.max("latency").alias("lat_max"),
            quantiles.alias("q"),
        )
        .select(
            "query",
            "interval",
            "outputs",
            "lat_sum",
            "lat_max",
            F.col("q")[0].alias("lat_p50"),
            F.col("q")[1].alias("lat_p95"),
            F.col("q")[2].alias("lat_p99"),
        )
    )


def bad_rows(rows: DataFrame) -> DataFrame:
    """(file, block, mid, reason, raw) of the quarantined rows."""
    return rows.where(_bad()).select("file", "block", "mid", "reason", "raw")


def block_stats(numbered: DataFrame, files: Sequence[str]) -> DataFrame:
    """(file, block, first_mid, rows) per read block of the given files, to turn a
    row's ``mid`` into its 1-based row number within its file."""
    from pyspark.sql import functions as F

    return (
        numbered.where(F.col("file").isin(list(files)))
        .groupBy("file", "block")
        .agg(F.min("mid").alias("first_mid"), F.count(F.lit(1)).alias("rows"))
    )


def union_all(frames: Sequence[DataFrame]) -> DataFrame:
    """Union by column name."""
    return reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), frames)


# -- pandas steps: collected cells -> table rows --------------------------------------


def source_arrival_rows(counts: pd.DataFrame, run_id: str) -> pd.DataFrame:
    """source_arrivals rows (run_id, source, interval, events) from arrival cells."""
    good = counts[~counts["bad"]]
    frame = good.groupby(["source", "interval"])["rows"].sum().reset_index(name="events")
    return frame.assign(run_id=run_id)


def operator_stat_rows(cells: pd.DataFrame, run_id: str) -> pd.DataFrame:
    """operator_stats rows (events_in, events_out, cpu_seconds per operator, port and
    interval) from execution cells; cells that only hold busy time are left out."""
    good = cells[~cells["bad"]]
    stats = good.groupby(["operator", "port", "interval"], as_index=False)[
        ["rows", "events_out", "cpu_seconds"]
    ].sum()
    stats = stats.rename(columns={"rows": "events_in"}).assign(run_id=run_id)
    return stats[stats["events_in"] > 0]


def node_busy_rows(cells: pd.DataFrame, run_id: str, subinterval: float) -> pd.DataFrame:
    """node_busy rows (busy_seconds per node and wall-clock interval) from execution
    cells: the pieces' overlaps plus a whole ``subinterval`` per execution covering an
    interval whole."""
    good = cells[~cells["bad"]]
    pieces = good[["node", "wall_interval", "busy_seconds"]]  # 0 s on the whole spans
    spans = good[good["covering"] > 0]
    if not spans.empty:
        whole = whole_intervals(spans)
        busy = whole.pop("covering").to_numpy(dtype=np.float64) * subinterval
        pieces = pd.concat([pieces, whole.assign(busy_seconds=busy)], ignore_index=True)
    busy_seconds = pieces.groupby(["node", "wall_interval"])["busy_seconds"].sum().reset_index()
    return busy_seconds.rename(columns={"wall_interval": "interval"}).assign(run_id=run_id)


def whole_intervals(spans: pd.DataFrame) -> pd.DataFrame:
    """(node, wall_interval, covering): how many of the spans ``(node, wall_interval,
    wall_end, covering)`` cover each interval, one row per interval covered. A sweep over
    the spans' ends: the work is linear in the spans and in the intervals covered, not in
    the spans times their lengths."""
    opened = spans[["node", "wall_interval", "covering"]].rename(columns={"wall_interval": "at"})
    closed = spans[["node", "wall_end", "covering"]].rename(columns={"wall_end": "at"})
    closed["covering"] = -closed["covering"]
    steps = pd.concat([opened, closed]).groupby(["node", "at"], as_index=False)["covering"].sum()
    steps["level"] = steps.groupby("node")["covering"].cumsum()
    steps["until"] = steps.groupby("node")["at"].shift(-1)
    held = steps[steps["level"] > 0]  # never a node's last step: every span closes
    at = held["at"].to_numpy(dtype=np.int64)
    lengths = held["until"].to_numpy(dtype=np.int64) - at
    which = np.repeat(np.arange(len(held)), lengths)
    offsets = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    return pd.DataFrame(
        {
            "node": held["node"].to_numpy()[which],
            "wall_interval": at[which] + offsets,
            "covering": held["level"].to_numpy(dtype=np.int64)[which],
        }
    )


def profile_rows(cells: pd.DataFrame, run_id: str) -> pd.DataFrame:
    """node_profile or source_profile rows from :func:`node_profile_cells` or
    :func:`source_profile_cells` (already one per key)."""
    return cells.assign(run_id=run_id)


def latency_rows(cells: pd.DataFrame, latency: pd.DataFrame, run_id: str) -> pd.DataFrame:
    """latency_stats rows: :func:`output_latency` with the histogram of each (query,
    interval) assembled from the :func:`output_histograms` cells of the good rows."""
    good = cells[~cells["bad"]]
    histograms: dict[tuple[str, int], np.ndarray] = {}
    for key, group in good.groupby(["query", "interval"]):
        query, interval = cast(tuple[str, int], key)
        counts = np.zeros(BUCKETS, dtype=np.int64)
        weights = group["outputs"].to_numpy(dtype=np.int64)  # a sampled row counts weight times
        np.add.at(counts, group["bucket"].to_numpy(dtype=np.int64), weights)
        histograms[(str(query), int(interval))] = counts
    keys = zip(latency["query"], latency["interval"], strict=True)
    column = pd.Series(
        [histograms[(str(q), int(i))] for q, i in keys], index=latency.index, dtype=object
    )
    return latency.assign(histogram=column, run_id=run_id)
