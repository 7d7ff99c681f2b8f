"""End to end: a landing folder written here -> Spark -> DuckDB, with hand-computed numbers."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from ingest.job import UNREADABLE_GRACE_SECONDS, ingest_once
from storage import reads, writes
from storage.db import connect
from tests.ingest.landing import EXECUTIONS, TOPOLOGY, write_jsonl, write_run

pytestmark = pytest.mark.spark

TABLES = (
    "source_arrivals",
    "source_profile",
    "operator_stats",
    "node_busy",
    "latency_stats",
    "quarantine",
)


def _table(db: Path, name: str) -> pd.DataFrame:
    con = connect(db, read_only=True)
    try:
        frame = con.execute(f"SELECT * EXCLUDE (run_id) FROM {name}").df()
    finally:
        con.close()
    columns = [c for c in frame.columns if c not in ("histogram", "batch_id", "raw", "run_key")]
    return frame[columns].sort_values(columns[:3]).reset_index(drop=True)


def _snapshot(db: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every table's rows, NULL (NaN in the frame) as None so that equal rows compare equal."""
    return {
        t: [
            tuple(None if pd.isna(v) else v for v in r)
            for r in _table(db, t).itertuples(index=False)
        ]
        for t in TABLES
    }


def test_end_to_end_exact_numbers_then_idempotent(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    landing, db = tmp_path / "landing", tmp_path / "store.duckdb"
    write_run(landing)
    summary = ingest_once(landing, db, spark)
    assert (summary.files, summary.rows_read, summary.rows_kept, summary.rows_quarantined) == (
        3, 12, 12, 0,
    )  # fmt: skip
    # origin 100, width 1: stimulus 100.2, 100.7 -> interval 0; 101.1 -> interval 1
    assert _snapshot(db)["source_arrivals"] == [("s", 0, 2), ("s", 1, 1)]
    # k = 32 sub-buckets of 0.03125 s: 100.2 -> (0, 6), 100.7 -> (0, 22), 101.1 -> (1, 3)
    profile = _table(db, "source_profile")
    assert [tuple(r) for r in profile.itertuples(index=False)] == [
        ("s", 0, 6, 1), ("s", 0, 22, 1), ("s", 1, 3, 1),
    ]  # fmt: skip
    stats = _table(db, "operator_stats")
    counts = stats[["operator", "interval", "events_in", "events_out"]].values
    assert [tuple(r) for r in counts] == [
        ("a", 0, 2, 2), ("a", 1, 1, 1), ("b", 0, 2, 2), ("b", 1, 1, 1),
    ]  # fmt: skip
    assert stats["cpu_seconds"].tolist() == pytest.approx([0.2, 0.3, 0.4, 0.4])
    busy = _table(db, "node_busy")
    # n1 (capacity 1): 0.1 + 0.1 in [100, 101); 101.9..102.2 splits 0.1 | 0.2.
    # n2 (capacity 2): 0.2/2 twice in [100, 101) (the second ends exactly at 101); 102.3 + 0.2.
    assert busy[["node", "interval"]].values.tolist() == [
        ["n1", 0], ["n1", 1], ["n1", 2], ["n2", 0], ["n2", 2],
    ]  # fmt: skip
    assert busy["busy_seconds"].tolist() == pytest.approx([0.2, 0.1, 0.2, 0.2, 0.2])
    latency = _table(db, "latency_stats")
    # interval 0: latencies 0.4 and 0.3; interval 1: 1.4
    assert latency["outputs"].tolist() == [2, 1]
    assert latency["lat_max"].tolist() == pytest.approx([0.4, 1.4])
    assert latency["lat_mean"].tolist() == pytest.approx([0.35, 1.4])
    assert latency["lat_p50"].tolist() == pytest.approx([0.35, 1.4])
    assert latency["lat_p95"].tolist() == pytest.approx([0.395, 1.4])
    assert latency["quantiles_exact"].tolist() == [True, True]

    con = connect(db, read_only=True)
    topology = reads.run_topology(con, "r1")
    assert topology.placement == {"a": "n1", "b": "n2"} and topology.origin == 100.0
    con.close()

    before = _snapshot(db)
    again = ingest_once(landing, db, spark)
    assert again.batch_id is None and again.files == 0
    assert _snapshot(db) == before


def test_crash_before_commit_then_rerun_gives_the_same_totals(  # type: ignore[no-untyped-def]
    spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    landing = tmp_path / "landing"
    write_run(landing)
    reference_db, crashed_db = tmp_path / "ref.duckdb", tmp_path / "crash.duckdb"
    ingest_once(landing, reference_db, spark)

    def crash(*args: object, **kwargs: object) -> None:
        raise RuntimeError("simulated crash between Spark and the DuckDB commit")

    with monkeypatch.context() as patch:
        patch.setattr(writes, "record_batch", crash)
        with pytest.raises(RuntimeError, match="simulated crash"):
            ingest_once(landing, crashed_db, spark)
    assert all(not rows for rows in _snapshot(crashed_db).values())
    summary = ingest_once(landing, crashed_db, spark)
    assert summary.files == 3
    assert _snapshot(crashed_db) == _snapshot(reference_db)


def test_late_file_updates_its_interval(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    landing, db = tmp_path / "landing", tmp_path / "store.duckdb"
    run = write_run(landing)
    ingest_once(landing, db, spark)
    late = EXECUTIONS.iloc[:1].assign(cpu_seconds=0.05)
    late.to_parquet(run / "executions" / "part-1.parquet", index=False)
    summary = ingest_once(landing, db, spark)
    assert (summary.files, summary.rows_read) == (1, 1)
    stats = _table(db, "operator_stats")
    first = stats[(stats.operator == "a") & (stats.interval == 0)].iloc[0]
    assert (first.events_in, first.cpu_seconds) == (3, pytest.approx(0.25))


def test_bad_rows_and_corrupt_file_are_quarantined_and_the_rest_kept(  # type: ignore[no-untyped-def]
    spark, tmp_path: Path
) -> None:
    landing, db = tmp_path / "landing", tmp_path / "store.duckdb"
    run = write_run(landing)
    good = {"node": "n1", "operator": "a", "port": 0, "stimulus_time": 100.1,
            "start_time": 100.2, "cpu_seconds": 0.1, "outputs": 1}  # fmt: skip
    write_jsonl(
        run / "executions" / "part-1.jsonl",
        [
            good,
            {k: v for k, v in good.items() if k != "cpu_seconds"},
            {**good, "port": "zero"},
            "this is not json",
            {**good, "cpu_seconds": -0.5},
            {**good, "operator": "ghost"},
            {**good, "node": "n7"},
            '{"node": "n1", "operator": "a", "port": 0, "stimulus_time": 100.1, '
            '"start_time": 100.2, "cpu_seconds": NaN, "outputs": 1}',
            good,
        ],
    )
    write_jsonl(
        run / "outputs" / "part-1.jsonl",
        [{"query": "q", "operator": "b", "stimulus_time": 100.5, "egress_time": 100.4}],
    )
    (run / "arrivals" / "part-1.parquet").write_bytes(b"PAR1 definitely not parquet")
    now = [0.0]
    summary = ingest_once(landing, db, spark, clock=lambda: now[0])
    assert (summary.unreadable_files, summary.deferred_files) == (0, 1)  # retried later
    assert (summary.rows_read, summary.rows_quarantined) == (12 + 9 + 1, 7 + 1)
    now[0] += UNREADABLE_GRACE_SECONDS  # unchanged since: quarantined for good
    summary = ingest_once(landing, db, spark, clock=lambda: now[0])
    assert (summary.unreadable_files, summary.deferred_files) == (1, 0)
    quarantine = _table(db, "quarantine")
    rows = [tuple(r) for r in quarantine[["file", "row_number", "reason"]].values]
    executions = "r1/executions/part-1.jsonl"
    assert rows[0][0] == "r1/arrivals/part-1.parquet" and pd.isna(rows[0][1])
    assert rows[0][2].startswith("unreadable Parquet file")
    assert rows[1:8] == [
        (executions, 2, "missing field 'cpu_seconds'"),
        (executions, 3, "wrong type for field 'port'"),
        (executions, 4, "malformed JSON line"),
        (executions, 5, "negative cost (cpu_seconds)"),
        (executions, 6, "unknown operator 'ghost'"),
        (executions, 7, "unknown node 'n7'"),
        (executions, 8, "NaN in 'cpu_seconds'"),
    ]
    assert rows[8] == ("r1/outputs/part-1.jsonl", 1, "egress before stimulus")
    stats = _table(db, "operator_stats")
    first = stats[(stats.operator == "a") & (stats.interval == 0)].iloc[0]
    assert (first.events_in, first.cpu_seconds) == (4, pytest.approx(0.4))  # 2 + the 2 good


def test_run_without_valid_topology_is_reported_and_skipped(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    landing, db = tmp_path / "landing", tmp_path / "store.duckdb"
    write_run(landing, "good")
    write_run(
        landing, "broken", TOPOLOGY.replace("placement: {a: n1, b: n2}", "placement: {a: n1}")
    )
    summary = ingest_once(landing, db, spark)
    assert summary.runs == ["good"]
    assert "operator 'b' has no node" in summary.failed_runs["broken"]
    con = connect(db, read_only=True)
    assert [r.run_id for r in reads.list_runs(con)] == ["good"]
    con.close()
