"""DuckDB store without Spark: schema, lock errors, topology round trip, merges, reads."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import textwrap
import threading
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashboard.core.data import latency_rollup
from estimator.arrivals import arrivals_window
from estimator.loaders import topology_from_text
from estimator.model import topology_from_dict, version_starts
from estimator.runs import measured_node_dlts, node_profile_matrix
from storage import reads, schema, writes
from storage.db import connect, connect_to_read, transaction
from storage.errors import DatabaseLockedError, StorageError
from storage.histogram import BUCKETS, bucket_bounds, histogram_of, quantile_from_histogram
from storage.schema import MIGRATIONS, SCHEMA_VERSION, current_version
from tests.ingest.landing import TOPOLOGY

TABLES = {
    "runs": ["run_id", "name", "subinterval", "origin"],
    "source_arrivals": ["run_id", "source", "interval", "events"],
    "operator_stats": [
        "run_id", "operator", "port", "interval", "events_in", "events_out", "cpu_seconds",
    ],
    "node_busy": ["run_id", "node", "interval", "busy_seconds"],
    "node_profile": ["run_id", "node", "interval", "sub_bucket", "cpu_seconds", "run_key"],
    "source_profile": ["run_id", "source", "interval", "sub_bucket", "events", "run_key"],
    "latency_stats": [
        "run_id", "query", "interval", "outputs", "lat_max", "lat_mean",
        "lat_p50", "lat_p95", "lat_p99", "histogram",
    ],
    "ingest_batches": [
        "batch_id", "files", "rows_read", "rows_kept", "rows_quarantined",
        "started_at", "finished_at",
    ],
    "quarantine": ["run_id", "record_set", "file", "row_number", "reason", "raw"],
    "scenarios": [
        "scenario_id", "run_id", "name", "placement", "capacities", "rate_scale",
        "added_queries", "created_at",
    ],
    "latency_objectives": ["run_id", "query", "objective_seconds", "updated_at"],
    "alerts": [
        "alert_id", "run_id", "query", "kind", "start_interval", "end_interval", "value",
        "objective", "detail", "created_at", "delivered",
    ],
}  # fmt: skip


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "store.duckdb"
    connect(path).close()
    return path


def test_schema_has_the_design_columns_and_migrates_once(db: Path) -> None:
    con = connect(db)
    for table, columns in TABLES.items():
        present = [r[0] for r in con.execute(f"DESCRIBE {table}").fetchall()]
        assert set(columns) <= set(present), table
    con.close()
    con = connect(db)  # second open applies nothing new
    versions = con.execute("SELECT version FROM schema_version").fetchall()
    assert versions == [(v,) for v in range(1, SCHEMA_VERSION + 1)]
    con.close()


def test_read_only_on_a_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(StorageError, match="no such database"):
        connect(tmp_path / "absent.duckdb", read_only=True)


def test_second_writer_gets_an_error_naming_the_lock_holder(db: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys, time
            from storage.db import connect
            con = connect({str(db)!r})
            print("locked", flush=True)
            sys.stdin.read()
        """)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(DatabaseLockedError) as caught:
            connect(db)
        assert caught.value.holder_pid == holder.pid
        assert f"PID {holder.pid}" in str(caught.value)
    finally:
        holder.communicate("")


def _topology():  # type: ignore[no-untyped-def]
    return topology_from_text(TOPOLOGY)


def test_topology_round_trip_and_placement_versions(db: Path) -> None:
    topology = _topology()
    con = connect(db)
    with transaction(con, "test"):
        writes.write_run(con, "r1", topology, [(102.0, {"a": "n2", "b": "n2"})])
    assert reads.run_topology(con, "r1", interval=0) == topology
    assert reads.run_topology(con, "r1", interval=2).placement == {"a": "n2", "b": "n2"}
    assert reads.run_topology(con, "r1").placement == {"a": "n2", "b": "n2"}
    versions = reads.placement_versions(con, "r1")
    assert [(v.version, v.valid_from) for v in versions] == [(0, 100.0), (1, 102.0)]
    run = reads.get_run(con, "r1")
    for interval in (0, 2, None):  # what the caller read already gives the same topology
        given = reads.run_topology(con, "r1", interval, run=run, versions=versions)
        assert given == reads.run_topology(con, "r1", interval)
    with pytest.raises(StorageError, match="unknown run 'nope'"):
        reads.run_topology(con, "nope")


