"""``mace report --json`` on a small run ingested from raw telemetry by the real Spark job.

The raw records reproduce the run of test_report (same topology, arrivals and
per-event CPU, and every output of an interval has that interval's measured
latency), so the report must give the same hand-computed figures.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from pyspark.sql import SparkSession

from ingest.job import ingest_once
from mace.cli import main
from storage.db import connect
from storage.scenarios import set_objective
from tests.dashboard.builders import SMALL_ARRIVALS, SMALL_LATENCY, SMALL_TOPOLOGY
from tests.mace.test_report import EXPECTED_Q1, EXPECTED_Q2

pytestmark = pytest.mark.spark

COST = {"a": 0.1, "b": 0.2, "c": 0.1}
NODE: dict[str, str] = {"a": "n2", "b": "n2", "c": "n1"}  # SMALL_TOPOLOGY's placement


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def write_landing(landing: Path) -> None:
    run = landing / "small"
    run.mkdir(parents=True)
    (run / "topology.yaml").write_text(yaml.safe_dump(SMALL_TOPOLOGY), encoding="utf-8")
    arrivals, executions, outputs = [], [], []
    for interval, count in enumerate(SMALL_ARRIVALS):
        for k in range(count):
            t = interval + (k + 0.5) / count
            arrivals.append({"source": "s", "stimulus_time": t})
            for op in ("a", "b", "c"):
                cpu = 0.15 if op == "a" and interval == 0 else COST[op]
                executions.append(
                    {
                        "node": NODE[op],
                        "operator": op,
                        "port": 0,
                        "stimulus_time": t,
                        "start_time": t + 0.01,
                        "cpu_seconds": cpu,
                        "outputs": 1,
                    }
                )
            for query, sink in (("q1", "b"), ("q2", "c")):
                latency = SMALL_LATENCY[query][interval]
                assert latency is not None
                outputs.append(
                    {
                        "query": query,
                        "operator": sink,
                        "stimulus_time": t,
                        "egress_time": t + latency,
                    }
                )
    _write_jsonl(run / "arrivals" / "part-0.jsonl", arrivals)
    _write_jsonl(run / "executions" / "part-0.jsonl", executions)
    _write_jsonl(run / "outputs" / "part-0.jsonl", outputs)


def test_report_of_ingested_run(
    tmp_path: Path, spark: SparkSession, capsys: pytest.CaptureFixture[str]
) -> None:
    landing = tmp_path / "landing"
    write_landing(landing)
    db = tmp_path / "mace.duckdb"
    summary = ingest_once(landing, db, spark)
    assert summary.rows_quarantined == 0
    con = connect(db)
    set_objective(con, "small", "q1", 1.0)
    con.close()
    assert main(["report", "--db", str(db), "--run", "small", "--estimator", "mace", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    for query, expected in (("q1", EXPECTED_Q1), ("q2", EXPECTED_Q2)):
        for key, value in expected.items():
            got = report["queries"][query][key]
            assert got == (None if value is None else pytest.approx(value, abs=1e-9)), (query, key)
    assert report["system"]["bound_coverage"] == pytest.approx(0.75)
