"""``mace place --max-moves N``: the same cap as the What-if page's Optimize card."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from estimator.evaluator import estimate
from estimator.loaders import load_arrivals, load_topology
from mace.cli import main

TOPOLOGY = {
    "name": "crowded",
    "subinterval": 1.0,
    "nodes": [{"id": f"n{k}", "capacity": 1.0} for k in (1, 2, 3)],
    "sources": [{"id": "s"}],
    "operators": [
        {"id": op, "query": "q", "inputs": ["s"], "cost": 0.2, "selectivity": 1.0}
        for op in ("a", "b", "c")
    ],
    "placement": {"a": "n1", "b": "n1", "c": "n1"},
}
"""Three heavy operators on one node of three: the best placement moves two of them."""


@pytest.fixture
def crowded(tmp_path: Path) -> tuple[str, str]:
    topology = tmp_path / "topology.yaml"
    topology.write_text(yaml.safe_dump(TOPOLOGY))
    arrivals = tmp_path / "arrivals.csv"
    arrivals.write_text("source,interval,events\n" + "".join(f"s,{k},4\n" for k in range(30)))
    return str(topology), str(arrivals)


def _place(files: tuple[str, str], *options: str) -> list[str]:
    return ["place", files[0], "--arrivals", files[1], "--budget", "0.5", *options]


def _moved(placement: dict[str, str]) -> int:
    return sum(TOPOLOGY["placement"][op] != node for op, node in placement.items())  # type: ignore[index]


def test_max_moves_caps_the_operators_moved(
    crowded: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*_place(crowded), "--json"]) == 0
    free = json.loads(capsys.readouterr().out)
    assert _moved(free["placement"]) == 2
    assert main([*_place(crowded, "--max-moves", "1"), "--json"]) == 0
    one = json.loads(capsys.readouterr().out)
    assert _moved(one["placement"]) == 1
    topology = load_topology(crowded[0])
    arrivals = load_arrivals(crowded[1], topology)
    current = estimate(topology, arrivals).worst_case
    recomputed = estimate(topology.with_placement(one["placement"]), arrivals).worst_case
    assert one["mace_wc"] == pytest.approx(recomputed)
    assert free["mace_wc"] < one["mace_wc"] < current
    assert main(_place(crowded, "--max-moves", "1")) == 0
    out = capsys.readouterr().out
    assert "moves           1 of 3 operators (at most 1)" in out
    assert out.count("(was n1)") == 1


def test_max_moves_zero_keeps_the_placement_and_negative_is_a_user_error(
    crowded: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*_place(crowded, "--max-moves", "0"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["placement"] == TOPOLOGY["placement"]
    assert main(_place(crowded, "--max-moves", "-1")) == 2
    err = capsys.readouterr().err
    assert "--max-moves: must not be negative, got -1" in err
    assert len(err.strip().splitlines()) == 1
