"""``mace estimate --estimator {mace,path}`` on the hand-computed two-node tandem."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

TOPOLOGY = {
    "name": "tandem",
    "subinterval": 1.0,
    "nodes": [{"id": "n1", "capacity": 1.0}, {"id": "n2", "capacity": 1.0}],
    "sources": [{"id": "s1"}, {"id": "s2"}],
    "operators": [
        {"id": "a", "query": "q", "inputs": ["s1"], "cost": 0.5, "selectivity": 1.0},
        {
            "id": "b",
            "query": "q",
            "inputs": ["a", "s2"],
            "cost": [0.125, 0.5],
            "selectivity": [1.0, 1.0],
        },
    ],
    "placement": {"a": "n1", "b": "n2"},
}
# DLTS: n1 = [2, 0], n2 = [0.5, 1.5]; see test_pathaware.test_hand_computed_two_node_tandem.
ARRIVALS = "source,interval,events\ns1,0,4\ns1,1,0\ns2,0,0\ns2,1,3\n"


def run_estimate(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "t.yaml").write_text(yaml.safe_dump(TOPOLOGY), encoding="utf-8")
    (tmp_path / "a.csv").write_text(ARRIVALS, encoding="utf-8")
    command = [sys.executable, "-m", "mace", "estimate", str(tmp_path / "t.yaml")]
    return subprocess.run(
        [*command, "--arrivals", str(tmp_path / "a.csv"), *extra],
        capture_output=True,
        text=True,
        check=False,
    )


def test_default_is_auto_and_mace_and_path_are_selectable(tmp_path: Path) -> None:
    """The default picks per-origin on a run this small (the model gives the work of
    each operator port) and says so; Mace and path-aware are chosen by name."""
    default = run_estimate(tmp_path, "--json")
    assert default.returncode == 0, default.stderr
    used = json.loads(default.stdout)["estimator_used"]
    assert used["name"] == "origin"
    assert "within the 0.5 s budget" in used["reason"]
    mace = run_estimate(tmp_path, "--json", "--estimator", "mace")
    assert mace.returncode == 0, mace.stderr
    assert json.loads(mace.stdout)["mace"] == [1.0, 0.5]
    assert json.loads(mace.stdout)["estimator_used"] == {
        "name": "mace",
        "label": "Mace",
        "reason": "chosen with --estimator",
    }
    path = run_estimate(tmp_path, "--json", "--estimator", "path")
    assert path.returncode == 0, path.stderr
    out = json.loads(path.stdout)
    assert out["mace"] == [1.0, 1.5]
    assert out["mace_wc"] == 1.5
    assert out["lower"] == [1.0, 0.5]
    assert out["per_query"]["q"]["mace"] == [1.0, 1.5]


def test_unknown_estimator_is_a_usage_error(tmp_path: Path) -> None:
    result = run_estimate(tmp_path, "--estimator", "fluid")
    assert result.returncode == 2
    assert "invalid choice: 'fluid'" in result.stderr
    assert "Traceback" not in result.stderr
