"""Placement algorithms: validity, honest MaceWC, Mace-HC against exhaustive search."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from estimator.errors import ModelError
from estimator.evaluator import estimate
from estimator.model import topology_from_dict, validate_placement
from estimator.placement import ALGORITHMS, PlacementProblem, place
from estimator.placement.fugu import fugu
from estimator.placement.mace_hc import mace_hc
from estimator.placement.pd_greedy import pd_greedy
from tests.placement.helpers import constant_instance, reference_mace_wc, small_instance


def exhaustive_optimum(topology, arrivals) -> float:
    ops, nodes = topology.operator_ids, topology.node_ids
    return min(
        reference_mace_wc(topology, arrivals, dict(zip(ops, choice, strict=True)))
        for choice in itertools.product(nodes, repeat=len(ops))
    )


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_mace_hc_reaches_the_exhaustive_optimum(seed: int) -> None:
    topology, arrivals = small_instance(seed)
    optimum = exhaustive_optimum(topology, arrivals)
    assert optimum > 0  # the instance is bursty enough that placement matters
    problem = PlacementProblem.from_arrivals(topology, arrivals)
    result = mace_hc(problem, budget=3.0, rng=np.random.default_rng(seed))
    assert result.mace_wc == pytest.approx(optimum, rel=1e-9, abs=1e-12)


def linked_instance():
    """Heterogeneous nodes and a finite-bandwidth link, so network resources count."""
    topology, arrivals = small_instance(4, operators=5, nodes=3)
    document = topology.to_dict()
    document["nodes"][0]["capacity"] = 2.5
    document["links"] = [{"from": "n1", "to": "n2", "delay": 0.01, "bandwidth": 2000.0}]
    document["operators"][1]["inputs"] = [document["operators"][0]["id"]]
    return topology_from_dict(document), arrivals


INSTANCES = {"bursty": lambda: small_instance(7, operators=12, nodes=4), "linked": linked_instance}


@pytest.mark.parametrize("instance", sorted(INSTANCES))
@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_every_algorithm_returns_a_valid_placement_with_its_true_mace_wc(
    name: str, instance: str
) -> None:
    topology, arrivals = INSTANCES[instance]()
    result = place(topology, arrivals, name, budget=0.3, rng=np.random.default_rng(5))
    assert validate_placement(result.placement, topology.operator_ids, topology.node_ids)
    assert set(result.placement) == set(topology.operator_ids)
    recomputed = estimate(topology.with_placement(result.placement), arrivals).worst_case
    assert result.mace_wc == pytest.approx(recomputed, rel=1e-12, abs=1e-12)
    if not topology.links:
        expected = reference_mace_wc(topology, arrivals, result.placement)
        assert result.mace_wc == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert result.evaluations >= 1
    assert 0 <= result.time_to_best <= result.seconds
    assert result.nodes_used == len(set(result.placement.values()))
    assert set(result.to_json()) == {"placement", "mace_wc", "seconds", "evaluations"}


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_fixed_operators_stay_where_they_are(name: str) -> None:
    topology, arrivals = small_instance(8, operators=8, nodes=3)
    movable = topology.operator_ids[:3]
    result = place(
        topology, arrivals, name, budget=0.2, rng=np.random.default_rng(0), movable=movable
    )
    for op_id in topology.operator_ids[3:]:
        assert result.placement[op_id] == topology.placement[op_id]


def test_mace_hc_is_no_worse_than_the_best_random_placement_it_could_have_drawn() -> None:
    topology, arrivals = small_instance(9, operators=12, nodes=4)
    problem = PlacementProblem.from_arrivals(topology, arrivals)
    hc = mace_hc(problem, budget=1.0, rng=np.random.default_rng(1))
    random = ALGORITHMS["random"](problem, budget=1.0, rng=np.random.default_rng(1))
    assert hc.mace_wc <= random.mace_wc


def test_progress_reports_fractions_and_the_best_so_far() -> None:
    topology, arrivals = small_instance(3)
    seen: list[tuple[float, float]] = []
    result = place(
        topology,
        arrivals,
        "mace-hc",
        budget=0.3,
        rng=np.random.default_rng(0),
        progress=lambda f, b: seen.append((f, b)),
    )
    assert seen and all(0 <= f <= 1 for f, _ in seen)
    assert [b for _, b in seen] == sorted((b for _, b in seen), reverse=True)
    assert seen[-1][1] == pytest.approx(result.mace_wc)


def test_unknown_algorithm_and_bad_budget_are_user_errors() -> None:
    topology, arrivals = small_instance(1)
    with pytest.raises(ModelError, match="unknown placement algorithm 'greedy'"):
        place(topology, arrivals, "greedy")
    with pytest.raises(ModelError, match="budget"):
        place(topology, arrivals, "random", budget=0)


def test_pd_greedy_respects_quotas_and_node_speeds() -> None:
    topology, arrivals = constant_instance([0.3, 0.3], [1.0, 1.0])
    problem = PlacementProblem.from_arrivals(topology, arrivals)
    # on n1 the load PE would be 1 + 20 * (3 - 1) = 41 against 0.3 and 0.6 on n2
    result = pd_greedy(problem, budget=1.0, rng=np.random.default_rng(0), quotas={"n1": 0.1})
    assert result.placement == {"op1": "n2", "op2": "n2"}
    # a node three times faster takes three of four equal operators
    topology, arrivals = constant_instance([0.2] * 4, [1.0, 3.0])
    problem = PlacementProblem.from_arrivals(topology, arrivals)
    result = pd_greedy(problem, budget=1.0, rng=np.random.default_rng(0))
    assert sorted(result.placement.values()) == ["n1", "n2", "n2", "n2"]
    with pytest.raises(ModelError, match="quota of 'n2'"):
        pd_greedy(problem, budget=1.0, rng=np.random.default_rng(0), quotas={"n2": 1.5})


def test_fugu_first_fit_under_the_threshold() -> None:
    topology, arrivals = constant_instance([0.4, 0.3, 0.2, 0.1], [1.0, 1.0, 1.0])
    problem = PlacementProblem.from_arrivals(topology, arrivals)
    result = fugu(problem, budget=1.0, rng=np.random.default_rng(0), threshold=0.5)
    # op1 opens n1; op2 does not fit beside it (0.7 > 0.5) and opens n2; op3 fills
    # n2 to 0.5; op4 goes back to n1 (0.5)
    assert result.placement == {"op1": "n1", "op2": "n2", "op3": "n2", "op4": "n1"}
    assert result.details["nodes_needed"] == 2
    assert result.details["host_min"] == 2


def test_fugu_rebalances_instead_of_opening_a_node() -> None:
    # b (0.6) opens n1, a (0.85) opens n2, x (0.1) joins n1 (spare 0.3 left);
    # e (0.35) fits nowhere although 0.45 is spare in total: x moves to n2, e takes n1
    topology, arrivals = constant_instance([0.6, 0.85, 0.1, 0.35], [1.0, 1.0, 1.0])
    problem = PlacementProblem.from_arrivals(topology, arrivals)
    result = fugu(problem, budget=1.0, rng=np.random.default_rng(0), threshold=1.0)
    assert result.placement == {"op1": "n1", "op2": "n2", "op3": "n2", "op4": "n1"}
    assert result.details["nodes_needed"] == 2
    plain = fugu(problem, budget=1.0, rng=np.random.default_rng(0), threshold=1.0, rebalance=False)
    assert plain.placement["op4"] == "n3"
    assert plain.details["nodes_needed"] == 3
