"""Files that are damaged, caught mid-write or vanish: the batch goes on, nothing is lost.

Regressions: a damaged Parquet page aborted the whole batch; a truncated Parquet file, a
JSONL file with a half-written last line and a vanished file were quarantined *and*
recorded as ingested, so never read again once complete.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ingest import extract
from ingest.job import UNREADABLE_GRACE_SECONDS, ingest_once, prune_ingested
from storage.db import connect
from tests.ingest.landing import ARRIVALS, write_jsonl, write_run

pytestmark = pytest.mark.spark


class Clock:
    """An injectable clock (seconds)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _rows(db: Path, sql: str) -> list[tuple[object, ...]]:
    con = connect(db, read_only=True)
    try:
        return [tuple(r) for r in con.execute(sql).fetchall()]
    finally:
        con.close()


def _arrivals(db: Path) -> int:
    return int(_rows(db, "SELECT coalesce(sum(events), 0) FROM source_arrivals")[0][0])


def _manifest(db: Path) -> list[str]:
    return [str(r[0]) for r in _rows(db, "SELECT path FROM ingest_files ORDER BY path")]


def _quarantined_files(db: Path) -> list[tuple[object, ...]]:
    return _rows(db, "SELECT file, reason FROM quarantine WHERE row_number IS NULL ORDER BY file")


def _damaged_parquet(path: Path, rows: int = 2000) -> None:
    """A Parquet file whose footer is valid but whose middle pages are overwritten."""
    frame = pd.DataFrame(
        {"source": ["s"] * rows, "stimulus_time": [100.0 + k * 1e-4 for k in range(rows)]}
    )
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path, data_page_size=1024)
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 64] = b"\xff" * 64
    path.write_bytes(bytes(data))
    assert pq.read_schema(path).names == ["source", "stimulus_time"]  # the footer is fine


