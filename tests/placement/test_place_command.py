"""``mace place``: JSON contract, readable summary and one-line user errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from estimator.evaluator import estimate
from estimator.loaders import load_arrivals, load_topology
from mace.cli import main


@pytest.mark.parametrize("algorithm", ["mace-hc", "fugu"])
def test_json_has_exactly_the_contract_keys(
    figure3_dir: Path, capsys: pytest.CaptureFixture[str], algorithm: str
) -> None:
    topology_file = str(figure3_dir / "topology.yaml")
    arrivals_file = str(figure3_dir / "arrivals.csv")
    code = main(
        [
            *("place", topology_file, "--arrivals", arrivals_file, "--algorithm", algorithm),
            *("--budget", "0.3", "--seed", "3", "--json"),
        ]
    )
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"placement", "mace_wc", "seconds", "evaluations"}
    topology = load_topology(topology_file)
    assert set(out["placement"]) == set(topology.operator_ids)
    arrivals = load_arrivals(arrivals_file, topology)
    recomputed = estimate(topology.with_placement(out["placement"]), arrivals).worst_case
    assert out["mace_wc"] == pytest.approx(recomputed)
    assert out["seconds"] >= 0 and out["evaluations"] >= 1


def test_summary_names_the_algorithm_and_the_current_figure(
    figure3_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            *("place", str(figure3_dir / "topology.yaml")),
            *("--arrivals", str(figure3_dir / "arrivals.csv"), "--budget", "0.2"),
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "mace-hc placement of 3 operators" in out
    assert "current placement 5.0000 s" in out


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--algorithm", "greedy"], "--algorithm: unknown algorithm 'greedy'"),
        (["--budget", "0"], "--budget: must be a positive number of seconds"),
        (["--budget", "nan"], "--budget: must be a positive number of seconds"),
        (["--seed", "-1"], "--seed: must not be negative"),
    ],
)
def test_user_mistakes_print_one_line_and_exit_2(
    figure3_dir: Path, capsys: pytest.CaptureFixture[str], options: list[str], message: str
) -> None:
    code = main(
        [
            *("place", str(figure3_dir / "topology.yaml")),
            *("--arrivals", str(figure3_dir / "arrivals.csv"), *options),
        ]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert message in err
    assert len(err.strip().splitlines()) == 1


def test_missing_topology_file_is_a_user_error(
    tmp_path: Path, figure3_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = str(tmp_path / "nope.yaml")
    code = main(["place", missing, "--arrivals", str(figure3_dir / "arrivals.csv")])
    assert code == 2
    assert "nope.yaml" in capsys.readouterr().err


@pytest.mark.parametrize("algorithm", ["mace-hc", "random", "corr", "pd-greedy"])
def test_figure3_keeps_its_placement_when_nothing_is_better(
    figure3_dir: Path, capsys: pytest.CaptureFixture[str], algorithm: str
) -> None:
    topology = load_topology(figure3_dir / "topology.yaml")
    argv = ["place", str(figure3_dir / "topology.yaml"), "--arrivals"]
    argv += [str(figure3_dir / "arrivals.csv"), "--algorithm", algorithm, "--budget", "0.2"]
    assert main([*argv, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["placement"] == topology.placement
    assert main(argv) == 0
    assert "(was " not in capsys.readouterr().out


def test_moves_that_buy_nothing_are_undone() -> None:
    """Two nodes; a on n1 is the bottleneck, b and c are light on n1 too. A search that
    moves a, b and c to n2 gains what moving a alone gains: only a moves."""
    import numpy as np

    from estimator.model import topology_from_dict
    from estimator.placement import PlacementProblem, fewest_moves
    from estimator.placement.common import Clock

    topology = topology_from_dict(
        {
            "nodes": [{"id": "n1", "capacity": 1.0}, {"id": "n2", "capacity": 1.0}],
            "sources": [{"id": "s"}],
            "operators": [
                {"id": "a", "query": "q", "inputs": ["s"], "cost": 0.2},
                {"id": "b", "query": "q", "inputs": ["s"], "cost": 0.01},
                {"id": "c", "query": "q", "inputs": ["s"], "cost": 0.01},
                {"id": "d", "query": "q", "inputs": ["s"], "cost": 0.2},
            ],
            "placement": {"a": "n1", "b": "n1", "c": "n1", "d": "n1"},
        }
    )
    problem = PlacementProblem.from_arrivals(topology, np.full((1, 20), 4.0))
    everything = np.array([1, 1, 1, 0])  # a, b, c to n2; d stays
    found = problem.result("test", everything, Clock(1.0), 1)
    kept = fewest_moves(problem, found)
    assert kept.placement == {"a": "n2", "b": "n1", "c": "n1", "d": "n1"}
    assert kept.mace_wc <= found.mace_wc
    assert kept.details["moves_undone"] == 2
