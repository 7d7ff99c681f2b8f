"""What-if scenarios against estimates of the changed topology computed from scratch."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from estimator.arrivals import arrivals_from_matrix
from estimator.errors import ModelError
from estimator.evaluator import estimate
from estimator.mace import Estimate
from estimator.model import topology_from_dict
from estimator.whatif import (
    AddedQuery,
    RunInputs,
    Scenario,
    apply_scenario,
    evaluate_scenario,
    scenario_from_json,
)
from tests.estimator.helpers import chain, chain_document

ARRIVALS = arrivals_from_matrix(
    ["a", "b"], np.array([[100.0, 0.0, 40.0, 10.0], [10.0, 20.0, 0.0, 30.0]])
)


def test_move_matches_estimate_of_moved_topology() -> None:
    topology = chain()
    result = evaluate_scenario(topology, ARRIVALS, Scenario(placement={"filter": "n2"}))
    expected = estimate(
        topology.with_placement({"parse": "n1", "filter": "n2", "join": "n2"}), ARRIVALS
    )
    np.testing.assert_allclose(result.estimate.series, expected.series)
    assert result.baseline.worst_case == estimate(topology, ARRIVALS).worst_case
    assert result.worst_case_change == pytest.approx(
        expected.worst_case - result.baseline.worst_case
    )


def test_capacity_doubling_halves_ce_seconds_when_overloaded() -> None:
    topology = chain()
    doubled = evaluate_scenario(topology, ARRIVALS, Scenario(capacities={"n1": 2.0})).estimate
    # n1 DLTS 5, 0, 2, 0.5: with C = 2 the CE is 3, 1, 1, 0 CPU-s = 1.5, .5, .5, 0 s.
    np.testing.assert_allclose(doubled.ce_seconds[0], [1.5, 0.5, 0.5, 0.0])


def test_add_and_remove_nodes() -> None:
    topology = chain()
    scenario = Scenario(add_nodes={"n3": 4.0}, remove_nodes=["n2"], placement={"join": "n3"})
    changed, _ = apply_scenario(topology, ARRIVALS, scenario)
    assert changed.node_ids == ("n1", "n3")
    assert changed.placement["join"] == "n3"
    with pytest.raises(ModelError, match="operator 'join' is still placed on removed node 'n2'"):
        apply_scenario(topology, ARRIVALS, Scenario(remove_nodes=["n2"]))
    with pytest.raises(ModelError, match="unknown node 'n9'"):
        apply_scenario(topology, ARRIVALS, Scenario(remove_nodes=["n9"]))
    with pytest.raises(ModelError, match="node 'n1' already exists"):
        apply_scenario(topology, ARRIVALS, Scenario(add_nodes={"n1": 1.0}))


def test_rate_scale_is_linear_in_dlts() -> None:
    topology = chain()
    base = estimate(topology, ARRIVALS)
    scaled = evaluate_scenario(topology, ARRIVALS, Scenario(rate_scale=3.0)).estimate
    np.testing.assert_allclose(scaled.dlts, 3.0 * base.dlts)
    per_source = evaluate_scenario(topology, ARRIVALS, Scenario(rate_scale={"b": 0.0})).estimate
    np.testing.assert_allclose(per_source.dlts[0], base.dlts[0])  # n1 sees only source a
    for bad in (-1.0, float("nan"), 1e9):
        with pytest.raises(ModelError, match="rate scale"):
            apply_scenario(topology, ARRIVALS, Scenario(rate_scale=bad))


def test_added_query_with_new_source() -> None:
    topology = chain()
    query = AddedQuery(
        operators=[{"id": "count", "query": "q3", "inputs": ["c"], "cost": 0.5}],
        placement={"count": "n2"},
        sources={"c": [0.0, 0.0, 0.0, 20.0]},
    )
    result = evaluate_scenario(topology, ARRIVALS, Scenario(add_query=query))
    assert "q3" in result.per_query
    assert result.per_query["q3"].before == 0.0
    document = chain_document()
    document["sources"].append({"id": "c"})
    document["operators"].append({"id": "count", "query": "q3", "inputs": ["c"], "cost": 0.5})
    document["placement"]["count"] = "n2"
    counts = np.vstack([ARRIVALS.counts, [0.0, 0.0, 0.0, 20.0]])
    expected = estimate(topology_from_dict(document), arrivals_from_matrix(["a", "b", "c"], counts))
    np.testing.assert_allclose(result.estimate.series, expected.series)
    assert result.per_query["q3"].after == pytest.approx(float(expected.per_query["q3"].max()))


def test_wider_subinterval_sums_arrivals() -> None:
    topology = chain()
    changed, arrivals = apply_scenario(topology, ARRIVALS, Scenario(subinterval_factor=2))
    assert changed.subinterval == 2.0
    assert arrivals.counts.tolist() == [[100.0, 50.0], [30.0, 30.0]]
    with pytest.raises(ModelError, match="positive integer"):
        apply_scenario(topology, ARRIVALS, Scenario(subinterval_factor=0))


def test_unknown_operator_in_placement() -> None:
    with pytest.raises(ModelError, match="unknown operator 'ghost'"):
        apply_scenario(chain(), ARRIVALS, Scenario(placement={"ghost": "n1"}))


def test_scenario_codec_round_trip_keeps_an_added_query() -> None:
    """docs/design.md, "DuckDB store": a saved scenario keeps its added queries (JSON and
    the scenarios table)."""
    from estimator.whatif import scenario_from_json, scenario_to_json

    query = AddedQuery(
        operators=[{"id": "count", "query": "q3", "inputs": ["c"], "cost": 0.5}],
        placement={"count": "n2"},
        sources={"c": [0.0, 0.0, 0.0, 20.0]},
    )
    scenario = Scenario(placement={"filter": "n2"}, rate_scale=2.0, add_query=query)
    data = scenario_to_json(scenario)
    assert data["add_query"] == {
        "operators": [{"id": "count", "query": "q3", "inputs": ["c"], "cost": 0.5}],
        "placement": {"count": "n2"},
        "sources": {"c": [0.0, 0.0, 0.0, 20.0]},
    }
    back = scenario_from_json(json.loads(json.dumps(data)))
    assert back == scenario
    # the decoded scenario evaluates like the original: q3 is there
    assert evaluate_scenario(chain(), ARRIVALS, back).per_query["q3"].after == (
        evaluate_scenario(chain(), ARRIVALS, scenario).per_query["q3"].after
    )


@pytest.mark.parametrize(
    ("added", "message"),
    [
        ({"operators": []}, "no operators"),
        ({"operators": ["x"]}, "list of operator entries"),
        ({"operators": [{"id": "k"}], "sources": {"c": [1, -2]}}, "bad count -2"),
        ({"operators": [{"id": "k"}], "sources": {"c": ["1"]}}, "non-number"),
    ],
)
def test_scenario_codec_rejects_a_bad_added_query(added: dict, message: str) -> None:
    from estimator.errors import ScenarioError
    from estimator.whatif import scenario_from_json

    with pytest.raises(ScenarioError, match=message):
        scenario_from_json({"add_query": added})


def test_a_third_registered_estimator_just_works(monkeypatch: pytest.MonkeyPatch) -> None:
    """An estimator registered in ESTIMATORS (here: Mace plus a constant 1 s) is used by
    name for a scenario, with its own label and heading, and no code names it."""
    from estimator import pathaware
    from estimator.whatif import RunInputs, WhatIfEngine

    def plus_one(topology: object, base: Estimate) -> Estimate:
        return dataclasses.replace(
            base,
            series=base.series + 1.0,
            per_query={q: s + 1.0 for q, s in base.per_query.items()},
        )

    monkeypatch.setitem(
        pathaware.ESTIMATORS,
        "plus1",
        pathaware.Estimator("plus-one", plus_one, "plus-one + w + eps"),
    )
    topology = chain()
    mace = evaluate_scenario(topology, ARRIVALS, Scenario(placement={"filter": "n2"}))
    third = evaluate_scenario(
        topology, ARRIVALS, Scenario(placement={"filter": "n2"}), estimator="plus1"
    )
    np.testing.assert_allclose(third.estimate.series, mace.estimate.series + 1.0)
    for query, change in third.per_query.items():
        assert change.after == pytest.approx(mace.per_query[query].after + 1.0)
    engine = WhatIfEngine()
    evaluation = engine.evaluate(RunInputs("k", topology, ARRIVALS), Scenario(), "plus1")
    np.testing.assert_allclose(evaluation.estimate.series, mace.baseline.series + 1.0)
    assert engine.heading("plus1") == "plus-one WC"
    assert pathaware.ESTIMATOR_LABELS["plus1"] == "plus-one"


def test_run_inputs_keep_each_applied_scenario_once_by_its_content() -> None:
    """RunInputs.applied is apply_scenario, kept per scenario: the same changes written
    another way are the same entry, a refused scenario is refused every time."""
    inputs = RunInputs("run", chain(), ARRIVALS)
    scenario = Scenario(placement={"filter": "n2"}, capacities={"n1": 2.0})
    topology, arrivals = inputs.applied(scenario)
    expected_topology, expected_arrivals = apply_scenario(chain(), ARRIVALS, scenario)
    assert topology.to_dict() == expected_topology.to_dict()
    np.testing.assert_array_equal(arrivals.counts, expected_arrivals.counts)
    same = scenario_from_json({"capacities": {"n1": 2}, "placement": {"filter": "n2"}})
    assert inputs.applied(same)[0] is topology
    assert inputs.applied(Scenario())[0] is not topology
    for _ in range(2):
        with pytest.raises(ModelError, match="unknown operator 'nope'"):
            inputs.applied(Scenario(placement={"nope": "n1"}))
