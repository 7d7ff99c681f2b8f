"""A real PyFlink job rescaled once while the collector follows it, end to end.

The study's chain job runs on the local MiniCluster with the adaptive scheduler; after a
few seconds of events the test sends the resource requirements the What-if page's Apply
sends (``PUT /jobs/<id>/resource-requirements``, every vertex but the source at
parallelism 2), and the job restarts at the new parallelism. The collector writes a
second topology version with the time the job stopped; ingestion (a real Spark session,
a real DuckDB file) stores both versions, and ``mace report --json`` verifies the change
under ``changes``. Structure only: timings vary with the machine's load.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from benchmarks import flink_grid
from benchmarks.flink_rescale import rescale
from connectors.flink.collector import FlinkCollector
from connectors.flink.rest import FlinkRest
from connectors.flink.runtime import REPO, flink_venv, stop_process
from estimator.loaders import load_topology, load_version
from ingest.job import ingest_once
from mace.cli import main
from storage.db import connect
from storage.reads import placement_versions

pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.timeout(600)]
RUN = "chain-rescaled"
EVENTS = 20.0
"""Seconds of events (20 per second, far below the job's capacity)."""


def _versions(landing: Path) -> list[Path]:
    return sorted((landing / RUN).glob("topology-*.yaml"))


def _until(predicate: Callable[[], object], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.5)
    return False


def test_a_rescaled_job_gets_a_version_and_its_change_is_verified(
    spark, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if not (flink_venv() / ".installed").is_file():
        pytest.fail(f"no Flink environment at {flink_venv()}: run `make flink-env`")
    landing, run_dir = tmp_path / "landing", tmp_path / "job"
    folder = run_dir / "input-0"
    folder.mkdir(parents=True)
    process, url = flink_grid.start_job(
        flink_grid.JOBS["chain"], [folder], landing, RUN, run_dir, "chain",
        chaining=True, extra=("--adaptive",),
    )  # fmt: skip
    stop = threading.Event()
    producer: subprocess.Popen[str] | None = None
    try:
        collector = FlinkCollector(FlinkRest(url), landing, run_id=RUN, flush_every=1.0)
        following = threading.Thread(target=collector.run, args=(stop,), daemon=True)
        following.start()
        producer = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.flink_jobs.producer", "--out", str(folder),
             "--seed", "1", "--low-rate", "20", "--high-rate", "20",
             "--duration", str(EVENTS), "--start", str(time.time() + 0.5)],
            cwd=REPO, stdout=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        time.sleep(6.0)
        rescale(url, collector.job_id, 2)
        assert _until(lambda: _versions(landing), 120), "no version after the rescale"
        producer.wait(timeout=120)
        time.sleep(3.0)  # a last sample of what the job did after the events
    finally:
        stop.set()
        if producer is not None:
            producer.terminate()
        stop_process(process)
    following.join(timeout=30)
    (file,) = _versions(landing)
    first = load_topology(landing / RUN / "topology.yaml")
    valid_from = float(file.stem.removeprefix("topology-"))
    later, stopped = load_version(file, valid_from)
    (threads,) = [n for n, c in later.capacity_by_node.items() if c != first.capacity_by_node[n]]
    assert (first.capacity_by_node[threads], later.capacity_by_node[threads]) == (1.0, 2.0)
    assert stopped is not None and stopped <= valid_from  # the restart the job went through

    db = tmp_path / "mace.duckdb"
    summary = ingest_once(landing, db, spark)
    assert not summary.failed_runs
    con = connect(db, read_only=True)
    try:
        stored = placement_versions(con, RUN)
    finally:
        con.close()
    assert [v.version for v in stored] == [0, 1]
    assert [v.capacities[threads] for v in stored] == [1.0, 2.0]
    assert (stored[0].stopped_at, stored[1].stopped_at) == (None, pytest.approx(stopped))

    assert main(["report", "--db", str(db), "--run", RUN, "--json"]) == 0
    (change,) = json.loads(capsys.readouterr().out)["changes"]
    assert change["version"] == 1 and change["moved"] == []
    assert change["rescaled"] == [{"node": threads, "from": 1.0, "to": 2.0}]