def test_a_thread_of_python_operators_keeps_its_bundle_settings(db: Path) -> None:
    document = _topology().to_dict()
    document["nodes"][0] |= {"bundle_time": 1.0, "bundle_size": 1000, "checkpoint_interval": 5.0}
    topology = topology_from_dict(document)
    con = connect(db)
    with transaction(con, "test"):
        writes.write_run(con, "r1", topology, [])
    stored = reads.run_topology(con, "r1")
    assert stored == topology
    assert (stored.nodes[0].bundle_size, stored.nodes[0].checkpoint_interval) == (1000, 5.0)
    assert stored.nodes[1].bundle_time is None


def test_a_taskmanager_keeps_its_slots_and_python_workers(db: Path) -> None:
    document = _topology().to_dict()
    document["nodes"][1] |= {"slots": 4, "python_workers": "per-slot"}
    topology = topology_from_dict(document)
    con = connect(db)
    with transaction(con, "test"):
        writes.write_run(con, "r1", topology, [])
    stored = reads.run_topology(con, "r1")
    assert stored == topology
    assert [(n.slots, n.python_workers) for n in stored.nodes] == [(None, None), (4, "per-slot")]


def test_each_version_keeps_its_node_capacities(db: Path) -> None:
    topology = _topology()  # n1 1.0, n2 2.0
    same = {"a": "n1", "b": "n2"}
    con = connect(db)
    with transaction(con, "test"):
        writes.write_run(con, "r1", topology, [(102.0, same, {"n2": 4.0}), (104.0, same)])
    versions = reads.placement_versions(con, "r1")
    assert [v.capacities for v in versions] == [
        {"n1": 1.0, "n2": 2.0},
        {"n1": 1.0, "n2": 4.0},
        {"n1": 1.0, "n2": 2.0},  # a version without capacities has the topology's
    ]
    assert reads.run_topology(con, "r1", interval=3) == topology  # topology.yaml's capacities
    with transaction(con, "test"):  # written again (the next ingestion): replaced, not added
        writes.write_run(con, "r1", topology, [(102.0, same, {"n2": 4.0})])
    assert [v.capacities["n2"] for v in reads.placement_versions(con, "r1")] == [2.0, 4.0]


def test_a_version_keeps_the_stop_before_it(db: Path) -> None:
    topology = _topology()
    same = {"a": "n1", "b": "n2"}
    con = connect(db)
    with transaction(con, "test"):
        writes.write_run(
            con, "r1", topology, [(102.0, same, {"n2": 4.0}, 99.5), (104.0, same, {}, None)]
        )
    versions = reads.placement_versions(con, "r1")
    assert [v.stopped_at for v in versions] == [None, 99.5, None]
    with transaction(con, "test"):  # written again: replaced, not added
        writes.write_run(con, "r1", topology, [(102.0, same, {"n2": 4.0})])
    assert [v.stopped_at for v in reads.placement_versions(con, "r1")] == [None, None]


def test_sample_state_keeps_the_newest_sample_and_marks_a_counter_run(db: Path) -> None:
    con = connect(db)
    with transaction(con, "test"):
        writes.write_run(con, "events", _topology(), [])
        writes.write_run(con, "counted", _topology(), [])
    state = pd.DataFrame(
        [("counted", "a", 0, -1, 5.0, "n1", 10.0, 9.0, 0.5, 0.25)],
        columns=writes.SAMPLE_STATE_COLUMNS,
    )
    with transaction(con, "test"):
        writes.replace_sample_state(con, state)
        newer = state.assign(time=6.0, records_in=12.0, busy_seconds=float("nan"))
        writes.replace_sample_state(con, newer)
    frame = reads.sample_state_frame(con, "counted")
    assert frame[["time", "records_in"]].values.tolist() == [[6.0, 12.0]]
    assert np.isnan(frame["busy_seconds"].iloc[0])  # a source's NaN busy time is kept as is
    assert frame["work_seconds"].iloc[0] == 0.25
    assert {r.run_id: r.counters for r in reads.list_runs(con)} == {
        "counted": True,
        "events": False,
    }


