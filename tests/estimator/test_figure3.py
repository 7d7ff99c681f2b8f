"""The paper's Figure 3 end to end through the command line (w = 2 s, C = 1)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mace", *args], capture_output=True, text=True, check=False
    )


def test_figure3_json(figure3_dir: Path) -> None:
    result = run_cli(
        "estimate",
        str(figure3_dir / "topology.yaml"),
        "--arrivals",
        str(figure3_dir / "arrivals.csv"),
        "--estimator",
        "mace",
        "--json",
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert set(out) == {
        "estimator_used",
        "subinterval",
        "mace",
        "mace_wc",
        "bottleneck",
        "ce",
        "lower",
        "upper",
        "epsilon",
        "per_query",
    }
    assert out["subinterval"] == 2.0
    # The paper: N2 has DLTS 3, 6 giving CE 1, 5; at t2 CE is 2, 5, 3 on N1, N2, N3.
    assert out["ce"]["N2"][:2] == [1.0, 5.0]
    assert [out["ce"][n][1] for n in ("N1", "N2", "N3")] == [2.0, 5.0, 3.0]
    assert out["mace"] == [1.0, 5.0, 3.0, 2.0, 4.0]
    assert out["mace_wc"] == 5.0
    assert out["bottleneck"][1:] == ["N2", "N2", "N2", "N3"]
    assert out["lower"] == out["mace"]
    # eps: largest per-event cost (summed over ports) per node: 1 + 1.5 + 0.75.
    assert out["epsilon"] == 3.25
    assert out["upper"] == [m + 2.0 + 3.25 for m in out["mace"]]
    assert out["per_query"] == {"q1": {"mace": out["mace"], "mace_wc": 5.0}}


def test_figure3_summary(figure3_dir: Path) -> None:
    result = run_cli(
        "estimate",
        str(figure3_dir / "topology.yaml"),
        "--arrivals",
        str(figure3_dir / "arrivals.csv"),
        "--estimator",
        "mace",
    )
    assert result.returncode == 0, result.stderr
    assert "MaceWC          5.0000 s at subinterval 1" in result.stdout
    assert "N2 (4 subintervals)" in result.stdout


def test_figure3_summary_path_aware(figure3_dir: Path) -> None:
    """Path-aware by hand (w = 2, T = 2, 4, 6, 8, 10). N2 releases at T + CE/C =
    3, 9, 9, 10, 11 (also behind N1, which releases 2, 6, 6, 8, 10); N3 then releases
    R_p = max(A_p, max(R_{p-1}, A_{p-1}) + x_p) with A = N2's releases and x = 3, 4, 1,
    1, 5: R = 3, 9, 10, 11, 16, lag 1, 5, 4, 3, 6. WC 6 at subinterval 4; the bounds
    are [Mace's WC 5, 6 + w + eps], eps = 1 + (0.5 + 1) + (0.5 + 0.25) = 3.25."""
    result = run_cli(
        "estimate",
        str(figure3_dir / "topology.yaml"),
        "--arrivals",
        str(figure3_dir / "arrivals.csv"),
        "--estimator",
        "path",
    )
    assert result.returncode == 0, result.stderr
    assert "path-aware WC   6.0000 s at subinterval 4" in result.stdout
    assert "latency bounds  [5.0000, 11.2500] s" in result.stdout


def test_user_mistake_is_one_line_without_traceback(tmp_path: Path, figure3_dir: Path) -> None:
    broken = tmp_path / "topology.yaml"
    broken.write_text(
        (figure3_dir / "topology.yaml")
        .read_text()
        .replace("{id: N2, capacity: 1.0}", "{id: N2, capacity: -1}")
    )
    result = run_cli("estimate", str(broken), "--arrivals", str(figure3_dir / "arrivals.csv"))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "node 'N2' capacity" in result.stderr


def test_missing_arrivals_file(figure3_dir: Path) -> None:
    result = run_cli("estimate", str(figure3_dir / "topology.yaml"), "--arrivals", "nope.csv")
    assert result.returncode == 2
    assert "nope.csv: no such file" in result.stderr


def test_placement_override(tmp_path: Path, figure3_dir: Path) -> None:
    placement = tmp_path / "placement.json"
    placement.write_text(json.dumps({"O1": "N1", "O2": "N1", "O3": "N3"}))
    result = run_cli(
        "estimate",
        str(figure3_dir / "topology.yaml"),
        "--arrivals",
        str(figure3_dir / "arrivals.csv"),
        "--placement",
        str(placement),
        "--json",
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    # N1 now carries O1 + O2: DLTS 2+3, 4+6, 0, 1, 1 -> CE 3, 11, 9, 8, 7.
    assert out["ce"]["N1"] == [3.0, 11.0, 9.0, 8.0, 7.0]
    assert out["ce"]["N2"] == [0.0] * 5
