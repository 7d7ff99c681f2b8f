"""Hostile topology and arrival files: rejected quickly, before memory grows."""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd
import pytest

from estimator.arrivals import MAX_INTERVALS, arrivals_from_frame
from estimator.errors import ModelError
from estimator.loaders import load_arrivals, load_topology, topology_from_text
from mace.cli import main

FIGURE3 = Path(__file__).resolve().parents[2] / "examples" / "figure3"


def _bomb(levels: int = 30) -> str:
    """Billion laughs: each alias level doubles (here 9**levels strings when expanded)."""
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for k in range(1, levels):
        previous = ", ".join([f"*a{k - 1}"] * 9)
        lines.append(f"a{k}: &a{k} [{previous}]")
    return "\n".join(lines) + "\n"


def _bomb_topology(where: str) -> str:
    bomb = _bomb()
    top = f"a{29}"
    name = f"*{top}" if where == "name" else "t"
    nodes = f"*{top}" if where == "nodes" else "[{id: n1, capacity: 1.0}]"
    inputs = f"*{top}" if where == "inputs" else "[s]"
    return (
        f"{bomb}name: {name}\nsubinterval: 1.0\nnodes: {nodes}\nsources: [{{id: s}}]\n"
        f"operators:\n  - {{id: a, query: q, inputs: {inputs}, cost: 0.1}}\n"
        "placement: {a: n1}\n"
    )


@pytest.mark.parametrize("where", ["name", "nodes", "inputs"])
def test_yaml_alias_bomb_is_rejected_quickly(tmp_path: Path, where: str) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(_bomb_topology(where))
    started = time.perf_counter()
    with pytest.raises(ModelError, match="aliases"):
        load_topology(path)
    with pytest.raises(ModelError, match="aliases"):
        topology_from_text(path.read_text())
    assert time.perf_counter() - started < 2.0


def test_non_string_inputs_are_a_model_error_not_a_type_error() -> None:
    document = (
        "name: t\nnodes: [{id: n1, capacity: 1.0}]\nsources: [{id: s}]\n"
        "operators:\n  - {id: a, query: q, inputs: [[s]], cost: 0.1}\nplacement: {a: n1}\n"
    )
    with pytest.raises(ModelError, match="inputs"):
        topology_from_text(document)


def test_yaml_bomb_on_the_command_line_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(_bomb_topology("nodes"))
    assert main(["estimate", str(path), "--arrivals", str(FIGURE3 / "arrivals.csv")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("mace estimate: error: ") and "aliases" in err
    assert len(err.splitlines()) == 1


def test_huge_interval_is_rejected_before_allocating_and_says_how_much_memory() -> None:
    frame = pd.DataFrame({"source": ["s"], "interval": [10**12], "events": [1]})
    started = time.perf_counter()
    with pytest.raises(ModelError, match=r"--max-intervals") as caught:
        arrivals_from_frame(frame)
    assert "TiB" in str(caught.value) and f"{MAX_INTERVALS:,}" in str(caught.value)
    assert time.perf_counter() - started < 1.0
    small = pd.DataFrame({"source": ["s"], "interval": [20], "events": [1]})
    with pytest.raises(ModelError, match="21 intervals"):
        arrivals_from_frame(small, max_intervals=10)
    assert arrivals_from_frame(small, max_intervals=21).counts.shape == (1, 21)


@pytest.mark.parametrize(
    ("command", "extra"), [("place", ["--algorithm", "baseline"]), ("estimate", ["--json"])]
)
def test_max_intervals_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, extra: list[str]
) -> None:
    arrivals = pd.read_csv(FIGURE3 / "arrivals.csv")
    path = tmp_path / "arrivals.csv"
    arrivals.assign(interval=arrivals["interval"] + 10**7).to_csv(path, index=False)
    with pytest.raises(ModelError, match="--max-intervals"):
        load_arrivals(path)
    argv = [command, str(FIGURE3 / "topology.yaml"), "--arrivals", str(path), *extra]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"mace {command}: error: ") and "--max-intervals" in err
    assert len(err.splitlines()) == 1
    small = tmp_path / "small.csv"
    arrivals.to_csv(small, index=False)
    limit = int(arrivals["interval"].max())  # one interval short
    argv = [command, str(FIGURE3 / "topology.yaml"), "--arrivals", str(small), *extra]
    assert main([*argv, "--max-intervals", str(limit)]) == 2
    capsys.readouterr()
    assert main([*argv, "--max-intervals", str(limit + 1)]) == 0