def test_storage_and_dashboard_agree_on_the_version_at_a_boundary(tmp_path: Path) -> None:
    """A version valid from 0.9 s with w = 0.3 s starts at interval 3 (0 + 3 * 0.3 is
    0.8999999999999999 in floats): storage's topology for interval 3 and the dashboard's
    version starts use the same rule."""
    from dashboard.core.data import Database, RunCache

    topology = topology_from_text(TOPOLOGY.replace("subinterval: 1.0", "subinterval: 0.3"))
    topology = topology.with_changes(origin=0.0)
    path = tmp_path / "boundary.duckdb"
    con = connect(path)
    moved = {"a": "n2", "b": "n2"}
    with transaction(con, "test"):
        writes.write_run(con, "r1", topology, [(0.9, moved)])
        writes.merge_source_arrivals(
            con, pd.DataFrame({"run_id": "r1", "source": "s", "interval": [0, 4], "events": 1})
        )
    assert reads.run_topology(con, "r1", interval=2).placement == {"a": "n1", "b": "n2"}
    assert reads.run_topology(con, "r1", interval=3).placement == moved
    con.close()
    assert RunCache(Database(path)).get("r1").version_starts == (0, 3)


def test_work_seconds_add_up_and_stay_null_only_while_nothing_measured_them(db: Path) -> None:
    con = connect(db)
    stats = pd.DataFrame(
        {
            "run_id": "r1", "operator": ["a", "b"], "port": 0, "interval": 0, "events_in": 1,
            "events_out": 1, "cpu_seconds": 0.5, "work_seconds": [0.25, np.nan],
        }
    )  # fmt: skip
    with transaction(con, "test"):
        writes.write_run(con, "r1", _topology(), [])
        writes.merge_operator_stats(con, stats)
        writes.merge_operator_stats(con, stats.drop(columns="work_seconds"))  # not measured
        writes.merge_operator_stats(con, stats.assign(work_seconds=[0.5, 0.125]))
    frame = reads.operator_stats_frame(con, "r1").set_index("operator")
    assert frame.loc["a", "work_seconds"] == 0.75
    assert frame.loc["b", "work_seconds"] == 0.125  # measured by the last merge only
    assert frame.loc["a", "cpu_seconds"] == 1.5
    with transaction(con, "test"):
        writes.write_run(con, "r2", _topology(), [])
        writes.merge_operator_stats(con, stats.assign(run_id="r2").drop(columns="work_seconds"))
    assert reads.operator_stats_frame(con, "r2")["work_seconds"].isna().all()


def test_merges_add_and_node_dlts_follow_the_placement_versions(db: Path) -> None:
    con = connect(db)
    stats = pd.DataFrame(
        {
            "run_id": "r1", "operator": ["a", "b", "a", "b"], "port": 0,
            "interval": [0, 0, 2, 2], "events_in": [1, 2, 3, 4], "events_out": 1,
            "cpu_seconds": [0.1, 0.2, 0.3, 0.4],
        }
    )  # fmt: skip
    with transaction(con, "test"):
        writes.write_run(con, "r1", _topology(), [(102.0, {"a": "n2", "b": "n2"})])
        writes.merge_operator_stats(con, stats)
        writes.merge_operator_stats(con, stats.iloc[:1])  # a late row for (a, 0, 0)
        writes.merge_source_arrivals(
            con, pd.DataFrame({"run_id": "r1", "source": "s", "interval": [0, 2, 2], "events": 1})
        )
    frame = reads.operator_stats_frame(con, "r1")
    first = frame[(frame.operator == "a") & (frame.interval == 0)].iloc[0]
    assert (first.events_in, first.events_out, first.cpu_seconds) == (2, 2, pytest.approx(0.2))
    topology = reads.run_topology(con, "r1", interval=0)
    versions = reads.placement_versions(con, "r1")
    starts = version_starts([v.valid_from for v in versions], 100.0, 1.0)
    cpu = reads.operator_cpu_frame(con, "r1")
    dlts = measured_node_dlts(topology, cpu, [v.placement for v in versions], starts, 3)
    assert topology.node_ids == ("n1", "n2")
    # interval 0: a on n1, b on n2; interval 2 (t = 102): both on n2
    np.testing.assert_allclose(dlts, [[0.2, 0, 0], [0.2, 0, 0.7]])
    frame = reads.source_arrivals_frame(con, "r1")
    arrivals = arrivals_window(topology.source_ids, frame, *reads.interval_range(con, "r1"))
    np.testing.assert_array_equal(arrivals.counts, [[1, 0, 2]])
    assert reads.interval_range(con, "r1") == (0, 3)


