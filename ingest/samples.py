"""Pure Spark transforms of the ``samples/`` record set: cumulative counters -> deltas.

Engines that expose counters (Flink's REST metrics) write samples of cumulative
``records_in``, ``records_out`` and ``busy_seconds`` per (operator, subtask, port)
(docs/design.md, "Raw telemetry"). Ingestion differences consecutive samples of one key:

- the previous sample of a key may come from an earlier batch: it is kept in the
  store (``sample_state``) and passed in as ``previous``;
- a key's first sample ever is its baseline: it yields no delta (a collector that
  attaches to a long-running job must not see its whole history in one interval);
- a counter that goes backwards is a restart: the delta is the new value;
- a NaN busy time (Flink's source vertices) or a negative busy delta (seen on idle
  operators) counts as 0 and is counted in ``busy_nan`` / ``busy_negative``;
- a delta is spread over the wall-clock span ``[previous time, time)`` by overlap
  with the subintervals, so a missing sample spreads its delta over the gap.
  Event counts are split with rounded cumulative shares, so they stay whole and
  add up exactly.

The statistics are bucketed by the wall clock of the samples, a documented
deviation from stimulus-time bucketing (docs/design.md, "Raw telemetry"). A busy second of a
subtask (one thread) counts as one reference CPU-second.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from ingest.transforms import RunSpec

KEY = ("operator", "subtask", "port")
STATE_COLUMNS = (
    "operator", "subtask", "port", "time", "node", "records_in", "records_out", "busy_seconds",
)  # fmt: skip


def sample_deltas(rows: DataFrame, previous: DataFrame, spec: RunSpec) -> DataFrame:
    """Deltas of good sample rows, one row per (sample, subinterval) piece.

    ``rows`` has the validated contract (``reason`` null for good rows); ``previous``
    has :data:`STATE_COLUMNS` (the last sample of each key from earlier batches).
    Returns (operator, node, interval, events_in, events_out, busy_seconds, restart,
    busy_nan, busy_negative); the three flags are 0/1 and set on one piece per sample.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    current = rows.where(F.col("reason").isNull()).select(*STATE_COLUMNS, F.lit(1).alias("_new"))
    combined = current.unionByName(previous.select(*STATE_COLUMNS, F.lit(0).alias("_new")))
    order = Window.partitionBy(*KEY).orderBy("time", "_new")
    lagged = combined.select(
        "*",
        *[
            F.lag(c).over(order).alias(f"_prev_{c}")
            for c in ("time", "records_in", "records_out", "busy_seconds")
        ],
    ).where((F.col("_new") == 1) & F.col("_prev_time").isNotNull())

    restart = (F.col("records_in") < F.col("_prev_records_in")) | (
        F.col("records_out") < F.col("_prev_records_out")
    )

    def delta(column: str) -> Column:
        return F.when(restart, F.col(column)).otherwise(F.col(column) - F.col(f"_prev_{column}"))

    busy_unknown = F.isnan("busy_seconds") | (~restart & F.isnan(F.col("_prev_busy_seconds")))
    raw_busy = delta("busy_seconds")
    is_source = F.col("operator").isin(list(spec.sources))
    width = F.lit(spec.subinterval)
    start = (F.col("_prev_time") - F.lit(spec.origin)) / width
    end = (F.col("time") - F.lit(spec.origin)) / width
    first = F.floor(start).cast("long")
    last = F.greatest(first, (F.ceil(end - F.lit(1e-9)) - 1).cast("long"))
    with_deltas = lagged.select(
        "operator",
        "node",
        first.alias("_first"),
        start.alias("_start"),
        end.alias("_end"),
        delta("records_in").alias("_in"),
        delta("records_out").alias("_out"),
        F.when(busy_unknown | (raw_busy < 0), F.lit(0.0)).otherwise(raw_busy).alias("_busy"),
        restart.cast("int").alias("_restart"),
        (busy_unknown & ~is_source).cast("int").alias("_busy_nan"),
        (~busy_unknown & (raw_busy < 0)).cast("int").alias("_busy_negative"),
        F.sequence(first, last).alias("_pieces"),
    )
    piece = F.explode("_pieces").alias("interval")
    exploded = with_deltas.select("*", piece)
    span = F.col("_end") - F.col("_start")
    k = F.col("interval").cast("double")

    def share(boundary: Column, empty: float) -> Column:
        """Share of the span before ``boundary`` (``empty`` for a zero-length span)."""
        clipped = F.least(F.greatest(boundary, F.col("_start")), F.col("_end"))
        return F.when(span > 0, (clipped - F.col("_start")) / span).otherwise(F.lit(empty))

    lo, hi = share(k, 0.0), share(k + F.lit(1.0), 1.0)

    def whole(column: str) -> Column:
        total = F.col(column)
        return (F.round(total * hi) - F.round(total * lo)).cast("long")

    is_first = (F.col("interval") == F.col("_first")).cast("int")
    return exploded.select(
        "operator",
        "node",
        "interval",
        whole("_in").alias("events_in"),
        whole("_out").alias("events_out"),
        (F.col("_busy") * (hi - lo)).alias("busy_seconds"),
        (F.col("_restart") * is_first).alias("restart"),
        (F.col("_busy_nan") * is_first).alias("busy_nan"),
        (F.col("_busy_negative") * is_first).alias("busy_negative"),
    )


