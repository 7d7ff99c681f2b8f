"""One ingestion pass: extract (new files) -> Spark transforms -> load into DuckDB.

Idempotence: the manifest table ``ingest_files`` lists every ingested file and
is written in the same DuckDB transaction as the aggregates, so a crash before
the commit leaves neither and the next pass redoes the same files; a file in
the manifest is never read again. Aggregates merge additively into existing
intervals, so late files update their intervals.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import pandas as pd

from estimator.burst import SUB_BUCKETS
from ingest.errors import SparkUnavailable
from ingest.extract import (
    LandingFile,
    RunFolder,
    discover,
    landing_folder,
    read_failure,
    read_record_set,
    record_files,
    spark_error_line,
)
from ingest.samples import (
    STATE_COLUMNS,
    last_samples,
    sample_deltas,
    sample_table_rows,
    sample_totals,
    sample_warnings,
)
from ingest.session import DEFAULT_MASTER, ready_spark, spark_problem, watch_executors
from ingest.transforms import (
    RECORD_SETS,
    RunSpec,
    arrival_aggregates,
    bad_rows,
    block_stats,
    execution_aggregates,
    latency_rows,
    node_busy_rows,
    node_profile_cells,
    operator_stat_rows,
    output_histograms,
    output_latency,
    profile_rows,
    source_arrival_rows,
    source_profile_cells,
    with_reason,
)
from storage import writes
from storage.db import connect, transaction
from storage.health import run_failures
from storage.pending import PendingFile, pending_files, replace_pending
from storage.reads import (
    given_up_files,
    ingested_paths,
    profile_sub_buckets,
    sample_state_frame,
    topology_stamps,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

UNREADABLE_GRACE_SECONDS = 60.0
"""A file that cannot be read (truncated, last JSON line incomplete, damaged, gone) is
retried on later passes; once unchanged (same size and modification time) for this
long since first seen so, it is quarantined for good (a JSON Lines file is then read
as it is, its incomplete last line quarantined as malformed)."""
Progress = Callable[[int, int, str], None]
"""progress(files_done, rows_done, what): called after each record set of a run."""


@dataclass
class BatchSummary:
    """What one pass did."""

    batch_id: int | None
    files: int = 0
    rows_read: int = 0
    rows_kept: int = 0
    rows_quarantined: int = 0
    unreadable_files: int = 0
    deferred_files: int = 0
    runs: list[str] = field(default_factory=list)
    failed_runs: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def describe(self) -> str:
        """A one-paragraph report for the terminal or a log."""
        if self.batch_id is None:
            head = "no new files"
        else:
            head = (
                f"batch {self.batch_id}: {self.files} file(s), {self.rows_read} row(s) read, "
                f"{self.rows_kept} kept, {self.rows_quarantined} quarantined"
            )
            if self.unreadable_files:
                head += f", {self.unreadable_files} unreadable file(s) quarantined"
        if self.deferred_files:
            head += (
                f"; {self.deferred_files} file(s) not readable yet (being written?), "
                "retried on the next pass"
            )
        lines = [f"{head} ({self.seconds:.1f} s)"]
        lines += [
            f"failed run '{r}' (not ingested, retried when its files change): {why}"
            for r, why in self.failed_runs.items()
        ]
        lines += [f"warning: {w}" for w in self.warnings]
        return "\n".join(lines)


@dataclass
class RunResult:
    """Collected aggregates of one run (small pandas frames)."""

    source_arrivals: list[pd.DataFrame] = field(default_factory=list)
    operator_stats: list[pd.DataFrame] = field(default_factory=list)
    node_busy: list[pd.DataFrame] = field(default_factory=list)
    node_profile: list[pd.DataFrame] = field(default_factory=list)
    source_profile: list[pd.DataFrame] = field(default_factory=list)
    latency: list[pd.DataFrame] = field(default_factory=list)
    quarantine: list[pd.DataFrame] = field(default_factory=list)
    manifest: list[writes.ManifestEntry] = field(default_factory=list)
    deferred: list[tuple[LandingFile, str]] = field(default_factory=list)
    rows_kept: int = 0
    sample_state: pd.DataFrame | None = None
    warnings: list[str] = field(default_factory=list)


def run_spec(run: RunFolder, sub_buckets: int) -> RunSpec:
    """The scalars validation and bucketing need, from the run's topology and the k of
    its stored profile."""
    topology = run.topology
    assert topology is not None
    return RunSpec(
        origin=topology.origin,
        subinterval=topology.subinterval,
        sources=topology.source_ids,
        ports_by_operator={o.id: len(o.inputs) for o in topology.operators},
        capacity_by_node=dict(topology.capacity_by_node),
        capacity_changes=tuple((v[0], v[2]) for v in run.versions),
        queries=topology.queries,
        sub_buckets=sub_buckets,
    )


def ingest_once(
    landing: str | Path,
    db_path: str | Path,
    spark: SparkSession | None = None,
    *,
    master: str = DEFAULT_MASTER,
    progress: Progress | None = None,
    clock: Callable[[], float] = time.time,
) -> BatchSummary:
    """Ingest every new file of every run folder in ``landing`` into the DuckDB file."""
    folder = landing_folder(landing)
    timer = time.perf_counter()
    started = datetime.now(UTC).replace(tzinfo=None)
    con = connect(db_path)
    try:
        given_up = given_up_files(con)
        runs = discover(folder, ingested_paths(con), topology_stamps(con), given_up)
        now = clock()
        pending = pending_files(con)
        settled = frozenset(
            f.path for run in runs for f in run.files if _settled(pending.get(f.path), f, now)
        )
        summary = BatchSummary(batch_id=None)
        results: dict[str, RunResult] = {}
        # a run keeps the profile grid it started with; a new one gets today's
        grids = {run.run_id: profile_sub_buckets(con, run.run_id) or SUB_BUCKETS for run in runs}
        known_failures = run_failures(con)
        failures: dict[str, tuple[str, str]] = {}  # run -> (reason, fingerprint)
        for run in runs:
            summary.warnings += [f"run '{run.run_id}': {w}" for w in run.warnings]
            fingerprint = run_fingerprint(run)
            known = known_failures.get(run.run_id)
            if known is not None and known.fingerprint == fingerprint:
                summary.failed_runs[run.run_id] = known.reason  # unchanged: not retried
                continue
            if run.topology is None:
                failures[run.run_id] = (run.error or "no valid topology", fingerprint)
                continue
            if run.files:
                spark = ready_spark(master, spark)
                state = sample_state_frame(con, run.run_id)
                try:
                    with watch_executors(spark):
                        results[run.run_id] = compute_run(
                            spark, run, grids[run.run_id], progress, state, settled
                        )
                except Exception as exc:
                    if not _is_run_failure(exc):
                        raise
                    _raise_if_unavailable(spark)
                    failures[run.run_id] = (_failure_line(exc), fingerprint)
                    continue
                summary.warnings += results[run.run_id].warnings
        for run_id, (reason, _) in failures.items():
            summary.failed_runs[run_id] = reason
        deferred = [d for r in results.values() for d in r.deferred]
        summary.deferred_files = len(deferred)
        with transaction(con, "loading ingestion batch"):
            for run_id, (reason, fingerprint) in failures.items():
                writes.record_run_failure(con, run_id, reason, fingerprint, started)
            for run in runs:
                if run.topology is not None and run.run_id not in summary.failed_runs:
                    writes.write_run(con, run.run_id, run.topology, run.versions, grids[run.run_id])
                    writes.set_topology_stamp(con, run.run_id, run.stamp)
                    if run.run_id in known_failures:
                        writes.clear_run_failure(con, run.run_id)
            replace_pending(
                con, [_still_pending(pending.get(f.path), f, why, now) for f, why in deferred]
            )
            if any(r.manifest for r in results.values()):
                summary.batch_id = writes.next_batch_id(con)
                again = [m.path for r in results.values() for m in r.manifest if m.path in given_up]
                writes.forget_given_up(con, again)
                _load(con, summary, results, started)
        summary.seconds = time.perf_counter() - timer
        return summary
    finally:
        con.close()


def run_fingerprint(run: RunFolder) -> str:
    """The run's topology files and new data files (names, sizes, modification times):
    a failed run is retried once this changes."""
    files = ";".join(f"{f.path}:{f.size_bytes}:{f.modified_at!r}" for f in run.files)
    return f"{run.stamp}#{files}"


def _is_run_failure(exc: Exception) -> bool:
    """Whether ``exc`` is the failure of one run's data (Spark refusing or overflowing on
    it, an aggregate out of range or out of memory), not of the session or the store."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    if isinstance(exc, SparkUnavailable | duckdb.Error):
        return False
    return isinstance(
        exc, Py4JJavaError | PySparkException | ArithmeticError | ValueError | MemoryError
    )


