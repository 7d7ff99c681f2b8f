"""Ingestion on a real Spark standalone cluster: a master and two workers (one core, 1 GB
each) on 127.0.0.1, started from the installed pyspark's own classes (ingest.standalone).

``mace ingest --master spark://...`` must store exactly what ``--master local[2]`` stores
for the same landing folder; ``mace ingest --every`` keeps one application across
batches, survives the cluster going away (one line, back-off) and resumes when a new
cluster comes up on the same port. Both commands run in subprocesses: this process may
already hold the test session's local SparkContext, and a JVM holds one at a time.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from ingest.standalone import LocalCluster
from storage.db import connect

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
TABLES = {
    "source_arrivals": ["run_id", "source", "interval"],
    "operator_stats": ["run_id", "operator", "port", "interval"],
    "node_busy": ["run_id", "node", "interval"],
    "latency_stats": ["run_id", "query", "interval"],
}


def _env() -> dict[str, str]:
    """This interpreter and this source tree for the driver, its Python workers and the
    cluster's executors; a small driver heap (the machine is shared)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["PYSPARK_PYTHON"] = sys.executable
    env["MACE_SPARK_DRIVER_MEMORY"] = "1g"
    return env


def _mace(*args: str | Path) -> list[str]:
    return [sys.executable, "-m", "mace", *map(str, args)]


def _simulate(out: Path, seed: int) -> None:
    subprocess.run(
        [
            *_mace("simulate", "stocks", "--out", out, "--duration", "10", "--files", "2"),
            "--seed",
            str(seed),
        ],
        check=True,
        capture_output=True,
        env=_env(),
        timeout=300,
    )


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """Master + two workers; every process group is killed at teardown, even on failure."""
    with LocalCluster(workers=2, cores=1, memory="1g", env=_env()) as running:
        yield running


@pytest.fixture(scope="module")
def landing(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("cluster") / "landing"
    _simulate(folder, seed=0)
    return folder


def _table(db: Path, table: str) -> pd.DataFrame:
    con = connect(db)
    try:
        frame = con.execute(f"SELECT * FROM {table}").df()  # test-only read of a known table
    finally:
        con.close()
    return frame.sort_values(TABLES[table]).reset_index(drop=True)


def test_cluster_ingest_stores_what_local_ingest_stores(
    cluster: LocalCluster, landing: Path, tmp_path: Path
) -> None:
    outcomes = {}
    for name, master in (("local", "local[2]"), ("cluster", cluster.url)):
        done = subprocess.run(
            _mace("ingest", landing, "--db", tmp_path / f"{name}.duckdb", "--master", master),
            capture_output=True,
            text=True,
            env=_env(),
            timeout=600,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        outcomes[name] = done.stdout
    assert "0 quarantined" in outcomes["cluster"]
    # the numbers of the summary line (files, rows read/kept/quarantined) agree
    assert outcomes["local"].split("(")[0] == outcomes["cluster"].split("(")[0]
    for table in TABLES:
        local = _table(tmp_path / "local.duckdb", table)
        clustered = _table(tmp_path / "cluster.duckdb", table)
        assert len(local) > 0
        # sums of doubles may be added in another order on executors: equal to 1e-12
        pd.testing.assert_frame_equal(local, clustered, check_exact=False, rtol=1e-12)
    apps = _apps(cluster, "completedapps")
    assert [(a["name"], a["state"], a["cores"]) for a in apps] == [("mace-ingest", "FINISHED", 2)]


def _apps(cluster: LocalCluster, key: str) -> list[dict[str, object]]:
    """The master's active or completed applications."""
    apps = cluster.status()[key]
    assert isinstance(apps, list)
    return apps


def _wait_for(log: Path, text: str, process: subprocess.Popen[bytes], timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        content = log.read_text(errors="replace")
        if text in content:
            return content
        assert process.poll() is None, f"the scheduler died:\n{content[-3000:]}"
        time.sleep(0.5)
    raise AssertionError(f"no {text!r} in {timeout:g} s:\n{log.read_text()[-3000:]}")


def test_scheduled_ingest_keeps_one_session_and_outlives_the_cluster(
    cluster: LocalCluster, landing: Path, tmp_path: Path
) -> None:
    shutil.copytree(landing, tmp_path / "landing")
    landing = tmp_path / "landing"
    finished = len(_apps(cluster, "completedapps"))
    _simulate(tmp_path / "later", seed=1)
    log = tmp_path / "scheduler.log"
    db = tmp_path / "every.duckdb"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            _mace("ingest", landing, "--db", db, "--every", "1", "--master", cluster.url),
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=_env(),
            start_new_session=True,  # the driver JVM is in its group: killed with it
        )
    try:
        _wait_for(log, "batch 1:", process, timeout=300)
        time.sleep(3)  # a few passes with nothing new: still the same application
        assert [a["name"] for a in _apps(cluster, "activeapps")] == ["mace-ingest"]
        assert len(_apps(cluster, "completedapps")) == finished

        port = cluster.port
        cluster.stop()  # the whole cluster goes away while the scheduler waits
        shutil.move(tmp_path / "later" / "stocks-3n-stimulus-seed1", landing)
        text = _wait_for(log, "(attempt 2 failed)", process, timeout=180)
        paused = [line for line in text.splitlines() if "ingestion paused:" in line]
        assert "retrying in 1 s (attempt 1 failed)" in paused[0]
        assert "retrying in 2 s (attempt 2 failed)" in paused[1]
        assert f"127.0.0.1:{port}" in paused[0]
        assert "Traceback" not in text

        cluster.start()  # a new cluster on the same port
        text = _wait_for(log, "batch 2:", process, timeout=300)
        assert "ingestion resumed: Spark is back after" in text
        assert "Traceback" not in text
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGINT)  # Ctrl-C: the scheduler stops the session
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=30)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    con = connect(db)
    try:
        runs = {row[0] for row in con.execute("SELECT run_id FROM runs").fetchall()}
    finally:
        con.close()
    assert runs == {"stocks-3n-stimulus-seed0", "stocks-3n-stimulus-seed1"}
