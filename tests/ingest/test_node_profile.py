"""The burst-aware and per-origin estimates of an ingested run: a simulated run is
written to a landing folder (four Parquet parts per record set, so profile cells merge
across files), ingested by the real Spark job into DuckDB once for the module and read
back; its estimates equal the ones computed in memory from the simulator's raw
executions, its predictions the ones computed by hand from the raw arrivals per
sub-bucket, and ``mace report --estimator burst|origin`` reports them."""

from __future__ import annotations

import dataclasses
import json
from contextlib import closing
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest
from pyspark.sql import SparkSession

from dashboard.core.data import RunData, load_run
from dashboard.core.report import estimated_analysis, predicted_analysis, refit_analyses
from estimator.burst import SUB_BUCKETS, sub_bucket_work
from estimator.evaluator import estimate
from estimator.fitting import fit_operator_stats, training_window
from estimator.model import Topology
from estimator.origins import origin_latency
from estimator.pathaware import Detail
from estimator.propagation import build_load_model, port_load
from estimator.runs import analyse
from ingest.job import ingest_once
from mace.cli import main
from simulator.run import Result, simulate
from simulator.telemetry import write_run
from simulator.workloads import workload
from storage.db import connect

pytestmark = pytest.mark.spark


class Ingested(NamedTuple):
    topology: Topology
    result: Result
    db: Path