def _failure_line(exc: BaseException) -> str:
    """One line saying why a run could not be ingested (Spark's error class, no stack)."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    if isinstance(exc, Py4JJavaError | PySparkException):
        return f"Spark could not aggregate its files: {spark_error_line(exc)}"
    if isinstance(exc, MemoryError):
        return "its aggregates do not fit in memory"
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]


def prune_ingested(landing: str | Path, db_path: str | Path) -> int:
    """Delete the landing data files the manifest lists as ingested; the number deleted.

    Bounds the disk use of a landing folder that only a live demo writes (``mace demo``):
    the manifest keeps the deleted files' rows, so they are never looked for again. Never
    for a user's landing folder, whose files are the user's.
    """
    folder = Path(landing)
    con = connect(db_path)
    try:
        ingested = ingested_paths(con)
    finally:
        con.close()
    deleted = 0
    for run_dir in (p for p in folder.iterdir() if p.is_dir()):
        for record_set in RECORD_SETS:
            records = run_dir / record_set
            if not records.is_dir():
                continue
            for file in record_files(records):
                if file.relative_to(folder).as_posix() in ingested:
                    file.unlink(missing_ok=True)
                    deleted += 1
    return deleted


def _settled(previous: PendingFile | None, file: LandingFile, now: float) -> bool:
    """Whether a pending file stayed unchanged for the grace period (then give up on it)."""
    return (
        previous is not None
        and (previous.size_bytes, previous.modified_at) == (file.size_bytes, file.modified_at)
        and now - previous.first_seen >= UNREADABLE_GRACE_SECONDS
    )


def _still_pending(
    previous: PendingFile | None, file: LandingFile, reason: str, now: float
) -> PendingFile:
    """The pending entry of a deferred file: its grace period restarts when it changed."""
    same = previous is not None and (previous.size_bytes, previous.modified_at) == (
        file.size_bytes,
        file.modified_at,
    )
    first_seen = previous.first_seen if same and previous is not None else now
    return PendingFile(file.path, file.size_bytes, file.modified_at, first_seen, reason)


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _load(
    con: duckdb.DuckDBPyConnection,
    summary: BatchSummary,
    results: dict[str, RunResult],
    started: datetime,
) -> None:
    batch_id = summary.batch_id
    assert batch_id is not None
    manifest: list[writes.ManifestEntry] = []
    for run_id, result in results.items():
        writes.merge_source_arrivals(con, _concat(result.source_arrivals))
        writes.merge_operator_stats(con, _concat(result.operator_stats))
        writes.merge_node_busy(con, _concat(result.node_busy))
        writes.merge_node_profile(con, _concat(result.node_profile))
        writes.merge_source_profile(con, _concat(result.source_profile))
        writes.merge_latency_stats(con, _concat(result.latency))
        writes.add_quarantine(con, batch_id, _concat(result.quarantine))
        if result.sample_state is not None:
            writes.replace_sample_state(con, result.sample_state.assign(run_id=run_id))
        manifest += result.manifest
        summary.rows_kept += result.rows_kept
        summary.runs.append(run_id)
    summary.files = len(manifest)
    summary.rows_read = sum(f.rows_read for f in manifest)
    summary.rows_quarantined = sum(f.rows_quarantined for f in manifest)
    summary.unreadable_files = sum(
        len(q[q["row_number"].isna()]) for r in results.values() for q in r.quarantine
    )
    writes.record_batch(
        con,
        batch_id,
        manifest,
        rows_kept=summary.rows_kept,
        started_at=started,
        finished_at=datetime.now(UTC).replace(tzinfo=None),
    )


def compute_run(
    spark: SparkSession,
    run: RunFolder,
    sub_buckets: int,
    progress: Progress | None,
    sample_state: pd.DataFrame | None = None,
    settled: frozenset[str] = frozenset(),
) -> RunResult:
    """Run the Spark transforms for the new files of one run; collect only aggregates.

    ``sample_state`` is the stored newest counter sample per key (``samples/`` only).
    A file that cannot be read is quarantined whole if its path is in ``settled``
    (unchanged for the grace period), otherwise deferred to a later pass."""
    spec = run_spec(run, sub_buckets)
    result = RunResult(sample_state=sample_state)
    for record_set in ("arrivals", "executions", "outputs", "samples"):
        files = [f for f in run.files if f.record_set == record_set]
        if not files:
            continue
        part = _record_set_without_failing_files(
            spark, run.run_id, record_set, files, spec, result.sample_state, settled
        )
        for file, reason in part.unreadable:
            if file.path not in settled:
                result.deferred.append((file, reason))
                continue
            result.quarantine.append(
                pd.DataFrame(
                    [[run.run_id, record_set, file.path, None, reason, None]],
                    columns=list(writes.QUARANTINE_COLUMNS),
                )
            )
            result.manifest.append(_entry(file, 0, 0))
        if part.aggregated is not None:
            aggregated = part.aggregated
            if record_set == "samples":
                result.sample_state = aggregated.state
            result.warnings += aggregated.warnings
            for table, frame in aggregated.tables.items():
                getattr(result, table).append(frame)
            result.manifest += part.manifest
            result.rows_kept += part.rows_kept
            if part.quarantine is not None:
                result.quarantine.append(part.quarantine)
        if progress is not None:
            progress(len(files), part.rows_read, f"{run.run_id}/{record_set}")
    return result


@dataclass
class _RecordSetResult:
    """One record set of one run, computed in full (or not at all)."""

    unreadable: list[tuple[LandingFile, str]]
    aggregated: Aggregated | None = None
    manifest: list[writes.ManifestEntry] = field(default_factory=list)
    quarantine: pd.DataFrame | None = None
    rows_read: int = 0
    rows_kept: int = 0


def _record_set_without_failing_files(
    spark: SparkSession,
    run_id: str,
    record_set: str,
    files: list[LandingFile],
    spec: RunSpec,
    sample_state: pd.DataFrame | None,
    settled: frozenset[str],
) -> _RecordSetResult:
    """:func:`_record_set`; if Spark fails reading (a damaged page, a file gone since
    discovery), find the files it cannot read, one by one, and redo the rest without
    them. A failure that no single file explains is raised; so is a session that lost its
    cluster (:class:`SparkUnavailable`), before any file is blamed for it."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    try:
        return _record_set(spark, run_id, record_set, files, spec, sample_state, settled)
    except (Py4JJavaError, PySparkException):
        _raise_if_unavailable(spark)
        failing = [(f, why) for f in files if (why := read_failure(spark, f)) is not None]
        _raise_if_unavailable(spark)
        if not failing:
            raise
    rest = [f for f in files if all(f is not bad for bad, _ in failing)]
    part = _record_set_without_failing_files(
        spark, run_id, record_set, rest, spec, sample_state, settled
    )
    part.unreadable += failing
    return part


