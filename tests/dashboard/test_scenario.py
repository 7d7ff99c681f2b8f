"""What-if scenario parsing and evaluation against a from-scratch reference."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from estimator import whatif
from estimator.arrivals import Arrivals
from estimator.errors import ScenarioError
from estimator.evaluator import estimate
from estimator.model import replace_capacities, topology_from_dict
from estimator.propagation import build_load_model
from estimator.whatif import (
    RunInputs,
    WhatIfEngine,
    parse_factor,
    parse_positive,
    scenario_from_json,
    scenario_to_json,
)
from tests.dashboard.builders import SMALL_TOPOLOGY


@pytest.fixture
def inputs() -> RunInputs:
    topology = topology_from_dict(SMALL_TOPOLOGY)
    counts = np.array([[5.0, 12.0, 5.0, 0.0, 10.0, 20.0, 3.0]])
    return RunInputs("small", topology, Arrivals(("s",), counts))


@pytest.mark.parametrize("value", [None, "", "abc", 0, -1, float("nan"), float("inf"), True])
def test_parse_positive_rejects(value: object) -> None:
    with pytest.raises(ScenarioError):
        parse_positive(value, "capacity", upper=10)


def test_parse_positive_bounds() -> None:
    assert parse_positive("2.5", "x", upper=10) == 2.5
    with pytest.raises(ScenarioError, match="out of range"):
        parse_positive(11, "rate scale", upper=10)
    assert parse_factor(3) == 3
    with pytest.raises(ScenarioError, match="whole number"):
        parse_factor(1.5)


def test_scenario_json_round_trip() -> None:
    data = {
        "placement": {"a": "n1"},
        "capacities": {"n1": 3.0},
        "add_nodes": {"n9": 1.5},
        "remove_nodes": [],
        "rate_scale": 2.0,
        "subinterval_factor": 2,
    }
    assert scenario_to_json(scenario_from_json(data)) == data
    with pytest.raises(ScenarioError, match="capacity of 'n1'"):
        scenario_from_json({**data, "capacities": {"n1": -1}})


def test_engine_matches_full_estimate(inputs: RunInputs, monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[object] = []

    def counting(*args: Any) -> Any:
        built.append(args)
        return build_load_model(*args)

    monkeypatch.setattr(whatif, "build_load_model", counting)
    engine = WhatIfEngine()
    scenario = scenario_from_json(
        {"placement": {"a": "n1"}, "capacities": {"n2": 0.5}, "rate_scale": 1.5}
    )
    result = engine.evaluate(inputs, scenario)
    reference_topology = replace_capacities(
        inputs.topology.with_placement({"a": "n1", "b": "n2", "c": "n1"}), {"n2": 0.5}
    )
    reference = estimate(reference_topology, inputs.arrivals.scaled(1.5))
    np.testing.assert_allclose(result.estimate.series, reference.series, rtol=1e-12)
    for query in ("q1", "q2"):
        np.testing.assert_allclose(
            result.estimate.per_query[query], reference.per_query[query], rtol=1e-12
        )
    # the cached model is reused for a different move with the same load
    moved = scenario_from_json({"placement": {"b": "n1"}, "rate_scale": 1.5})
    again = engine.evaluate(inputs, moved)
    placement = {"a": "n2", "b": "n1", "c": "n1"}
    ref2 = estimate(inputs.topology.with_placement(placement), inputs.arrivals.scaled(1.5))
    np.testing.assert_allclose(again.estimate.series, ref2.series, rtol=1e-12)
    assert len(built) == 1
    # a different rate scale is another load: one more model
    engine.evaluate(inputs, scenario_from_json({"rate_scale": 2.0}))
    assert len(built) == 2


def test_engine_subinterval_factor(inputs: RunInputs) -> None:
    result = WhatIfEngine().evaluate(inputs, scenario_from_json({"subinterval_factor": 2}))
    assert result.topology.subinterval == 2.0
    assert result.estimate.series.size == 4
    np.testing.assert_allclose(result.times, [0.0, 2.0, 4.0, 6.0])


def test_engine_rejects_bad_edits(inputs: RunInputs) -> None:
    engine = WhatIfEngine()
    with pytest.raises(ScenarioError, match="unknown node 'n7'"):
        engine.evaluate(inputs, scenario_from_json({"placement": {"a": "n7"}}))
    with pytest.raises(ScenarioError, match="n1"):
        engine.evaluate(inputs, scenario_from_json({"remove_nodes": ["n1"]}))