def test_node_profile_merges_by_addition_and_reads_back_as_nodes_x_d_x_k(db: Path) -> None:
    con = connect(db)
    cells = pd.DataFrame(
        {"run_id": "r1", "node": ["n1", "n2", "n1"], "interval": [0, 0, 2],
         "sub_bucket": [1, 7, 0], "cpu_seconds": [0.5, 0.25, 1.0]}
    )  # fmt: skip
    with transaction(con, "test"):
        writes.write_run(con, "r1", _topology(), [])
        writes.merge_node_profile(con, cells)
        writes.merge_node_profile(con, cells.iloc[:1])  # a late file: (n1, 0, 1) adds up
        writes.merge_node_profile(con, cells.iloc[:0])  # nothing to add
    frame = reads.node_profile_frame(con, "r1")
    assert reads.node_profile_frame(con, "r1", 1, 3)["interval"].tolist() == [2]
    con.close()
    matrix = node_profile_matrix(_topology(), frame, 3, 8)
    assert matrix is not None and matrix.shape == (2, 3, 8)
    expected = np.zeros((2, 3, 8))
    expected[0, 0, 1], expected[1, 0, 7], expected[0, 2, 0] = 1.0, 0.25, 1.0
    np.testing.assert_allclose(matrix, expected)
    assert node_profile_matrix(_topology(), frame.iloc[:0], 3, 8) is None


def test_runs_keep_the_profile_grid_they_were_ingested_with(tmp_path: Path) -> None:
    """Migration 9: a run whose node_profile rows were written at k = 8 is marked 8, a
    run without rows is not fixed yet; write_run fixes it once and never changes it (rows
    merged later share the stored grid)."""
    path = tmp_path / "old.duckdb"
    old = duckdb.connect(str(path))
    old.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TIMESTAMP)")
    grid = next(k for k, sql in enumerate(schema.MIGRATIONS) if "profile_sub_buckets" in sql)
    for number, sql in enumerate(schema.MIGRATIONS[:grid], start=1):
        old.execute(sql)
        old.execute("INSERT INTO schema_version VALUES (?, current_timestamp)", [number])
    for run_id in ("profiled", "bare"):
        old.execute(
            "INSERT INTO runs (run_id, name, subinterval, origin) VALUES (?, ?, 1.0, 0.0)",
            [run_id, run_id],
        )
    old.execute("INSERT INTO node_profile VALUES ('profiled', 'n1', 0, 7, 0.5, 1)")
    old.close()
    con = connect(path)
    try:
        assert reads.profile_sub_buckets(con, "profiled") == 8
        assert reads.profile_sub_buckets(con, "bare") is None
        assert reads.profile_sub_buckets(con, "unknown") is None
        with transaction(con, "test"):
            writes.write_run(con, "profiled", _topology(), [], 32)
            writes.write_run(con, "bare", _topology(), [], 32)
            writes.write_run(con, "bare", _topology(), [], 16)
        assert reads.get_run(con, "profiled").profile_sub_buckets == 8
        assert reads.get_run(con, "bare").profile_sub_buckets == 32
    finally:
        con.close()


def test_source_profile_merges_by_addition_and_reads_back_sorted(db: Path) -> None:
    con = connect(db)
    cells = pd.DataFrame(
        {"run_id": "r1", "source": ["s", "s", "s"], "interval": [2, 0, 0],
         "sub_bucket": [0, 7, 1], "events": [4, 2, 3]}
    )  # fmt: skip
    with transaction(con, "test"):
        writes.write_run(con, "r1", _topology(), [])
        writes.merge_source_profile(con, cells)
        writes.merge_source_profile(con, cells.iloc[1:2])  # a late file: (s, 0, 7) adds up
        writes.merge_source_profile(con, cells.iloc[:0])  # nothing to add
    frame = reads.source_profile_frame(con, "r1")
    assert reads.source_profile_frame(con, "r1", 1, 3)["interval"].tolist() == [2]
    assert reads.source_profile_frame(con, "r1", 3, 4).empty
    con.close()
    assert [tuple(r) for r in frame.itertuples(index=False)] == [
        ("s", 0, 1, 3), ("s", 0, 7, 4), ("s", 2, 0, 4),
    ]  # fmt: skip


