"""A Java Flink job writes its own ``outputs/`` with Flink's FileSink (examples/java-filesink).

Real parts: the example compiled with ``javac`` against the jars of the ``apache-flink``
package, run on its local MiniCluster with ``mace collect flink`` beside it, ingested
with Spark into a real DuckDB file, then ``mace report --json``. Timings vary with
machine load: this asserts counts and that measured latency reaches the report.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from connectors.flink.runtime import flink_venv, free_port
from estimator.loaders import load_topology
from ingest.job import ingest_once

pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.timeout(300)]
REPO = Path(__file__).resolve().parents[2]
SECONDS = 8  # at 300 events/s (the first burst would start at 10 s)


def test_a_java_job_with_filesink_gives_measured_latency(
    tmp_path: Path,
    spark,  # type: ignore[no-untyped-def]
) -> None:
    if not (flink_venv() / ".installed").is_file():
        pytest.fail(f"no Flink environment at {flink_venv()}: run `make flink-env`")
    if shutil.which("javac") is None:
        pytest.fail("no javac: run `make system-deps`")
    landing = tmp_path / "landing"
    env = {
        **os.environ,
        "REST_PORT": str(free_port()),
        "BUILD": str(tmp_path / "build"),
        "MACE": str(Path(sys.executable).parent / "mace"),
    }
    done = subprocess.run(
        [str(REPO / "examples/java-filesink/run.sh"), str(landing), "javarun", str(SECONDS)],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    run = landing / "javarun"
    topology = load_topology(run / "topology.yaml")
    assert topology.source_ids == ("clicks",)
    assert topology.queries == ("outputs",)
    assert "outputs" in topology.operator_ids
    parts = [p for p in (run / "outputs").iterdir() if not p.name.startswith(".")]
    assert parts and all(p.name.startswith("part-") for p in parts)
    written = sum(len(p.read_text().splitlines()) for p in parts)
    assert written == SECONDS * 300  # every event, the last ones committed at the end

    db = tmp_path / "mace.duckdb"
    summary = ingest_once(landing, db, spark)
    assert summary.rows_quarantined == 0
    con = duckdb.connect(str(db), read_only=True)
    try:
        (outputs,) = con.execute("SELECT sum(outputs) FROM latency_stats").fetchone() or (0,)
    finally:
        con.close()
    assert outputs == written
    report = subprocess.run(
        [sys.executable, "-m", "mace", "report", "--db", str(db), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert report.returncode == 0, report.stderr
    query = json.loads(report.stdout)["queries"]["outputs"]
    assert 0 < query["measured_p99"] <= query["measured_wc"]
    assert query["estimated_wc"] >= 0 and query["predicted_wc"] >= 0