def sample_totals(deltas: DataFrame) -> DataFrame:
    """(operator, node, interval, events_in, events_out, busy_seconds) summed over
    subtasks, and the three problem counts per operator and node."""
    from pyspark.sql import functions as F

    return deltas.groupBy("operator", "node", "interval").agg(
        *[
            F.sum(c).alias(c)
            for c in (
                "events_in",
                "events_out",
                "busy_seconds",
                "restart",
                "busy_nan",
                "busy_negative",
            )
        ]
    )


def last_samples(rows: DataFrame, previous: DataFrame) -> DataFrame:
    """The newest good sample of each key, over this batch and the stored state."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    current = rows.where(F.col("reason").isNull()).select(*STATE_COLUMNS)
    combined = current.unionByName(previous.select(*STATE_COLUMNS))
    newest = Window.partitionBy(*KEY).orderBy(F.col("time").desc())
    return (
        combined.select("*", F.row_number().over(newest).alias("_rank"))
        .where(F.col("_rank") == 1)
        .select(*STATE_COLUMNS)
    )


def sample_table_rows(totals: pd.DataFrame, spec: RunSpec, run_id: str) -> dict[str, pd.DataFrame]:
    """The store's rows from :func:`sample_totals`: a source's records out are its
    ``source_arrivals``; an operator's counts go to ``operator_stats`` port 0 (Flink
    counts per operator, not per input) with busy seconds as ``cpu_seconds``; busy
    seconds per node are ``node_busy``."""
    sources = totals["operator"].isin(spec.sources)
    per_source = totals[sources].groupby(["operator", "interval"])["events_out"].sum()
    arrivals = per_source.reset_index(name="events").rename(columns={"operator": "source"})
    ops = totals[~sources]
    stats = ops.groupby(["operator", "interval"], as_index=False)[
        ["events_in", "events_out", "busy_seconds"]
    ].sum()
    stats = stats.rename(columns={"busy_seconds": "cpu_seconds"}).assign(port=0)
    stats = stats[(stats["events_in"] > 0) | (stats["cpu_seconds"] > 0)]
    busy = ops.groupby(["node", "interval"], as_index=False)["busy_seconds"].sum()
    return {
        "source_arrivals": arrivals.assign(run_id=run_id),
        "operator_stats": stats.assign(run_id=run_id),
        "node_busy": busy.assign(run_id=run_id),
    }


def sample_warnings(totals: pd.DataFrame, run_id: str) -> tuple[str, ...]:
    """One line naming the counter restarts and clamped busy times, if any."""
    problems = {
        "counter restart(s)": int(totals["restart"].sum()),
        "NaN busy time(s) counted as 0": int(totals["busy_nan"].sum()),
        "negative busy-time delta(s) clamped to 0": int(totals["busy_negative"].sum()),
    }
    noted = ", ".join(f"{n} {what}" for what, n in problems.items() if n)
    return (f"run '{run_id}' samples: {noted}",) if noted else ()