def test_migration_files_must_be_numbered_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 008_node_profile.sql
    assert schema.MIGRATIONS[7].lstrip().startswith("-- The arrival profile inside")
    assert "profile_sub_buckets" in schema.MIGRATIONS[8]  # 009_profile_sub_buckets.sql
    assert "CREATE TABLE source_profile" in schema.MIGRATIONS[9]  # 010_source_profile.sql
    for name in ("008_a.sql", "010_b.sql"):
        (tmp_path / name).write_text("SELECT 1;", encoding="utf-8")
    monkeypatch.setattr(schema, "MIGRATIONS_FOLDER", tmp_path)
    with pytest.raises(StorageError, match=r"numbered \[8, 10\], expected 8, 9"):
        schema._file_migrations(8)


def _latency_row(interval: int, latencies: list[float]) -> dict[str, object]:
    values = np.array(latencies)
    return {
        "run_id": "r1", "query": "q", "interval": interval, "outputs": len(values),
        "lat_sum": values.sum(), "lat_max": values.max(),
        "lat_p50": np.quantile(values, 0.5), "lat_p95": np.quantile(values, 0.95),
        "lat_p99": np.quantile(values, 0.99), "histogram": histogram_of(values),
    }  # fmt: skip


def test_latency_merge_keeps_exact_max_and_mean_and_reads_quantiles_from_histogram(
    db: Path,
) -> None:
    con = connect(db)
    with transaction(con, "test"):
        writes.write_run(con, "r1", _topology())
        writes.merge_latency_stats(con, pd.DataFrame([_latency_row(0, [0.1, 0.2, 0.3])]))
    row = reads.latency_stats_frame(con, "r1").iloc[0]
    assert row.quantiles_exact and row.lat_p50 == pytest.approx(0.2)
    with transaction(con, "test"):
        writes.merge_latency_stats(con, pd.DataFrame([_latency_row(0, [1.0])]))
    row = reads.latency_stats_frame(con, "r1").iloc[0]
    assert (row.outputs, row.lat_max) == (4, 1.0)
    assert row.lat_mean == pytest.approx(0.4)
    assert not row.quantiles_exact
    lower, upper = bucket_bounds(int(np.argmax(histogram_of(np.array([0.2])))))
    # the 2nd of the 4 values (0.2) lies in this bucket
    assert lower <= row.lat_p50 <= upper * (1 + 1e-12)
    rows = reads.latency_stats_frame(con, "r1", with_histogram=True)
    rollup = latency_rollup(rows, by_query=False)
    assert list(rollup.columns)[:3] == ["interval", "outputs", "lat_max"]
    assert rollup.iloc[0].outputs == 4


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(min_value=1e-5, max_value=1e3), min_size=1, max_size=200),
    st.sampled_from([0.5, 0.95, 0.99]),
)
def test_histogram_quantile_is_within_one_bucket_of_the_order_statistic(
    values: list[float], q: float
) -> None:
    data = np.sort(np.array(values))
    counts = histogram_of(data)
    assert counts.shape == (BUCKETS,) and counts.sum() == len(data)
    estimate = quantile_from_histogram(counts, q, float(data.max()))
    target = data[max(0, int(np.ceil(q * len(data))) - 1)]  # nearest-rank order statistic
    ratio = 10 ** (1 / 20)
    assert target / ratio * (1 - 1e-9) <= estimate <= target * ratio * (1 + 1e-9)


NAMES = st.sampled_from(["a", "B", "a_b", "ab", "Zeta", "é", "ö2", "z", "op-10", "op-9"])
INTERVALS = st.one_of(st.integers(-5, 60), st.sampled_from([2**40, 2**61]))


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.lists(st.tuples(NAMES, st.integers(0, 2), INTERVALS), min_size=1, max_size=40),
        min_size=1,
        max_size=4,
    )
)
def test_statistics_frames_come_back_sorted_by_key_whatever_the_write_order(
    batches: list[list[tuple[str, int, int]]],
) -> None:
    """The reads sort in Python what the scan returns (storage.reads._statistics): rows
    merged in several batches, in any order, with keys that overflow one integer per row,
    come back as the sums per key sorted by code point and value, with the dtypes of
    DuckDB's own conversion (``.df()``)."""
    expected: dict[tuple[str, int, int], int] = {}
    with tempfile.TemporaryDirectory() as folder:
        con = connect(Path(folder) / "store.duckdb")
        for number, batch in enumerate(batches):
            rows = pd.DataFrame(batch, columns=["operator", "port", "interval"])
            rows = rows.assign(run_id="r1", events_in=number + 1, events_out=1, cpu_seconds=0.5)
            for key in batch:
                expected[key] = expected.get(key, 0) + number + 1
            with transaction(con, "test"):
                writes.merge_operator_stats(con, rows)
                writes.merge_node_busy(
                    con,
                    rows.rename(columns={"operator": "node", "cpu_seconds": "busy_seconds"})[
                        ["run_id", "node", "interval", "busy_seconds"]
                    ],
                )
        stats = reads.operator_stats_frame(con, "r1")
        busy = reads.node_busy_frame(con, "r1")
        con.close()
    assert list(zip(stats.operator, stats.port, stats.interval, strict=True)) == sorted(expected)
    assert list(stats.events_in) == [expected[key] for key in sorted(expected)]
    assert stats.dtypes.astype(str).to_dict() == {
        "operator": "object", "port": "int32", "interval": "int64", "events_in": "int64",
        "events_out": "int64", "cpu_seconds": "float64", "work_seconds": "float64",
    }  # fmt: skip
    nodes = sorted({(name, interval) for name, _, interval in expected})
    assert list(zip(busy.node, busy.interval, strict=True)) == nodes


