"""deploy/: the Grafana dashboard (valid provisioning JSON whose queries parse and name
metrics that exist) and the Prometheus scrape config (``promtool check config``)."""

from __future__ import annotations

import json
import re
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from connectors.prometheus.transform import METRIC_NAMES
from mace.metrics_export import HELP, PREFIX
from tests.connectors.prometheus_fixture import prometheus_missing
from tests.connectors.prometheus_fixture import serve as serve_prometheus

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
DASHBOARD = DEPLOY / "grafana" / "dashboards" / "mace-flink.json"
FLINK_LATENCY_MARKERS = (
    "flink_taskmanager_job_task_latency_source_id_operator_id_operator_subtask_index_latency"
)
METRIC = re.compile(r"\b((?:mace|flink)_[A-Za-z0-9_]+)")


def _targets() -> list[dict[str, Any]]:
    document = json.loads(DASHBOARD.read_text())
    return [t for panel in document["panels"] for t in panel["targets"]]


def test_dashboard_is_provisioning_json_with_panels_and_a_job_variable() -> None:
    document = json.loads(DASHBOARD.read_text())
    assert document["uid"] and document["title"] and document["schemaVersion"] >= 30
    ids = [p["id"] for p in document["panels"]]
    assert len(ids) == len(set(ids))
    for panel in document["panels"]:
        assert set(panel["gridPos"]) == {"x", "y", "w", "h"}
        assert panel["targets"], panel["title"]
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs))
    (variable,) = document["templating"]["list"]
    assert variable["name"] == "job" and "job_name" in variable["definition"]
    exprs = [t["expr"] for t in _targets()]
    # predicted beside measured, one query each
    assert any(e.startswith("mace_predicted_latency_seconds{") for e in exprs)
    assert any(e.startswith("mace_measured_latency_seconds{") for e in exprs)


def test_dashboard_queries_name_metrics_that_exist() -> None:
    known = {PREFIX + name for name in HELP} | set(METRIC_NAMES) | {FLINK_LATENCY_MARKERS}
    used = {m for t in _targets() for m in METRIC.findall(t["expr"])}
    assert used and used <= known, used - known
    assert all('job_name="$job"' in t["expr"] for t in _targets())


def test_provisioning_files_load() -> None:
    for path in (DEPLOY / "grafana" / "provisioning").rglob("*.yml"):
        document = yaml.safe_load(path.read_text())
        assert document["apiVersion"] == 1, path


def test_prometheus_checks_the_scrape_config_and_parses_every_query(tmp_path: Path) -> None:
    why = prometheus_missing()
    if why is not None:
        pytest.fail(f"no real Prometheus: {why}")
    checked = subprocess.run(
        ["promtool", "check", "config", str(DEPLOY / "prometheus" / "prometheus.yml")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr
    with serve_prometheus(None, tmp_path) as url:
        for target in _targets():
            expr = target["expr"].replace("$job", "clickstream")
            query = urllib.parse.urlencode({"query": expr})
            try:
                with urllib.request.urlopen(f"{url}/api/v1/query?{query}", timeout=10) as r:
                    assert json.load(r)["status"] == "success"
            except urllib.error.HTTPError as exc:  # 400: the query does not parse
                raise AssertionError(f"{expr}: {exc.read().decode()}") from None
