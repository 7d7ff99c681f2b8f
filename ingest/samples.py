"""Transforms of the ``samples/`` record set: cumulative counters -> deltas (Spark, and a
plain walk over each key's samples in pandas).

Engines that expose counters (Flink's REST metrics) write samples of cumulative
``records_in``, ``records_out`` and ``busy_seconds`` per (operator, subtask, port)
(docs/design.md, "Raw telemetry"). Ingestion differences consecutive samples of one key:

- the previous sample of a key may come from an earlier batch: it is kept in the
  store (``sample_state``) and passed in as ``previous``;
- a key's first sample ever is its baseline: it yields no delta (a collector that
  attaches to a long-running job must not see its whole history in one interval);
- a counter that goes below its reference (the last sample used) is a dip or a restart.
  A dip comes back: one of the next :data:`DIP_SAMPLES` samples is at least the
  reference again (a sample read from a stale subtask, say); the dipped samples are
  skipped and the delta is taken from the reference, so a glitch adds no events. A
  restart stays low for those samples (it counts from zero again): the delta is the new
  value. A dip too close to the end of a batch to tell is left to the next batch (the
  reference stays the stored state), which sees the samples after it. Dips and restarts
  are counted apart (``dips``, ``restart``). A restart whose counter regains its old
  value within :data:`DIP_SAMPLES` samples (only early in a job) is taken for a dip;
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
    "work_seconds",
)  # fmt: skip
DIP_SAMPLES = 3
"""How many samples after a counter went below its reference may bring it back (a dip);
a counter that stays below for that many samples restarted."""
COUNTERS = ("time", "records_in", "records_out", "busy_seconds", "work_seconds")
WALKED = (
    "operator string, subtask long, port long, time double, node string, records_in double, "
    "records_out double, busy_seconds double, work_seconds double, _prev_time double, "
    "_prev_records_in double, _prev_records_out double, _prev_busy_seconds double, "
    "_prev_work_seconds double, _restart int, _dips long, _state int"
)
"""Schema of :func:`walk_counters`' answer."""


def walk_counters(samples: pd.DataFrame) -> pd.DataFrame:
    """The samples of one key (:data:`STATE_COLUMNS` and ``_new``: 0 for the stored
    state, 1 for this batch's), walked in time order: each new sample that yields a delta
    with its reference (``_prev_*``), ``_restart`` (the counter restarted: the delta is
    its value) and ``_dips`` (dipped samples skipped just before it), and one row
    ``_state = 1``: the reference the next batch starts from. The rule is the module's."""
    ordered = samples.sort_values(["time", "_new"], kind="stable").reset_index(drop=True)
    new = ordered["_new"].to_numpy()
    records_in = ordered["records_in"].to_numpy()
    records_out = ordered["records_out"].to_numpy()

    def holds(i: int, ref: int) -> bool:  # not below the reference
        return bool(records_in[i] >= records_in[ref] and records_out[i] >= records_out[ref])

    picked: list[tuple[int, int, int, int]] = []  # (sample, reference, restart, dips)
    ref, dips, i, n = -1, 0, 0, len(ordered)
    while i < n:
        if ref < 0 or not new[i]:  # a key's first sample ever, or the stored state
            ref, i = i, i + 1
        elif holds(i, ref):
            picked.append((i, ref, 0, dips))
            ref, dips, i = i, 0, i + 1
        else:
            ahead = range(i + 1, min(i + 1 + DIP_SAMPLES, n))
            back = next((j for j in ahead if holds(j, ref)), None)
            if back is not None:  # it came back: the samples in between dipped
                dips, i = dips + back - i, back
            elif i + DIP_SAMPLES < n:  # it stayed low: a restart
                picked.append((i, ref, 1, dips))
                ref, dips, i = i, 0, i + 1
            else:  # too close to the end to tell: the next batch decides
                break
    rows = ordered.loc[[p[0] for p in picked], list(STATE_COLUMNS)].reset_index(drop=True)
    refs = ordered.loc[[p[1] for p in picked], list(COUNTERS)].reset_index(drop=True)
    walked = rows.assign(
        **{f"_prev_{c}": refs[c] for c in COUNTERS},
        _restart=[p[2] for p in picked],
        _dips=[p[3] for p in picked],
        _state=0,
    )
    if ref >= 0:
        state = ordered.loc[[ref], list(STATE_COLUMNS)].assign(_restart=0, _dips=0, _state=1)
        walked = pd.concat([walked, state], ignore_index=True)
    return walked.astype({"_restart": "int32", "_dips": "int64", "_state": "int32"})


def _walked(rows: DataFrame, previous: DataFrame) -> DataFrame:
    """:func:`walk_counters` over every key of the good rows and the stored state."""
    from pyspark.sql import functions as F

    current = rows.where(F.col("reason").isNull()).select(*STATE_COLUMNS, F.lit(1).alias("_new"))
    combined = current.unionByName(previous.select(*STATE_COLUMNS, F.lit(0).alias("_new")))
    walked = combined.groupBy(*KEY).applyInPandas(walk_counters, WALKED)
    # Arrow turns pandas' NaN into null: a NaN busy time (Flink's sources) is data
    nan = F.lit(float("nan"))
    return walked.withColumns(
        {c: F.coalesce(F.col(c), nan) for c in ("busy_seconds", "_prev_busy_seconds")}
    )


