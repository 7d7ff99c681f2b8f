"""The burst-aware and per-origin estimates of an ingested run: a simulated run is
written to a landing folder (four Parquet parts per record set, so profile cells merge
across files), ingested by the real Spark job into DuckDB and read back; its estimates
equal the ones computed in memory from the simulator's raw executions, and ``mace
report --estimator burst|origin`` reports them."""

from __future__ import annotations

import json
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest
from pyspark.sql import SparkSession

from dashboard.data import load_run
from dashboard.report import estimated_analysis
from estimator.burst import SUB_BUCKETS, sub_bucket_work
from estimator.origins import origin_latency
from estimator.pathaware import Detail
from estimator.runs import analyse
from ingest.job import ingest_once
from mace.cli import main
from simulator.run import simulate
from simulator.telemetry import write_run
from simulator.workloads import workload
from storage.db import connect

pytestmark = pytest.mark.spark


def test_burst_estimate_from_the_store_equals_the_one_from_raw_executions(
    tmp_path: Path, spark: SparkSession, capsys: pytest.CaptureFixture[str]
) -> None:
    topology, times = workload("clickstream", nodes=3, duration=20.0, seed=3)
    result = simulate(topology, times, "stimulus", np.random.default_rng(3))
    landing, db = tmp_path / "landing", tmp_path / "mace.duckdb"
    write_run(result.telemetry, topology, landing, "bursty")
    assert ingest_once(landing, db, spark).rows_quarantined == 0
    con = connect(db, read_only=True)
    try:
        # the profile is read on first use, through a connection of its own
        run = load_run(con, "bursty", lambda: closing(connect(db, read_only=True)))
    finally:
        con.close()

    executions = result.telemetry.frames()["executions"]
    fine = sub_bucket_work(
        executions["node"].map({n: k for k, n in enumerate(topology.node_ids)}).to_numpy(),
        executions["stimulus_time"].to_numpy() - topology.origin,
        executions["cpu_seconds"].to_numpy(),
        len(topology.node_ids),
        topology.subinterval,
        SUB_BUCKETS,
        run.intervals,
    )
    assert run.node_profile is not None
    np.testing.assert_allclose(run.node_profile, fine, atol=1e-9)
    np.testing.assert_allclose(run.node_dlts, fine.sum(axis=2), atol=1e-9)
    expected = analyse(
        topology, fine.sum(axis=2), [topology.placement], (0,), "burst", Detail(node_fine=fine)
    )
    stored = estimated_analysis(run, "burst")
    np.testing.assert_allclose(stored.estimate, expected.estimate, atol=1e-9)
    for query, series in expected.per_query.items():
        np.testing.assert_allclose(stored.per_query[query], series, atol=1e-9)
    mace = estimated_analysis(run, "mace")
    assert stored.estimate.max() > mace.estimate.max() + 0.05  # the profile matters here

    args = ["report", "--db", str(db), "--run", "bursty", "--estimator", "burst", "--json"]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["system"]["estimated_wc"] == pytest.approx(stored.estimate.max(), abs=1e-9)


def test_per_origin_estimate_from_the_store_equals_the_one_from_raw_executions(
    tmp_path: Path, spark: SparkSession, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--estimator origin`` on an ingested run reads the stored profile and the CPU of
    every operator port: the same replay as from the simulator's raw executions."""
    topology, times = workload("clickstream", nodes=3, duration=20.0, seed=3)
    result = simulate(topology, times, "stimulus", np.random.default_rng(3))
    landing, db = tmp_path / "landing", tmp_path / "mace.duckdb"
    write_run(result.telemetry, topology, landing, "bursty")
    assert ingest_once(landing, db, spark).rows_quarantined == 0
    con = connect(db, read_only=True)
    try:
        run = load_run(con, "bursty", lambda: closing(connect(db, read_only=True)))
    finally:
        con.close()
    executions = result.telemetry.frames()["executions"]
    relative = executions["stimulus_time"].to_numpy() - topology.origin
    fine = sub_bucket_work(
        executions["node"].map({n: k for k, n in enumerate(topology.node_ids)}).to_numpy(),
        relative,
        executions["cpu_seconds"].to_numpy(),
        len(topology.node_ids),
        topology.subinterval,
        SUB_BUCKETS,
        run.intervals,
    )
    rows = [
        topology.input_offsets[topology.operator_index[o]] + p
        for o, p in zip(executions["operator"], executions["port"], strict=True)
    ]
    port = sub_bucket_work(
        np.array(rows),
        relative,
        executions["cpu_seconds"].to_numpy(),
        topology.input_offsets[-1],
        topology.subinterval,
        1,
        run.intervals,
    )[:, :, 0]
    expected = origin_latency(topology, port, fine, SUB_BUCKETS)
    stored = estimated_analysis(run, "origin")
    for row, query in enumerate(topology.queries):
        np.testing.assert_allclose(stored.per_query[query], expected[row], atol=1e-9)
    np.testing.assert_allclose(stored.estimate, expected.max(axis=0), atol=1e-9)
    args = ["report", "--db", str(db), "--run", "bursty", "--estimator", "origin", "--json"]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["system"]["estimated_wc"] == pytest.approx(stored.estimate.max(), abs=1e-9)


def test_a_run_ingested_on_the_old_grid_stays_on_it(
    tmp_path: Path, spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run whose profile was first ingested at k = 8 (before k = 32) keeps k = 8 when its
    later files arrive: the late cells merge on the stored grid, and the run reads back
    as nodes x D x 8 equal to the binning of all its executions at 8."""
    import ingest.job

    topology, times = workload("clickstream", nodes=3, duration=20.0, seed=3)
    result = simulate(topology, times, "stimulus", np.random.default_rng(3))
    landing, db = tmp_path / "landing", tmp_path / "mace.duckdb"
    run_dir = write_run(result.telemetry, topology, landing, "old")
    late = sorted((run_dir / "executions").iterdir())[2:]
    aside = tmp_path / "aside"
    aside.mkdir()
    for part in late:
        part.rename(aside / part.name)
    monkeypatch.setattr(ingest.job, "SUB_BUCKETS", 8)  # the grid before this change
    ingest_once(landing, db, spark)
    monkeypatch.undo()
    assert SUB_BUCKETS != 8
    for part in late:
        (aside / part.name).rename(run_dir / "executions" / part.name)
    assert ingest_once(landing, db, spark).files == len(late)
    con = connect(db, read_only=True)
    try:
        run = load_run(con, "old")
        profile = run.node_profile
    finally:
        con.close()
    executions = result.telemetry.frames()["executions"]
    expected = sub_bucket_work(
        executions["node"].map({n: k for k, n in enumerate(topology.node_ids)}).to_numpy(),
        executions["stimulus_time"].to_numpy() - topology.origin,
        executions["cpu_seconds"].to_numpy(),
        len(topology.node_ids),
        topology.subinterval,
        8,
        run.intervals,
    )
    assert run.info.profile_sub_buckets == 8
    assert profile is not None
    np.testing.assert_allclose(profile, expected, atol=1e-9)