def test_out_of_range_value_is_quarantined_and_the_batch_goes_on(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    landing, db = tmp_path / "landing", tmp_path / "store.duckdb"
    run = write_run(landing)
    write_jsonl(
        run / "arrivals" / "part-1.jsonl",
        [
            {"source": "s", "stimulus_time": 1e300},
            {"source": "s", "stimulus_time": 95.0},  # before the origin (100): interval -5
            {"source": "s", "stimulus_time": 100.5},
        ],
    )
    summary = ingest_once(landing, db, spark)
    assert (summary.rows_read, summary.rows_quarantined) == (15, 2)
    assert _arrivals(db) == 4
    reasons = _rows(db, "SELECT row_number, reason FROM quarantine ORDER BY row_number")
    assert reasons == [
        (1, "'stimulus_time' more than 10 years from the run's origin"),
        (2, "stimulus before the run's origin"),
    ]


def test_damaged_parquet_page_is_quarantined_and_the_rest_goes_on(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    landing, db, clock = tmp_path / "landing", tmp_path / "store.duckdb", Clock()
    run = write_run(landing)
    _damaged_parquet(run / "arrivals" / "part-1.parquet")
    first = ingest_once(landing, db, spark, clock=clock)
    assert _arrivals(db) == 3  # the good files are in
    assert first.deferred_files == 1 and _quarantined_files(db) == []
    assert "r1/arrivals/part-1.parquet" not in _manifest(db)
    clock.now += UNREADABLE_GRACE_SECONDS  # unchanged for the grace period: give up
    second = ingest_once(landing, db, spark, clock=clock)
    assert second.unreadable_files == 1 and second.deferred_files == 0
    [(file, reason)] = _quarantined_files(db)
    assert file == "r1/arrivals/part-1.parquet" and "FAILED_READ_FILE" in str(reason)
    assert "r1/arrivals/part-1.parquet" in _manifest(db)
    assert _arrivals(db) == 3
    assert ingest_once(landing, db, spark, clock=clock).batch_id is None


def test_truncated_parquet_is_read_once_complete(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    landing, db, clock = tmp_path / "landing", tmp_path / "store.duckdb", Clock()
    write_run(landing)
    full = tmp_path / "full.parquet"
    ARRIVALS.to_parquet(full, index=False)
    late = landing / "r1" / "arrivals" / "part-1.parquet"
    late.write_bytes(full.read_bytes()[: full.stat().st_size // 2])
    first = ingest_once(landing, db, spark, clock=clock)
    assert first.deferred_files == 1 and _arrivals(db) == 3
    clock.now += UNREADABLE_GRACE_SECONDS / 2
    late.write_bytes(full.read_bytes())  # the writer finishes
    second = ingest_once(landing, db, spark, clock=clock)
    assert (second.files, second.rows_read, second.deferred_files) == (1, 3, 0)
    assert _arrivals(db) == 6 and _quarantined_files(db) == []


def test_jsonl_with_a_half_written_last_line_waits_for_the_rest(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    landing, db, clock = tmp_path / "landing", tmp_path / "store.duckdb", Clock()
    run = write_run(landing)
    growing = run / "arrivals" / "part-1.jsonl"
    growing.write_text('{"source": "s", "stimulus_time": 100.1}\n{"source": "s", "stim')
    first = ingest_once(landing, db, spark, clock=clock)
    assert first.deferred_files == 1 and _arrivals(db) == 3
    with growing.open("a") as handle:
        handle.write('ulus_time": 100.2}\n')
    clock.now += 1
    second = ingest_once(landing, db, spark, clock=clock)
    assert (second.rows_read, second.rows_quarantined) == (2, 0)
    assert _arrivals(db) == 5


def test_jsonl_left_half_written_is_read_after_the_grace_period(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    landing, db, clock = tmp_path / "landing", tmp_path / "store.duckdb", Clock()
    run = write_run(landing)
    (run / "arrivals" / "part-1.jsonl").write_text('{"source": "s", "stimulus_time": 100.1}\n{"so')
    assert ingest_once(landing, db, spark, clock=clock).deferred_files == 1
    clock.now += UNREADABLE_GRACE_SECONDS
    second = ingest_once(landing, db, spark, clock=clock)
    assert (second.rows_read, second.rows_quarantined, second.deferred_files) == (2, 1, 0)
    assert _rows(db, "SELECT row_number, reason FROM quarantine") == [(2, "malformed JSON line")]


def test_file_vanishing_after_discovery_is_not_recorded(  # type: ignore[no-untyped-def]
    spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    landing, db, clock = tmp_path / "landing", tmp_path / "store.duckdb", Clock()
    run = write_run(landing)
    ghost = run / "arrivals" / "part-1.parquet"
    ARRIVALS.to_parquet(ghost, index=False)
    kept = ghost.read_bytes()
    real_discover = extract.discover

    def discover_then_delete(*args, **kwargs):  # type: ignore[no-untyped-def]
        runs = real_discover(*args, **kwargs)
        ghost.unlink()
        return runs

    with monkeypatch.context() as patch:
        patch.setattr("ingest.job.discover", discover_then_delete)
        first = ingest_once(landing, db, spark, clock=clock)
    assert first.deferred_files == 1 and _quarantined_files(db) == []
    assert "r1/arrivals/part-1.parquet" not in _manifest(db)
    ghost.write_bytes(kept)  # it comes back (e.g. moved in again)
    clock.now += 1
    assert ingest_once(landing, db, spark, clock=clock).rows_read == 3
    assert _arrivals(db) == 6


def test_hidden_and_in_progress_names_are_never_read(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    run = write_run(landing)
    for name in (".part-1.parquet", "_part-2.parquet", "part-3.parquet.inprogress",
                 "part-4.parquet.tmp", "part-5.jsonl.tmp", ".part-6.jsonl"):  # fmt: skip
        ARRIVALS.to_parquet(run / "arrivals" / name, index=False)
    [found] = extract.discover(landing, set())
    assert sorted(f.name for f in found.files) == ["part-0.parquet"] * 3


def test_a_run_with_nothing_new_is_not_read_again(
    spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """Regression: every pass re-read and rewrote every run's topology (a 10 MB topology cost
    about 3 minutes a pass). A run whose topology files are unchanged and which has no new
    data file is now skipped unparsed; a rewritten topology is read again."""
    landing = tmp_path / "landing"
    run_dir = write_run(landing)
    db = tmp_path / "store.duckdb"
    ingest_once(landing, db, spark)
    parsed: list[Path] = []
    real_load = extract.load_topology
    monkeypatch.setattr(extract, "load_topology", lambda p: parsed.append(p) or real_load(p))
    summary = ingest_once(landing, db, spark)
    assert parsed == [] and summary.batch_id is None
    topology = run_dir / "topology.yaml"
    topology.write_text(topology.read_text().replace("name: tiny", "name: renamed"))
    ingest_once(landing, db, spark)
    assert parsed == [topology]
    assert _rows(db, "SELECT name FROM runs") == [("renamed",)]


UUID = "7c1e2b0a-4d5f-4e6a-9b8c-0123456789ab"


def test_flink_part_files_are_read_not_in_progress(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Flink's file sink commits ``part-<uuid>-<subtask>-<n>`` without a suffix (the SQL
    filesystem connector in JSON or Parquet format) and writes hidden
    ``.part-<uuid>-<subtask>-<n>.inprogress.<uuid>`` files until the checkpoint."""
    landing = tmp_path / "landing"
    run = write_run(landing)
    (run / "arrivals" / "part-0.parquet").unlink()
    ARRIVALS.to_parquet(run / "arrivals" / f"part-{UUID}-0-0", index=False)
    write_jsonl(
        run / "arrivals" / f"part-{UUID}-1-0",
        [{"source": "s", "stimulus_time": t} for t in (102.5, 103.5)],
    )
    write_jsonl(
        run / "arrivals" / f".part-{UUID}-1-1.inprogress.{UUID}",
        [{"source": "s", "stimulus_time": 104.5}],
    )
    [found] = extract.discover(landing, set())
    names = sorted(f.absolute.name for f in found.files if f.record_set == "arrivals")
    assert names == [f"part-{UUID}-0-0", f"part-{UUID}-1-0"]
    db = tmp_path / "store.duckdb"
    summary = ingest_once(landing, db, spark)
    assert _quarantined_files(db) == [] and summary.rows_read > 0
    assert _arrivals(db) == len(ARRIVALS) + 2


def test_bucket_folders_of_a_record_set_are_read(tmp_path: Path) -> None:
    """Flink's FileSink puts its part files into bucket folders: hourly ones
    (``2026-11-26--05``) with its default bucket assigner, ``key=value`` ones for a
    partitioned SQL table. Those are read; hidden folders (staging, ``_temporary``) are
    not, nor are in-progress files inside a bucket."""
    landing = tmp_path / "landing"
    run = write_run(landing)
    rows = [{"source": "s", "stimulus_time": 102.5}]
    write_jsonl(run / "arrivals" / "2026-11-26--05" / f"part-{UUID}-0-0", rows)
    write_jsonl(run / "arrivals" / "dt=2026-11-26" / "hour=06" / f"part-{UUID}-0-1", rows)
    write_jsonl(run / "arrivals" / "2026-11-26--05" / f".part-{UUID}-0-1.inprogress.{UUID}", rows)
    write_jsonl(run / "arrivals" / "_temporary" / "0" / "part-7.jsonl", rows)
    write_jsonl(run / "arrivals" / ".staging" / "part-8.jsonl", rows)
    [found] = extract.discover(landing, set())
    paths = sorted(f.path for f in found.files if f.record_set == "arrivals")
    assert paths == [
        f"r1/arrivals/2026-11-26--05/part-{UUID}-0-0",
        f"r1/arrivals/dt=2026-11-26/hour=06/part-{UUID}-0-1",
        "r1/arrivals/part-0.parquet",
    ]


def test_pruning_deletes_ingested_files_in_bucket_folders(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    landing = tmp_path / "landing"
    run = write_run(landing)
    bucketed = run / "arrivals" / "2026-11-26--05" / f"part-{UUID}-0-0"
    write_jsonl(bucketed, [{"source": "s", "stimulus_time": 102.5}])
    db = tmp_path / "store.duckdb"
    ingest_once(landing, db, spark)
    assert _arrivals(db) == len(ARRIVALS) + 1
    assert prune_ingested(landing, db) == 4
    assert not bucketed.exists()


def test_times_in_milliseconds_are_quarantined_as_such(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A job that writes ``System.currentTimeMillis()`` instead of epoch seconds has its
    rows quarantined with a reason that says so, not only "more than 10 years away"."""
    landing = tmp_path / "landing"
    run = write_run(landing)
    good = {"query": "q", "operator": "b", "stimulus_time": 100.5, "egress_time": 100.7}
    write_jsonl(
        run / "outputs" / f"part-{UUID}-0-0",
        [
            {**good, "stimulus_time": 1795671701517, "egress_time": 1795671701553},
            {**good, "egress_time": 1795671701553},
            good,
        ],
    )
    db = tmp_path / "store.duckdb"
    ingest_once(landing, db, spark)
    assert _rows(db, "SELECT row_number, reason FROM quarantine ORDER BY row_number") == [
        (1, "'stimulus_time' looks like epoch milliseconds: times are epoch seconds"),
        (2, "'egress_time' looks like epoch milliseconds: times are epoch seconds"),
    ]