def sample_deltas(rows: DataFrame, previous: DataFrame, spec: RunSpec) -> DataFrame:
    """Deltas of good sample rows, one row per (sample, subinterval) piece.

    ``rows`` has the validated contract (``reason`` null for good rows); ``previous``
    has :data:`STATE_COLUMNS` (the last sample of each key from earlier batches).
    Returns (operator, node, interval, events_in, events_out, busy_seconds,
    work_seconds, restart, dips, busy_nan, busy_negative); the flags are counts set on
    one piece per sample. ``work_seconds`` (work measured outside the thread, a
    decrease counted as 0) stays null where the samples do not measure it.
    """
    from pyspark.sql import functions as F

    lagged = _walked(rows, previous).where(F.col("_state") == 0)
    restart = F.col("_restart") == 1

    def delta(column: str) -> Column:
        return F.when(restart, F.col(column)).otherwise(F.col(column) - F.col(f"_prev_{column}"))

    busy_unknown = F.isnan("busy_seconds") | (~restart & F.isnan(F.col("_prev_busy_seconds")))
    raw_busy = delta("busy_seconds")

    def measured(column: str) -> Column:  # NaN (not measured) as null, so sums skip it
        return F.when(~F.isnan(column), F.col(column))

    raw_work = F.when(restart, measured("work_seconds")).otherwise(
        measured("work_seconds") - measured("_prev_work_seconds")
    )
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
        F.when(raw_work < 0, F.lit(0.0)).otherwise(raw_work).alias("_work"),
        "_restart",
        "_dips",
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
        (F.col("_work") * (hi - lo)).alias("work_seconds"),
        (F.col("_restart") * is_first).alias("restart"),
        (F.col("_dips") * is_first).alias("dips"),
        (F.col("_busy_nan") * is_first).alias("busy_nan"),
        (F.col("_busy_negative") * is_first).alias("busy_negative"),
    )


def sample_totals(deltas: DataFrame) -> DataFrame:
    """(operator, node, interval, events_in, events_out, busy_seconds, work_seconds)
    summed over subtasks, and the three problem counts per operator and node."""
    from pyspark.sql import functions as F

    return deltas.groupBy("operator", "node", "interval").agg(
        *[
            F.sum(c).alias(c)
            for c in (
                "events_in",
                "events_out",
                "busy_seconds",
                "work_seconds",
                "restart",
                "dips",
                "busy_nan",
                "busy_negative",
            )
        ]
    )


def last_samples(rows: DataFrame, previous: DataFrame) -> DataFrame:
    """The reference of each key after this batch (the state the next batch starts from):
    its newest good sample, unless the counter dipped too close to the batch's end to
    tell a dip from a restart (then the last sample before the dip)."""
    from pyspark.sql import functions as F

    return _walked(rows, previous).where(F.col("_state") == 1).select(*STATE_COLUMNS)


def sample_table_rows(totals: pd.DataFrame, spec: RunSpec, run_id: str) -> dict[str, pd.DataFrame]:
    """The store's rows from :func:`sample_totals`: a source's records out are its
    ``source_arrivals``; an operator's counts go to ``operator_stats`` port 0 (Flink
    counts per operator, not per input) with busy seconds as ``cpu_seconds`` and the work
    measured outside the thread as ``work_seconds`` (NaN where not measured); busy
    seconds per node are ``node_busy``."""
    sources = totals["operator"].isin(spec.sources)
    per_source = totals[sources].groupby(["operator", "interval"])["events_out"].sum()
    arrivals = per_source.reset_index(name="events").rename(columns={"operator": "source"})
    ops = totals[~sources]
    stats = ops.groupby(["operator", "interval"], as_index=False)[
        ["events_in", "events_out", "busy_seconds", "work_seconds"]
    ].sum(min_count=1)
    stats = stats.rename(columns={"busy_seconds": "cpu_seconds"}).assign(port=0)
    stats = stats[(stats["events_in"] > 0) | (stats["cpu_seconds"] > 0)]
    busy = ops.groupby(["node", "interval"], as_index=False)["busy_seconds"].sum()
    return {
        "source_arrivals": arrivals.assign(run_id=run_id),
        "operator_stats": stats.assign(run_id=run_id),
        "node_busy": busy.assign(run_id=run_id),
    }


def sample_warnings(totals: pd.DataFrame, run_id: str) -> tuple[str, ...]:
    """One line naming the counter restarts, the dips skipped and the clamped busy times,
    if any."""
    problems = {
        "counter restart(s)": int(totals["restart"].sum()),
        "counter dip(s) that came back, skipped": int(totals["dips"].sum()),
        "NaN busy time(s) counted as 0": int(totals["busy_nan"].sum()),
        "negative busy-time delta(s) clamped to 0": int(totals["busy_negative"].sum()),
    }
    noted = ", ".join(f"{n} {what}" for what, n in problems.items() if n)
    return (f"run '{run_id}' samples: {noted}",) if noted else ()