def _raise_if_unavailable(spark: SparkSession) -> None:
    problem = spark_problem(spark.sparkContext)
    if problem is not None:
        raise SparkUnavailable(problem) from None


def _record_set(
    spark: SparkSession,
    run_id: str,
    record_set: str,
    files: list[LandingFile],
    spec: RunSpec,
    sample_state: pd.DataFrame | None,
    settled: frozenset[str],
) -> _RecordSetResult:
    parsed, unreadable = read_record_set(spark, files, record_set, settled=settled)
    part = _RecordSetResult(unreadable)
    if parsed is None:
        return part
    rows = with_reason(parsed, record_set, spec)
    if record_set == "samples":  # counters are differenced against stored state
        aggregated = _samples(rows, spec, run_id, sample_state)
    else:
        aggregated = _AGGREGATE[record_set](rows, spec, run_id)
    counts = aggregated.cells
    by_name = {f.name: f for f in files if all(f is not u for u, _ in unreadable)}
    bad_by_file = counts[counts["bad"]].groupby("file")["rows"].sum()
    read_by_file = counts.groupby("file")["rows"].sum()
    for name, file in by_name.items():
        part.manifest.append(
            _entry(file, int(read_by_file.get(name, 0)), int(bad_by_file.get(name, 0)))
        )
    part.rows_read = int(read_by_file.sum())
    part.rows_kept = part.rows_read - int(bad_by_file.sum())
    if bad_by_file.sum() > 0:
        part.quarantine = _quarantine(
            rows, parsed, run_id, record_set, by_name, list(bad_by_file.index)
        )
    part.aggregated = aggregated
    return part