def test_statistics_frames_of_a_run_without_rows_are_empty_with_their_columns(db: Path) -> None:
    con = connect(db)
    frame = reads.latency_stats_frame(con, "nope", with_histogram=True)
    assert frame.empty
    assert frame.dtypes.astype(str).to_dict() == {
        "query": "object", "interval": "int64", "outputs": "int64", "lat_sum": "float64",
        "lat_max": "float64", "lat_mean": "float64", "lat_p50": "float64", "lat_p95": "float64",
        "lat_p99": "float64", "quantiles_exact": "bool", "histogram": "object",
    }  # fmt: skip


def test_connect_to_read_opens_a_current_file_read_only_and_migrates_an_old_one(
    tmp_path: Path,
) -> None:
    path = tmp_path / "store.duckdb"
    con = connect(path)
    with transaction(con, "test"):
        writes.write_run(con, "r1", _topology())
    con.close()
    con = connect_to_read(path)
    try:
        assert [r.run_id for r in reads.list_runs(con)] == ["r1"]
        with pytest.raises(StorageError, match="read-only"):
            writes.write_run(con, "r2", _topology())
    finally:
        con.close()
    old = tmp_path / "old.duckdb"
    first = duckdb.connect(str(old))
    first.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TIMESTAMP)")
    first.execute(MIGRATIONS[0])
    first.execute("INSERT INTO schema_version VALUES (1, current_timestamp)")
    first.close()
    con = connect_to_read(old)
    try:
        assert current_version(con) == SCHEMA_VERSION
    finally:
        con.close()
    with pytest.raises(StorageError, match="no such database"):
        connect_to_read(tmp_path / "absent.duckdb")


def test_connect_to_read_shares_a_writable_connection_of_this_process(db: Path) -> None:
    writer = connect(db)
    try:
        with transaction(writer, "test"):
            writes.write_run(writer, "r1", _topology())
        reader = connect_to_read(db)
        assert [r.run_id for r in reads.list_runs(reader)] == ["r1"]
        reader.close()
    finally:
        writer.close()


def test_two_processes_read_at_once_but_a_writer_waits(db: Path) -> None:
    reader = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys
            from storage.db import connect_to_read
            con = connect_to_read({str(db)!r})
            print("reading", flush=True)
            sys.stdin.read()
        """)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    try:
        assert reader.stdout is not None and reader.stdout.readline().strip() == "reading"
        con = connect_to_read(db)
        assert reads.list_runs(con) == []
        con.close()
        with pytest.raises(DatabaseLockedError):
            connect(db)
    finally:
        reader.communicate("")


def test_threads_opening_a_new_file_at_once_all_get_the_schema(tmp_path: Path) -> None:
    # mace demo's dashboard and ingestion open a new file at the same moment
    path = tmp_path / "new.duckdb"
    start = threading.Barrier(6)
    errors: list[BaseException] = []

    def open_it() -> None:
        start.wait()
        try:
            connect(path).close()
        except BaseException as exc:  # collected: the test names the failure
            errors.append(exc)

    threads = [threading.Thread(target=open_it) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    con = connect(path)
    assert current_version(con) == SCHEMA_VERSION
    con.close()


def _last_used_block(path: Path) -> tuple[int, int]:
    """The block size and the highest block id any table uses, read from every table's
    column segments (the exact rule of the truncation check)."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        size = int(con.execute("SELECT block_size FROM pragma_database_size()").fetchall()[0][0])
        tables = con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()"
        ).fetchall()
        used = [
            con.execute(
                "SELECT max(block_id) FROM pragma_storage_info(?) WHERE persistent", [t]
            ).fetchall()[0][0]
            for (t,) in tables
        ]
    finally:
        con.close()
    return size, max(int(u) for u in used if u is not None)


