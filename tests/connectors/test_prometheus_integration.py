"""A real Prometheus server (Debian's ``prometheus``) holding a Flink job's history,
backfilled by ``promtool`` (deterministic): ``mace collect prometheus`` reads a past
window, ``mace ingest`` (in this process, on the test session's Spark) stores it and
``mace report --json`` reports it. The graph comes from a server answering like Flink's
REST API with answers recorded on a real job."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from pyspark.sql import SparkSession

from connectors.flink.graph import job_graph, topology_document
from estimator.loaders import load_topology
from mace.cli import main
from storage.db import connect_to_read
from storage.reads import run_topology
from tests.connectors.flink_fixture import FakeFlink, recorded, serve
from tests.connectors.prometheus_fixture import (
    Scenario,
    cumulative,
    openmetrics,
    prometheus_missing,
    vertices,
)
from tests.connectors.prometheus_fixture import serve as serve_prometheus

pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.timeout(300)]
ROOT = Path(__file__).resolve().parents[2]
SECONDS = 90


def _mace(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mace", *args],
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


@pytest.fixture(scope="module")
def collected(
    tmp_path_factory: pytest.TempPathFactory, spark: SparkSession
) -> Iterator[tuple[Path, Scenario, str]]:
    why = prometheus_missing()
    if why is not None:
        pytest.fail(f"no real Prometheus: {why}")
    work = tmp_path_factory.mktemp("prom")
    # the job started three hours ago; its history is one sample per second
    start = float(math.floor(time.time() / 60) * 60 - 3 * 3600)
    scenario = Scenario(start=start, seconds=SECONDS)
    fake = FakeFlink()
    fake.job = {**fake.job, "start-time": int((start - 2) * 1000)}
    with serve_prometheus(openmetrics(scenario), work) as prom_url, serve(fake) as rest_url:
        done = _mace(
            "collect", "prometheus", "--url", prom_url, "--job", "clickstream",
            "--out", str(work / "landing"), "--rest", rest_url,
            "--start", f"{start:.0f}", "--end", f"{start + SECONDS - 1:.0f}",
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        # a job Prometheus does not know: one line, exit 2, nothing written
        unknown = _mace(
            "collect", "prometheus", "--url", prom_url, "--job", "clickstream",
            "--out", str(work / "other"), "--topology", str(work / "landing" /
            "prom-clickstream" / "topology.yaml"),
            "--start", f"{start - 7200:.0f}", "--end", f"{start - 3600:.0f}",
        )  # fmt: skip
        assert unknown.returncode == 2
        assert unknown.stderr.count("\n") == 1 and "no counters of job" in unknown.stderr
        assert not (work / "other").exists()  # not even a topology
    # in this process, on the test session's Spark: one JVM for the suite, not one more
    assert main(["ingest", str(work / "landing"), "--db", str(work / "mace.duckdb"), "--once"]) == 0
    yield work, scenario, done.stdout


def test_the_topology_is_the_jobs_graph(collected: tuple[Path, Scenario, str]) -> None:
    work, _, _ = collected
    graph = job_graph(
        recorded("job"), recorded("plan"), recorded("vertices"), recorded("taskmanagers")
    )
    expected = topology_document(graph)
    written = load_topology(work / "landing" / "prom-clickstream" / "topology.yaml")
    con = connect_to_read(work / "mace.duckdb")
    try:
        stored = run_topology(con, "prom-clickstream")
    finally:
        con.close()
    for topology in (written, stored):
        assert list(topology.source_ids) == [s["id"] for s in expected["sources"]]
        assert {o.id: list(o.inputs) for o in topology.operators} == {
            o["id"]: o["inputs"] for o in expected["operators"]
        }


def test_counts_match_the_history_and_the_report_runs(
    collected: tuple[Path, Scenario, str],
) -> None:
    work, scenario, stdout = collected
    assert f"{8 * SECONDS} sample rows" in stdout
    model = cumulative(scenario)
    ids = {vid: name for vid, name, _ in vertices()}
    con = duckdb.connect(str(work / "mace.duckdb"), read_only=True)
    try:
        (arrived,) = con.execute("SELECT sum(events) FROM source_arrivals").fetchone() or (0,)
        per_operator = dict(
            con.execute(
                "SELECT operator, sum(events_in) FROM operator_stats GROUP BY operator"
            ).fetchall()
        )
    finally:
        con.close()
    source = next(vid for vid, name in ids.items() if name.startswith("Source"))
    # the first sample of each counter is its baseline; every later record is counted once
    assert arrived == model[source][-1][1] - model[source][0][1]
    graph = job_graph(
        recorded("job"), recorded("plan"), recorded("vertices"), recorded("taskmanagers")
    )
    for vid, topology_id in graph.ids.items():
        if vid != source:
            assert per_operator[topology_id] == model[vid][-1][0] - model[vid][0][0]
    report = _mace("report", "--db", str(work / "mace.duckdb"), "--json")
    assert report.returncode == 0, report.stderr
    document = json.loads(report.stdout)
    assert document["run"] == "prom-clickstream"
    (query,) = {o["query"] for o in topology_document(graph)["operators"]}
    entry = document["queries"][query]
    assert entry["estimated_wc"] is not None and entry["estimated_wc"] >= 0
    assert entry["predicted_wc"] is not None