def _entry(file: LandingFile, rows_read: int, rows_quarantined: int) -> writes.ManifestEntry:
    return writes.ManifestEntry(
        file.path, file.run_id, file.record_set, file.size_bytes, file.modified_at,
        rows_read, rows_quarantined,
    )  # fmt: skip


def _quarantine(
    rows: DataFrame,
    parsed: DataFrame,
    run_id: str,
    record_set: str,
    files: dict[str, LandingFile],
    bad_files: list[str],
) -> pd.DataFrame:
    """Bad rows with 1-based row numbers within their file."""
    bad = bad_rows(rows).toPandas()
    blocks = block_stats(parsed, bad_files).toPandas().sort_values(["file", "block"])
    blocks["offset"] = blocks.groupby("file")["rows"].cumsum() - blocks["rows"]
    bad = bad.merge(blocks, on=["file", "block"], how="left")
    bad["row_number"] = bad["mid"] - bad["first_mid"] + bad["offset"] + 1
    bad["file"] = bad["file"].map(lambda name: files[name].path)
    bad["run_id"] = run_id
    bad["record_set"] = record_set
    return bad[list(writes.QUARANTINE_COLUMNS)].sort_values(["file", "row_number"])


@dataclass(frozen=True)
class Aggregated:
    """One record set reduced: its per-file cells (for the manifest and quarantine
    counts) and the table rows it contributes."""

    cells: pd.DataFrame
    tables: dict[str, pd.DataFrame]
    state: pd.DataFrame | None = None  # samples/ only: the newest sample per key
    warnings: tuple[str, ...] = ()


