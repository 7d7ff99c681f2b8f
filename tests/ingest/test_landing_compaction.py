"""Landing compaction with a real Spark ingest: the totals do not change when the compacted
folder is ingested again, and a fresh store built from it gets the same statistics."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.compaction import compact_ingested
from ingest.job import ingest_once
from storage.db import connect
from tests.ingest.landing import ARRIVALS, EXECUTIONS, OUTPUTS, write_jsonl, write_run
from tests.ingest.test_ingest import _snapshot

pytestmark = pytest.mark.spark


def _split_landing(landing: Path) -> Path:
    """The tiny run with two files per record set (arrivals as JSON Lines)."""
    run = write_run(landing)
    for name, frame in (("executions", EXECUTIONS), ("outputs", OUTPUTS)):
        (run / name / "part-0.parquet").unlink()
        half = len(frame) // 2
        frame.iloc[:half].to_parquet(run / name / "part-0.parquet", index=False)
        frame.iloc[half:].to_parquet(run / name / "part-1.parquet", index=False)
    (run / "arrivals" / "part-0.parquet").unlink()
    rows = ARRIVALS.to_dict("records")
    write_jsonl(run / "arrivals" / "a-0.jsonl", rows[:2])
    write_jsonl(run / "arrivals" / "a-1.jsonl", rows[2:])
    return run


def _files(run: Path) -> list[str]:
    return sorted(p.relative_to(run).as_posix() for p in run.rglob("*") if p.is_file())


def test_compacted_landing_ingests_to_the_same_totals(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    landing, db = tmp_path / "landing", tmp_path / "store.duckdb"
    run = _split_landing(landing)
    assert ingest_once(landing, db, spark).files == 6
    before = _snapshot(db)

    con = connect(db)
    try:
        result = compact_ingested(con, landing, dry_run=False)
        states = con.execute(
            "SELECT landing, count(*), count(DISTINCT compacted_into) FROM ingest_files GROUP BY 1"
        ).fetchall()
        compactions = con.execute(
            "SELECT record_set, files, rows FROM landing_compactions ORDER BY 1"
        ).fetchall()
    finally:
        con.close()
    assert result.files == 6 and len(result.written) == 3 and not result.skipped
    assert states == [("compacted", 6, 3)]
    assert compactions == [("arrivals", 2, 3), ("executions", 2, 6), ("outputs", 2, 3)]
    left = _files(run)
    assert [f for f in left if f != "topology.yaml"] == sorted(
        f"{rs}/{Path(w).name}"
        for w, rs in zip(result.written, ("arrivals", "executions", "outputs"), strict=True)
    )
    assert left[0].startswith("arrivals/compacted-") and left[0].endswith(".jsonl")

    again = ingest_once(landing, db, spark)  # the compacted files are in the manifest
    assert again.batch_id is None and again.files == 0
    assert _snapshot(db) == before

    fresh = tmp_path / "fresh.duckdb"  # the compacted folder holds the same rows
    summary = ingest_once(landing, fresh, spark)
    assert (summary.files, summary.rows_read, summary.rows_quarantined) == (3, 12, 0)
    assert _snapshot(fresh) == before
