"""Ingestion on a real Spark standalone cluster: a master and two workers (one core, 1 GB
each) on 127.0.0.1, started from the installed pyspark's own classes (ingest.standalone).

``mace ingest --every 1 --master spark://...`` keeps one application across batches,
survives the cluster going away (one line, back-off), resumes when a new cluster comes
up on the same port, and stores what a local ingest of the same landing folder stores.
The command runs in a subprocess: this process holds the test session's local
SparkContext, and a JVM holds one at a time.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from pyspark.sql import SparkSession

from ingest.job import ingest_once
from ingest.standalone import LocalCluster
from storage.db import connect

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.cluster]

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


@pytest.fixture
def cluster() -> Iterator[LocalCluster]:
    """Master + two workers; every process group is killed at teardown, even on failure."""
    with LocalCluster(workers=2, cores=1, memory="1g", env=_env()) as running:
        yield running


def _table(db: Path, table: str) -> pd.DataFrame:
    con = connect(db)
    try:
        frame = con.execute(f"SELECT * FROM {table}").df()  # test-only read of a known table
    finally:
        con.close()
    return frame.sort_values(TABLES[table]).reset_index(drop=True)


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


def test_cluster_ingest_matches_local_keeps_one_session_and_outlives_the_cluster(
    cluster: LocalCluster, spark: SparkSession, tmp_path: Path
) -> None:
    """One scenario (a cluster application costs tens of seconds on a shared machine):

    1. ``mace ingest --every 1 --master spark://...`` ingests a simulated run;
       a few empty passes later the master still shows one application;
    2. the whole cluster goes away and a second run lands: the scheduler logs one line
       per attempt, 1 then 2 periods apart, and stays up;
    3. a new cluster on the same port: the scheduler resumes and ingests the second run;
    4. the store equals a local ingest (this process's local[2] session) of both runs.
    """
    landing = tmp_path / "landing"
    _simulate(landing, seed=0)
    _simulate(tmp_path / "later", seed=1)
    log = tmp_path / "scheduler.log"
    db = tmp_path / "cluster.duckdb"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            _mace("ingest", landing, "--db", db, "--every", "1", "--master", cluster.url),
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=_env(),
            start_new_session=True,  # the driver JVM is in its group: killed with it
        )
    try:
        text = _wait_for(log, "batch 1:", process, timeout=600)
        assert re.search(r"batch 1: 6 file\(s\), (\d+) row\(s\) read, \1 kept, 0 quarantined", text)
        time.sleep(3)  # a few passes with nothing new: still the same application
        apps = _apps(cluster, "activeapps")
        assert [(a["name"], a["cores"]) for a in apps] == [("mace-ingest", 2)]  # both workers
        assert _apps(cluster, "completedapps") == []

        port = cluster.port
        cluster.stop()  # the whole cluster goes away while the scheduler waits
        shutil.move(tmp_path / "later" / "stocks-3n-stimulus-seed1", landing)
        text = _wait_for(log, "(attempt 2 failed)", process, timeout=300)
        paused = [line for line in text.splitlines() if "ingestion paused:" in line]
        assert "retrying in 1 s (attempt 1 failed)" in paused[0]
        assert "retrying in 2 s (attempt 2 failed)" in paused[1]
        assert f"127.0.0.1:{port}" in paused[0]

        cluster.start()  # a new cluster on the same port
        text = _wait_for(log, "batch 2:", process, timeout=600)
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

    local = ingest_once(landing, tmp_path / "local.duckdb", spark)
    assert local.rows_quarantined == 0
    for table in TABLES:
        expected = _table(tmp_path / "local.duckdb", table)
        stored = _table(db, table)
        assert set(expected["run_id"]) == {"stocks-3n-stimulus-seed0", "stocks-3n-stimulus-seed1"}
        # sums of doubles may be added in another order on executors: equal to 1e-12
        pd.testing.assert_frame_equal(expected, stored, check_exact=False, rtol=1e-12)