def test_a_store_is_refused_exactly_when_a_used_block_lies_past_its_end(tmp_path: Path) -> None:
    """The check's quick path (the file holds its whole block count) and its exact one (each
    table's last block) agree with the rule: refused iff a used block starts past the end."""
    path = tmp_path / "store.duckdb"
    con = connect(path)
    with transaction(con, "test"):
        writes.write_run(con, "r1", _topology())
        con.execute("CREATE TABLE filler AS SELECT range AS x FROM range(600000)")
    con.execute("CHECKPOINT")
    con.execute("DROP TABLE filler")  # its blocks become free
    con.execute("CHECKPOINT")
    con.close()
    block, last = _last_used_block(path)
    data = path.read_bytes()
    end_of_last = 3 * 4096 + (last + 1) * block
    cuts = {len(data), end_of_last, end_of_last - block, len(data) // 2}
    for length in sorted(cut for cut in cuts if 0 < cut <= len(data)):
        cut = tmp_path / f"cut-{length}.duckdb"
        cut.write_bytes(data[:length])
        refused = length <= 3 * 4096 + last * block
        if refused:
            with pytest.raises(StorageError, match="truncated database file"):
                connect_to_read(cut).close()
        else:
            connect_to_read(cut).close()


def test_a_batch_of_another_runs_files_keeps_a_cached_run(db: Path) -> None:
    """A live run ingested every 2 s beside a finished one: the finished run's data version,
    and so the dashboard's cached run with its analyses, stays as it is; a batch with a file
    of the run reloads it, also when it adds no row (late rows of stored keys)."""
    from dashboard.core.data import Database, RunCache

    def stats(run_id: str, cpu: float) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "run_id": run_id, "operator": ["a", "b"], "port": 0, "interval": 0,
                "events_in": 1, "events_out": 1, "cpu_seconds": cpu,
            }
        )  # fmt: skip

    def batch(con: duckdb.DuckDBPyConnection, run_id: str, cpu: float, name: str) -> None:
        with transaction(con, "test"):
            writes.merge_operator_stats(con, stats(run_id, cpu))
            entry = writes.ManifestEntry(f"{run_id}/{name}", run_id, "executions", 1, 0.0, 2, 0)
            now = pd.Timestamp("2026-01-01").to_pydatetime()
            writes.record_batch(
                con, writes.next_batch_id(con), [entry], rows_kept=2, started_at=now,
                finished_at=now,
            )  # fmt: skip

    database = Database(db)
    with database.cursor() as con:
        with transaction(con, "test"):
            writes.write_run(con, "done", _topology())
            writes.write_run(con, "live", _topology())
        batch(con, "done", 0.1, "part-0")
        batch(con, "live", 0.1, "part-0")
    cache = RunCache(database)
    finished = cache.get("done")
    with database.cursor() as con:
        batch(con, "live", 0.2, "part-1")
    assert cache.get("done") is finished
    with database.cursor() as con:
        batch(con, "done", 0.3, "part-1")  # late rows: added to the same keys, no new row
    reloaded = cache.get("done")
    assert reloaded is not finished
    assert reloaded.operator_stats["cpu_seconds"].tolist() == pytest.approx([0.4, 0.4])
    database.close()


def test_a_migration_that_fails_names_the_file_and_the_migration(tmp_path: Path) -> None:
    """A file whose recorded schema version is behind the tables it holds (the last
    migration's table exists, its version row does not): opening it for writing stops
    with one line naming the file and the migration, and leaves the file as it was."""
    path = tmp_path / "odd.duckdb"
    connect(path).close()
    odd = duckdb.connect(str(path))
    odd.execute("DELETE FROM schema_version WHERE version = ?", [SCHEMA_VERSION])
    odd.close()
    with pytest.raises(StorageError) as caught:
        connect(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: applying migration {SCHEMA_VERSION} ")
    assert "\n" not in message
    check = duckdb.connect(str(path), read_only=True)
    try:
        assert current_version(check) == SCHEMA_VERSION - 1
    finally:
        check.close()
