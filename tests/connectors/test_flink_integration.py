"""A real PyFlink job on the local MiniCluster, end to end: ``mace demo --engine flink``.

The demo starts the job (in .venv-flink, made by `make test`), feeds it On-Off clicks,
collects its counters over REST, ingests with Spark and prints the report. Timings
vary a lot with machine load (the job takes 15-50 s to start), so this asserts
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

from connectors.flink.demo_job import BUNDLE_MS, BUNDLE_SIZE
from connectors.flink.local import local_cluster_config
from connectors.flink.runtime import flink_venv
from estimator.loaders import load_topology

pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.timeout(600)]
ENRICH = "filter-enrich-_stream_key_by_map_operator"
COUNT = "count-click-counts-probe"
VIEWS = "views-filter-views-probe"
DURATION = 30
"""Seconds of clicks once the job runs. The demo's seed 0 sends 10 s at the low rate, a
burst, 8 s low again, then the next burst: calm seconds before and after a burst for
the pipeline delay's calibration, and thousands of clicks to count."""


@pytest.fixture(scope="module")
def flink_demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    if not (flink_venv() / ".installed").is_file():
        pytest.fail(
            f"no Flink environment at {flink_venv()}: run `make flink-env` (make test does)"
        )
    from connectors.flink.runtime import free_port

    workdir = tmp_path_factory.mktemp("flink-demo")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mace",
            "demo",
            "--engine",
            "flink",
            "--workdir",
            str(workdir),
            "--duration",
            str(DURATION),
            "--port",
            str(free_port()),
        ],
        capture_output=True,
        text=True,
        timeout=540,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return workdir, done.stdout


def test_discovered_topology_is_the_jobs_graph(flink_demo: tuple[Path, str]) -> None:
    """The demo job runs with chaining on, as in production: its chained operators,
    one query per sink, each vertex's threads inside the TaskManager's cores."""
    workdir, _ = flink_demo
    (run_dir,) = [p for p in (workdir / "landing").iterdir() if p.is_dir()]
    topology = load_topology(run_dir / "topology.yaml")
    assert topology.source_ids == ("clicks",)
    inputs = {o.id: o.inputs for o in topology.operators}
    assert inputs == {
        "parse": ("clicks",),
        ENRICH: ("parse",),
        VIEWS: ("parse",),
        "views": (VIEWS,),
        COUNT: (ENRICH,),
        "click-counts": (COUNT,),
    }
    assert set(topology.queries) == {"click-counts", "views"}
    assert "parse" in topology.operators_of_query("click-counts")
    assert "parse" in topology.operators_of_query("views")
    hosts = {n.host for n in topology.nodes if n.host is not None}
    assert len(hosts) == 1  # one TaskManager on the MiniCluster
    (tm,) = hosts
    assert topology.capacity_by_node[tm] == os.cpu_count()
    taskmanager = {n.id: n for n in topology.nodes}[tm]
    assert taskmanager.slots == int(local_cluster_config(0)["taskmanager.numberOfTaskSlots"])
    assert taskmanager.python_workers == "shared"  # the PyFlink program's MiniCluster
    # the job's Python bundles, read from its configuration (the demo sets both)
    assert (taskmanager.bundle_time, taskmanager.bundle_size) == (
        BUNDLE_MS / 1000,
        BUNDLE_SIZE,
    )


def test_each_sample_is_one_fetch_of_flinks_metric_cache(flink_demo: tuple[Path, str]) -> None:
    """The collector waits for the metric fetch its poll started, so every vertex of a
    sample comes from that one fetch: no operator has read more than its inputs had
    sent, and each poll is one time stamp, later than the last."""
    import pandas as pd

    workdir, _ = flink_demo
    (run_dir,) = [p for p in (workdir / "landing").iterdir() if p.is_dir()]
    topology = load_topology(run_dir / "topology.yaml")
    samples = pd.concat(pd.read_parquet(f) for f in sorted((run_dir / "samples").glob("*.parquet")))
    totals = samples.groupby(["time", "operator"])[["records_in", "records_out"]].sum()
    times = samples["time"].drop_duplicates()
    assert times.is_monotonic_increasing and len(times) > 10
    for time_, snapshot in totals.groupby(level="time"):
        counts = snapshot.droplevel("time")
        for operator in topology.operators:
            sent = sum(counts.loc[u, "records_out"] for u in operator.inputs)
            assert counts.loc[operator.id, "records_in"] <= sent, (time_, operator.id)


def test_counts_and_latency_arrive_and_report_runs(flink_demo: tuple[Path, str]) -> None:
    workdir, stdout = flink_demo
    generated = sum(
        len(f.read_text().splitlines()) for f in (workdir / "flink" / "input").glob("*.csv")
    )
    con = duckdb.connect(str(workdir / "mace.duckdb"), read_only=True)
    try:
        (counted,) = con.execute("SELECT sum(events) FROM source_arrivals").fetchall()[0]
        (outputs,) = con.execute("SELECT sum(outputs) FROM latency_stats").fetchall()[0]
        (parsed,) = con.execute(
            "SELECT sum(events_in) FROM operator_stats WHERE operator = ?", ["parse"]
        ).fetchall()[0]
        # the Python worker's CPU, read from /proc beside the local cluster, charged to
        # the Python operators' threads
        (work,) = con.execute("SELECT sum(work_seconds) FROM operator_stats").fetchall()[0]
    finally:
        con.close()
    assert generated > 100
    # the last sample may miss what arrived after it; nothing is counted twice
    assert 0.8 * generated <= counted <= generated
    assert 0.8 * generated <= parsed <= generated
    assert outputs > 0.3 * generated  # clicks are ~70% of the events
    # some work, and no more CPU than the machine's cores give in the 60 s demo and its drain
    assert work is not None and 0 < work < (os.cpu_count() or 1) * 120
    assert "click-counts" in stdout and "views" in stdout
    report = subprocess.run(
        [sys.executable, "-m", "mace", "report", "--db", str(workdir / "mace.duckdb"), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert report.returncode == 0, report.stderr
    document = json.loads(report.stdout)
    for query in ("click-counts", "views"):
        assert document["queries"][query]["measured_wc"] > 0
        # the pipeline's fixed delay, calibrated on calm subintervals
        delay = document["queries"][query]["pipeline_delay"]
        assert 0 < delay["low"] <= delay["typical"] <= delay["high"]
    # every operator on a thread says how its cost was read and whether busy time is work
    threads = document["threads"]
    assert "parse" in threads
    for thread in threads.values():
        assert thread["cost"] > 0
        assert thread["reading"] in (
            "queued",
            "saturated",
            "busy-time line",
            "least busy per record",
            "busy time per record",
            "worker time per record",
        )
        assert isinstance(thread["busy_time_is_work"], bool)
        assert isinstance(thread["predicted_counts_fixed_time"], bool)
    assert threads["parse"]["records_a_second"] > 0
    # the demo's Python operators share the interpreter of the program's process, which
    # serves them on the local cluster: one worker node for the TaskManager
    workers = {t["python_worker"] for t in threads.values()} - {None}
    assert len(workers) == 1 and threads["parse"]["python_worker"] in workers
    # their threads run bundles as the job configured them, and the estimate plays them
    cycles = document["bundle_cycles"]
    assert cycles and all(
        c["bundle_time"] == BUNDLE_MS / 1000 and c["bundle_size"] == BUNDLE_SIZE
        for c in cycles.values()
    )
    assert set(document["bundle_rise"]) == {"click-counts", "views"}
