"""The real stack end to end: ``mace demo --engine flink-sql``.

A Flink SQL job on the local MiniCluster (in .venv-flink, made by `make test`) with
Flink's Prometheus reporter, a real Prometheus server scraping it, ``mace collect
prometheus --follow``, the job's own ``outputs/`` through its filesystem sink,
ingestion with Spark and the report. Timings vary with machine load, so this asserts
structure and loose ratios, never timings.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from connectors.flink.runtime import flink_venv, free_port
from connectors.prometheus.server import prometheus_missing
from estimator.loaders import load_topology

pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.timeout(600)]
REPO = Path(__file__).resolve().parents[2]
DURATION = 20
"""Seconds of clicks once the job runs: the demo's seed 0 sends 10 s at the low rate, then
a burst (thousands of clicks); the assertions need clicks through the join, not length."""


@pytest.fixture(scope="module")
def sql_demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    if not (flink_venv() / ".installed").is_file():
        pytest.fail(
            f"no Flink environment at {flink_venv()}: run `make flink-env` (make test does)"
        )
    why = prometheus_missing()
    if why is not None:
        pytest.fail(f"no real Prometheus: {why}")
    workdir = tmp_path_factory.mktemp("flink-sql-demo")
    argv = ["demo", "--engine", "flink-sql", "--workdir", str(workdir)]
    argv += ["--duration", str(DURATION)]
    done = subprocess.run(
        [sys.executable, "-m", "mace", *argv, "--port", str(free_port())],
        capture_output=True,
        text=True,
        timeout=540,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return workdir, done.stdout


def test_the_collected_topology_is_the_sql_jobs_graph(sql_demo: tuple[Path, str]) -> None:
    """Read from Flink's REST API through the Prometheus collector: the chained source
    vertex ``Source: clicks[1] -> Calc[2]`` yields the source and the filter, the join
    has two inputs, and the filesystem sink's last operator is the one query."""
    workdir, _ = sql_demo
    (run_dir,) = [p for p in (workdir / "landing").iterdir() if p.is_dir()]
    topology = load_topology(run_dir / "topology.yaml")
    assert set(topology.source_ids) == {"clicks-1", "categories-4"}
    inputs = {o.id: o.inputs for o in topology.operators}
    assert inputs["Calc-2"] == ("clicks-1",)
    assert inputs["Join-6"] == ("Calc-2", "categories-4")
    assert topology.queries == ("end",)


def test_arrivals_outputs_and_measured_latency_reach_the_report(
    sql_demo: tuple[Path, str],
) -> None:
    workdir, stdout = sql_demo
    generated = sum(
        len(f.read_text().splitlines()) for f in (workdir / "flink-sql" / "input").glob("*.csv")
    )
    con = duckdb.connect(str(workdir / "mace.duckdb"), read_only=True)
    try:
        per_source = "SELECT source, sum(events) FROM source_arrivals GROUP BY source"
        arrivals = dict(con.execute(per_source).fetchall())
        (outputs,) = con.execute("SELECT sum(outputs) FROM latency_stats").fetchall()[0]
        (quarantined,) = con.execute(
            "SELECT count(*) FROM quarantine WHERE record_set = 'outputs'"
        ).fetchall()[0]
    finally:
        con.close()
    assert generated > 100
    # the chained source has the records it read as arrivals (the last scrape may miss
    # what arrived after it; nothing is counted twice)
    assert 0.8 * generated <= arrivals["clicks-1"] <= generated
    assert outputs > 0 and quarantined == 0
    assert "end" in stdout and "measured" in stdout
    report = subprocess.run(
        [sys.executable, "-m", "mace", "report", "--db", str(workdir / "mace.duckdb"), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert report.returncode == 0, report.stderr
    query = json.loads(report.stdout)["queries"]["end"]
    assert query["measured_wc"] > 0
    assert query["estimated_wc"] >= 0 and query["predicted_wc"] >= 0