def _arrivals(rows: DataFrame, spec: RunSpec, run_id: str) -> Aggregated:
    counts = arrival_aggregates(rows, spec).toPandas()
    profile = source_profile_cells(rows, spec, spec.sub_buckets).toPandas()
    return Aggregated(
        counts,
        {
            "source_arrivals": source_arrival_rows(counts, run_id),
            "source_profile": profile_rows(profile, run_id),
        },
    )


def _executions(rows: DataFrame, spec: RunSpec, run_id: str) -> Aggregated:
    cells = execution_aggregates(rows, spec).toPandas()
    profile = node_profile_cells(rows, spec, spec.sub_buckets).toPandas()
    return Aggregated(
        cells,
        {
            "operator_stats": operator_stat_rows(cells, run_id),
            "node_busy": node_busy_rows(cells, run_id, spec.subinterval),
            "node_profile": profile_rows(profile, run_id),
        },
    )


def _outputs(rows: DataFrame, spec: RunSpec, run_id: str) -> Aggregated:
    cells = output_histograms(rows, spec).toPandas()
    if cells[~cells["bad"]].empty:
        return Aggregated(cells, {})
    latency = output_latency(rows, spec).toPandas()
    return Aggregated(cells, {"latency": latency_rows(cells, latency, run_id)})


def _samples(rows: DataFrame, spec: RunSpec, run_id: str, state: pd.DataFrame | None) -> Aggregated:
    """Counter samples -> deltas against ``state`` (the newest stored sample per key) ->
    source_arrivals, operator_stats and node_busy rows; the newest samples become the
    next state."""
    from pyspark.sql import functions as F

    schema = rows.select(*STATE_COLUMNS).schema
    previous = rows.sparkSession.createDataFrame(
        [] if state is None else state[list(STATE_COLUMNS)], schema
    )
    totals = sample_totals(sample_deltas(rows, previous, spec)).toPandas()
    cells = rows.groupBy("file", F.col("reason").isNotNull().alias("bad")).count()
    return Aggregated(
        cells.withColumnRenamed("count", "rows").toPandas(),
        sample_table_rows(totals, spec, run_id),
        state=last_samples(rows, previous).toPandas(),
        warnings=sample_warnings(totals, run_id),
    )


_AGGREGATE: dict[str, Callable[[DataFrame, RunSpec, str], Aggregated]] = {
    "arrivals": _arrivals,
    "executions": _executions,
    "outputs": _outputs,
}
