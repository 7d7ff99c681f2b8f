"""``/metrics`` of ``mace serve``: the values on hand-computed runs, the exposition parsed
by ``prometheus_client``'s parser, behind ``--auth-file``, and scraped by a real
Prometheus server that answers a query for the predicted series by its labels."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from mace.metrics_export import Sample, run_metrics
from mace.report_command import load_run_data
from storage.db import connect
from storage.scenarios import set_objective
from tests.connectors.prometheus_fixture import prometheus_missing
from tests.connectors.prometheus_fixture import serve as serve_prometheus
from tests.dashboard.builders import DRIFT_INTERVALS, write_drift_run

pytestmark = pytest.mark.timeout(180)
USER, PASSWORD = "grafana", "s3cret"


def _values(samples: list[Sample], name: str) -> dict[tuple[tuple[str, str], ...], float]:
    return {s.labels: s.value for s in samples if s.name == name}


def _one(samples: list[Sample], name: str) -> float:
    (value,) = _values(samples, name).values()
    return value


@pytest.fixture
def drift_db(tmp_path: Path) -> Path:
    db = tmp_path / "drift.duckdb"
    write_drift_run(db, "steady", drifting=False)
    write_drift_run(db, "drifting", drifting=True)
    con = connect(db)
    set_objective(con, "steady", "q1", 0.5)
    con.close()
    return db


def test_metrics_of_a_steady_and_a_drifting_run(drift_db: Path) -> None:
    """write_drift_run: one node, no backlog while steady, so the predicted band is
    [0, w + eps] = [0, 1.1] s and the measured 0.3 s lies inside it; the drifting run's
    measured latency leaves the band above from subinterval 23 on."""
    run, objectives = load_run_data(drift_db, "steady")
    steady = run_metrics(run, objectives, window_seconds=10.0)
    assert _one(steady, "predicted_band_lower_seconds") == pytest.approx(0.0)
    assert _one(steady, "predicted_band_upper_seconds") == pytest.approx(1.1)
    assert _one(steady, "estimated_latency_seconds") == pytest.approx(0.0)
    assert _one(steady, "measured_latency_seconds") == pytest.approx(0.3)
    assert _one(steady, "drift_state") == 0.0
    assert _one(steady, "objective_seconds") == 0.5
    assert _one(steady, "objective_compliance_ratio") == 1.0  # 0.3 s <= 0.5 s
    assert _one(steady, "bottleneck") == 1.0
    # the last complete subinterval is the one before the newest
    assert _one(steady, "last_complete_subinterval_end_timestamp_seconds") == pytest.approx(
        run.info.origin + (DRIFT_INTERVALS - 1) * run.subinterval
    )
    labels = dict(next(s.labels for s in steady if s.name == "predicted_latency_seconds"))
    assert labels == {"run_id": "steady", "job_name": "one-node", "query": "q1"}
    node = dict(next(s.labels for s in steady if s.name == "node_ce_seconds"))
    assert node["node"] == "n1" and node["operator_name"] == "a"

    run, objectives = load_run_data(drift_db, "drifting")
    drifting = run_metrics(run, objectives, window_seconds=10.0)
    assert _one(drifting, "drift_state") == 1.0
    worst = {dict(k)["kind"]: v for k, v in _values(drifting, "worst_case_latency_seconds").items()}
    # measured 0.3 + 0.5 (p - 19) at p = 38, the last complete subinterval
    assert worst["measured"] == pytest.approx(0.3 + 0.5 * 19)
    assert worst["estimated"] > worst["predicted"]  # the model was fitted before the change


def _get(url: str, auth: bool) -> tuple[int, str]:
    request = urllib.request.Request(url)
    if auth:
        token = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, ""


def test_serve_exposes_metrics_behind_auth_and_prometheus_scrapes_them(
    drift_db: Path, tmp_path: Path, free_port: int
) -> None:
    why = prometheus_missing()
    if why is not None:
        pytest.fail(f"no real Prometheus: {why}")
    auth_file = tmp_path / "auth"
    auth_file.write_text(f"{USER}:{PASSWORD}\n")
    process = subprocess.Popen(
        [sys.executable, "-m", "mace.cli", "serve", "--db", str(drift_db),
         "--port", str(free_port), "--auth-file", str(auth_file)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{free_port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                status, _ = _get(f"{base}/metrics", auth=False)
                break
            except OSError:
                assert process.poll() is None, process.stdout.read() if process.stdout else ""
                assert time.monotonic() < deadline, "server did not start"
                time.sleep(0.3)
        assert status == 401
        status, text = _get(f"{base}/metrics", auth=True)
        assert status == 200
        families = {f.name: f for f in text_string_to_metric_families(text)}
        predicted = families["mace_predicted_latency_seconds"]
        assert {s.labels["run_id"] for s in predicted.samples} == {"steady", "drifting"}
        assert families["mace_drift_state"].type == "gauge"

        with serve_prometheus(
            None, tmp_path / "prom", scrape=(f"127.0.0.1:{free_port}",),
            basic_auth=(USER, PASSWORD),
        ) as prom:  # fmt: skip
            query = urllib.parse.urlencode(
                {"query": 'mace_predicted_latency_seconds{job_name="one-node",run_id="steady"}'}
            )
            deadline = time.monotonic() + 60
            result: list[dict[str, object]] = []
            while not result and time.monotonic() < deadline:
                time.sleep(0.5)
                with urllib.request.urlopen(f"{prom}/api/v1/query?{query}", timeout=5) as r:
                    result = json.load(r)["data"]["result"]
        assert result, "Prometheus never scraped the predicted series"
        (series,) = result
        assert series["metric"]["query"] == "q1"  # type: ignore[index]
    finally:
        process.terminate()
        output, _ = process.communicate(timeout=20)
    assert "Traceback" not in output
