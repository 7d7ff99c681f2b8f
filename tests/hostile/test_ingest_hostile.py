"""One landing folder holding a good run and one run per hostile case: the pass stores
the good run exactly as when it is ingested alone, quarantines the bad rows with their
reason, marks the runs it cannot ingest as failed with the reason (in the summary and
the store) and goes on."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from ingest.job import BatchSummary, ingest_once
from storage.db import connect
from storage.health import run_failures
from tests.hostile.cases import RUN_CASES, RunCase
from tests.ingest.landing import write_run

pytestmark = pytest.mark.spark

TABLES = (
    "source_arrivals", "operator_stats", "node_busy", "node_profile", "source_profile",
    "latency_stats", "quarantine",
)  # fmt: skip


def _run_tables(db: Path, run_id: str) -> dict[str, pd.DataFrame]:
    """Every statistics table of one run, in key order, without store-internal columns."""
    con = connect(db, read_only=True)
    try:
        tables = {}
        for table in TABLES:
            frame = con.execute(f"SELECT * FROM {table} WHERE run_id = ?", [run_id]).df()
            frame = frame.drop(columns=["run_key", "batch_id", "run_id"], errors="ignore")
            tables[table] = frame.sort_values(list(frame.columns[:4])).reset_index(drop=True)
        return tables
    finally:
        con.close()


def _quarantine_reasons(db: Path, run_id: str) -> list[str]:
    con = connect(db, read_only=True)
    try:
        rows = con.execute("SELECT reason FROM quarantine WHERE run_id = ?", [run_id]).fetchall()
        return [str(r[0]) for r in rows]
    finally:
        con.close()


@pytest.fixture(scope="module")
def hostile_pass(spark, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """(landing, db, first summary, second summary, db of the good run ingested alone)."""
    root = tmp_path_factory.mktemp("hostile")
    landing, db = root / "landing", root / "store.duckdb"
    write_run(landing, "good")
    for case in RUN_CASES:
        case.write(landing, case.id)
    first = ingest_once(landing, db, spark)
    second = ingest_once(landing, db, spark)
    alone_landing, alone_db = root / "alone", root / "alone.duckdb"
    write_run(alone_landing, "good")
    ingest_once(alone_landing, alone_db, spark)
    return landing, db, first, second, alone_db


def test_the_good_run_is_stored_exactly_as_alone(hostile_pass) -> None:  # type: ignore[no-untyped-def]
    _, db, first, _, alone_db = hostile_pass
    assert "good" in first.runs and "good" not in first.failed_runs
    stored, alone = _run_tables(db, "good"), _run_tables(alone_db, "good")
    for table in TABLES:
        pd.testing.assert_frame_equal(stored[table], alone[table], obj=table)
    assert not stored["source_arrivals"].empty and not stored["latency_stats"].empty


@pytest.mark.parametrize("case", RUN_CASES, ids=[c.id for c in RUN_CASES])
def test_each_bad_run_says_what_was_wrong(hostile_pass, case: RunCase) -> None:  # type: ignore[no-untyped-def]
    _, db, first, second, _ = hostile_pass
    first_summary: BatchSummary = first
    con = connect(db, read_only=True)
    try:
        stored_failures = run_failures(con)
    finally:
        con.close()
    if case.outcome == "failed":
        assert case.reason in first_summary.failed_runs[case.id]
        assert case.reason in stored_failures[case.id].reason
        assert f"failed run '{case.id}'" in first_summary.describe()
        # unchanged, it is not retried, and still reported
        assert second.failed_runs[case.id] == first_summary.failed_runs[case.id]
    elif case.outcome == "stored":
        assert case.id in first_summary.runs and case.id not in stored_failures
        assert _quarantine_reasons(db, case.id) == []
        assert case.reason in first_summary.describe()
        assert case.stored is not None and case.stored(_run_tables(db, case.id))
    else:
        assert case.id in first_summary.runs and case.id not in stored_failures
        reasons = _quarantine_reasons(db, case.id)
        assert any(case.reason in r for r in reasons), reasons
        # the run's valid rows are kept: the tiny run's three arrivals at least
        assert _run_tables(db, case.id)["source_arrivals"]["events"].sum() >= 3


def test_a_file_given_up_is_read_again_once_it_changes(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A writer that pauses past the grace period: its half-written Parquet file is given
    up (quarantined whole); once the writer completes it, the next pass reads it."""
    from ingest.job import UNREADABLE_GRACE_SECONDS
    from tests.ingest.landing import ARRIVALS

    landing, db = tmp_path / "landing", tmp_path / "store.duckdb"
    now = [1000.0]
    write_run(landing, "r1")
    full = tmp_path / "full.parquet"
    ARRIVALS.to_parquet(full, index=False)
    late = landing / "r1" / "arrivals" / "part-1.parquet"
    late.write_bytes(full.read_bytes()[: full.stat().st_size // 2])
    assert ingest_once(landing, db, spark, clock=lambda: now[0]).deferred_files == 1
    now[0] += UNREADABLE_GRACE_SECONDS
    assert ingest_once(landing, db, spark, clock=lambda: now[0]).unreadable_files == 1
    late.write_bytes(full.read_bytes())  # the writer comes back and finishes
    now[0] += 1
    third = ingest_once(landing, db, spark, clock=lambda: now[0])
    assert (third.files, third.rows_read) == (1, 3)
    con = connect(db, read_only=True)
    try:
        arrivals = con.execute("SELECT sum(events) FROM source_arrivals").fetchall()[0][0]
        whole = con.execute("SELECT count(*) FROM quarantine WHERE row_number IS NULL")
        assert (arrivals, whole.fetchall()[0][0]) == (6, 0)
    finally:
        con.close()