@pytest.fixture(scope="module")
def bursty(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Ingested:
    """A 3-node clickstream run with On-Off bursts, simulated and ingested once."""
    topology, times = workload("clickstream", nodes=3, duration=20.0, seed=3)
    result = simulate(topology, times, "stimulus", np.random.default_rng(3))
    folder = tmp_path_factory.mktemp("bursty")
    landing, db = folder / "landing", folder / "mace.duckdb"
    write_run(result.telemetry, topology, landing, "bursty")
    assert ingest_once(landing, db, spark).rows_quarantined == 0
    return Ingested(topology, result, db)


def _load(db: Path) -> RunData:
    con = connect(db, read_only=True)
    try:
        # the profiles are read on first use, through a connection of their own
        return load_run(con, "bursty", lambda: closing(connect(db, read_only=True)))
    finally:
        con.close()


def _node_work(topology: Topology, result: Result, sub_buckets: int, intervals: int) -> np.ndarray:
    """The simulator's raw executions binned per node, subinterval and sub-bucket."""
    executions = result.telemetry.frames()["executions"]
    return sub_bucket_work(
        executions["node"].map({n: k for k, n in enumerate(topology.node_ids)}).to_numpy(),
        executions["stimulus_time"].to_numpy() - topology.origin,
        executions["cpu_seconds"].to_numpy(),
        len(topology.node_ids),
        topology.subinterval,
        sub_buckets,
        intervals,
    )


def test_burst_estimate_from_the_store_equals_the_one_from_raw_executions(
    bursty: Ingested, capsys: pytest.CaptureFixture[str]
) -> None:
    topology, result, db = bursty
    run = _load(db)

    fine = _node_work(topology, result, SUB_BUCKETS, run.intervals)
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
    bursty: Ingested, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--estimator origin`` on an ingested run reads the stored arrivals per sub-bucket
    and the CPU of every operator port: the same replay as from the simulator's raw
    arrivals and executions."""
    topology, result, db = bursty
    run = _load(db)
    frames = result.telemetry.frames()
    executions, arrivals = frames["executions"], frames["arrivals"]
    relative = executions["stimulus_time"].to_numpy() - topology.origin
    events = sub_bucket_work(
        arrivals["source"].map({s: j for j, s in enumerate(topology.source_ids)}).to_numpy(),
        arrivals["stimulus_time"].to_numpy() - topology.origin,
        np.ones(len(arrivals)),
        len(topology.source_ids),
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
    expected = origin_latency(topology, port, None, SUB_BUCKETS, source_fine=events)
    stored = estimated_analysis(run, "origin")
    for row, query in enumerate(topology.queries):
        np.testing.assert_allclose(stored.per_query[query], expected[row], atol=1e-9)
    np.testing.assert_allclose(stored.estimate, expected.max(axis=0), atol=1e-9)
    args = ["report", "--db", str(db), "--run", "bursty", "--estimator", "origin", "--json"]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["system"]["estimated_wc"] == pytest.approx(stored.estimate.max(), abs=1e-9)


def test_predictions_push_the_stored_arrival_profile_through_the_fitted_model(
    bursty: Ingested, capsys: pytest.CaptureFixture[str]
) -> None:
    """The product's *predicted* burst-aware and per-origin figures equal the held-out
    benchmark's computation by hand from the raw telemetry: costs and selectivities fitted
    on the first 10% of the intervals, the source events per sub-bucket evaluated by the
    fitted model at w / k (Mace's DLTS at the finer width) as each node's profile for
    burst-aware, the source events per sub-bucket themselves for per-origin, the model's
    port work per subinterval. Without the stored arrival profile the prediction
    spreads each subinterval evenly, and differs."""
    topology, result, db = bursty
    run = _load(db)
    frames = result.telemetry.frames()
    w, k, n = topology.subinterval, SUB_BUCKETS, len(topology.node_ids)
    intervals, sources = run.intervals, len(topology.source_ids)
    arrivals = frames["arrivals"]
    fine_counts = sub_bucket_work(
        arrivals["source"].map({s: j for j, s in enumerate(topology.source_ids)}).to_numpy(),
        arrivals["stimulus_time"].to_numpy() - topology.origin,
        np.ones(len(arrivals)),
        sources,
        w,
        k,
        intervals,
    )
    assert run.source_profile is not None
    np.testing.assert_array_equal(run.source_profile, fine_counts)
    np.testing.assert_array_equal(run.arrivals.for_topology(topology), fine_counts.sum(axis=2))
    executions = frames["executions"]
    stats = (
        executions.assign(
            interval=np.floor((executions["stimulus_time"] - topology.origin) / w).astype(int),
            events_in=1,
        )
        .groupby(["operator", "port", "interval"], as_index=False)
        .agg(
            events_in=("events_in", "sum"),
            events_out=("outputs", "sum"),
            cpu_seconds=("cpu_seconds", "sum"),
        )
    )
    fitted = fit_operator_stats(topology, stats, training_window(intervals, 0.1)).topology
    counts = fine_counts.sum(axis=2)
    loads = estimate(fitted, counts).dlts[:n]
    at_sub_buckets = estimate(
        fitted.with_changes(subinterval=w / k), fine_counts.reshape(sources, intervals * k)
    )
    node_fine = at_sub_buckets.dlts[:n].reshape(n, intervals, k)
    ports = port_load(fitted, build_load_model(fitted, counts))
    details = {
        "burst": Detail(node_fine=node_fine, port_work=ports),
        "origin": Detail(port_work=ports, source_fine=fine_counts),
    }
    for name, detail in details.items():
        expected = analyse(topology, loads, [topology.placement], (0,), name, detail)
        predicted = predicted_analysis(run, 0.1, name)
        np.testing.assert_allclose(predicted.estimate, expected.estimate, atol=1e-9)
        np.testing.assert_allclose(predicted.upper, expected.upper, atol=1e-9)
        for query, series in expected.per_query.items():
            np.testing.assert_allclose(predicted.per_query[query], series, atol=1e-9)
        even = predicted_analysis(
            dataclasses.replace(run, arrival_profile=None, _derived={}), 0.1, name
        )
        assert abs(even.estimate.max() - predicted.estimate.max()) > 0.05, name

    # the Overview's refit: measured (profile included) before the window's start, the
    # refit model's prediction (from the arrival profile) from it on; both estimators
    # are causal, so before the start the refit's figure is the estimated one
    start = intervals // 2
    for name in ("burst", "origin"):
        whole = refit_analyses(run, name, (0, intervals)).predicted
        again = predicted_analysis(run, estimator=name, training=(0, intervals))
        np.testing.assert_allclose(whole.estimate, again.estimate, atol=1e-9)
        spliced = refit_analyses(run, name, (start, intervals)).predicted
        estimated = estimated_analysis(run, name)
        np.testing.assert_allclose(spliced.estimate[:start], estimated.estimate[:start], atol=1e-9)

    args = ["report", "--db", str(db), "--run", "bursty", "--estimator", "burst", "--json"]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    burst = predicted_analysis(run, 0.1, "burst")
    assert report["system"]["predicted_wc"] == pytest.approx(burst.estimate.max(), abs=1e-9)


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
    expected = _node_work(topology, result, 8, run.intervals)
    assert run.info.profile_sub_buckets == 8
    assert profile is not None
    np.testing.assert_allclose(profile, expected, atol=1e-9)


def test_the_default_report_is_per_origin_within_two_percent_and_says_why(
    bursty: Ingested, capsys: pytest.CaptureFixture[str]
) -> None:
    """``mace report --json`` with default options picks per-origin on this simulated
    3-node run (the port work and the profiles are stored, the replay fits the budget),
    names it with the reason, and its worst case is within 2% of the measured one. With a
    budget the run does not fit, the same report falls back to burst-aware and says why."""
    from dashboard.core.estimators import report_with_estimator
    from mace.report_command import load_run_data

    _, _, db = bursty
    assert main(["report", "--db", str(db), "--run", "bursty", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    used = report["estimator_used"]
    assert used["name"] == "origin"
    assert used["label"] == "per-origin"
    assert used["reason"].startswith("auto: the most accurate estimate: per-origin")
    assert f"the sources' arrival profile at w/{SUB_BUCKETS}" in used["reason"]
    system = report["system"]
    assert system["estimated_wc"] == pytest.approx(system["measured_wc"], rel=0.02)
    assert main(["report", "--db", str(db), "--run", "bursty"]) == 0
    assert "estimated and predicted by per-origin (auto: " in capsys.readouterr().out

    run, goals = load_run_data(db, "bursty")
    small = report_with_estimator(run, goals, 0.1, "auto", time_budget_s=1e-6)
    assert small["estimator_used"]["name"] == "burst"
    assert "per-origin would take about" in small["estimator_used"]["reason"]
    assert (
        "(budget 1e-06 s); burst-aware from the node profile instead"
        in (small["estimator_used"]["reason"])
    )
    burst = estimated_analysis(run, "burst")
    assert small["system"]["estimated_wc"] == pytest.approx(burst.estimate.max(), abs=1e-9)
