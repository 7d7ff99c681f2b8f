"""Network links (section VII-B): bandwidth as a resource, propagation delay as bounds."""

from __future__ import annotations

import numpy as np
import pytest

from estimator.arrivals import arrivals_from_matrix
from estimator.evaluator import estimate, path_delays
from tests.estimator.helpers import chain

ARRIVALS = arrivals_from_matrix(["a", "b"], np.array([[1000.0, 0.0, 0.0], [0.0, 0.0, 0.0]]))


def test_link_bandwidth_is_a_resource() -> None:
    topology = chain(links=[{"from": "n1", "to": "n2", "bandwidth": 10000.0, "delay": 0.0}])
    result = estimate(topology, ARRIVALS)
    assert result.resources == ("n1", "n2", "n1->n2")
    # filter (n1) emits 0.25 * 2 * 1000 = 500 events of 100 bytes to join (n2) at p0:
    # 50 kB against 10 kB per subinterval -> CE 40k, 30k, 20k bytes = 4, 3, 2 s.
    np.testing.assert_allclose(result.dlts[2], [50000.0, 0.0, 0.0])
    np.testing.assert_allclose(result.ce_seconds[2], [4.0, 3.0, 2.0])
    # n1 DLTS: 0.01 * 1000 + 0.02 * 2000 = 50 CPU-s -> CE 49, 48, 47: the CPU stays the bottleneck.
    assert result.bottleneck == ["n1", "n1", "n1"]
    # eps grows by the largest per-event transmission time, 100 B / 10 kB/s.
    no_link = estimate(chain(), ARRIVALS)
    assert result.epsilon == pytest.approx(no_link.epsilon + 0.01)


def test_same_node_edges_do_not_use_links() -> None:
    topology = chain(
        placement={"parse": "n1", "filter": "n2", "join": "n2"},
        links=[{"from": "n1", "to": "n2", "bandwidth": 10000.0}],
    )
    result = estimate(topology, ARRIVALS)
    # Only parse -> filter crosses: 2000 events of 100 B.
    np.testing.assert_allclose(result.dlts[2], [200000.0, 0.0, 0.0])


def test_propagation_delay_bounds() -> None:
    topology = chain(links=[{"from": "n1", "to": "n2", "delay": 0.5}])
    low, high = path_delays(topology, topology.placement)
    # Paths a->parse->filter->join (one n1->n2 hop) and b->join (no hop).
    assert low == {"n1": 0.5, "n2": 0.0}
    assert high == {"n1": 0.5, "n2": 0.5}
    result = estimate(topology, ARRIVALS)
    assert result.resources == ("n1", "n2")
    np.testing.assert_allclose(
        result.lower, np.maximum(result.ce_seconds[0] + 0.5, result.ce_seconds[1])
    )
    np.testing.assert_allclose(
        result.upper, np.max(result.ce_seconds + 0.5, axis=0) + 1.0 + result.epsilon
    )
    np.testing.assert_allclose(result.series, result.ce_seconds.max(axis=0))


def test_evaluator_mace_includes_link_resources() -> None:
    from estimator.evaluator import PlacementEvaluator
    from estimator.model import topology_from_dict
    from estimator.propagation import build_load_model

    topology = topology_from_dict(
        {
            "nodes": [{"id": "n1", "capacity": 10.0}, {"id": "n2", "capacity": 10.0}],
            "sources": [{"id": "s"}],
            "operators": [
                {"id": "a", "inputs": ["s"], "cost": 0.001},
                {"id": "b", "inputs": ["a"], "cost": 0.001},
            ],
            "placement": {"a": "n1", "b": "n1"},
            "links": [{"from": "n1", "to": "n2", "bandwidth": 1000.0}],
        }
    )
    counts = np.array([[50.0, 50.0, 0.0, 0.0]])
    evaluator = PlacementEvaluator(topology, build_load_model(topology, counts))
    assert evaluator.mace_wc == 0.0
    # b on n2: 50 events of 100 B per subinterval cross a 1000 B/s link: CE 4000, 8000 B.
    assert evaluator.move_mace_wc("b", "n2") == pytest.approx(8.0)
    evaluator.apply_move("b", "n2")
    assert evaluator.mace_wc == pytest.approx(8.0)
    assert evaluator.estimate().worst_case == pytest.approx(8.0)
    # the estimate it keeps for the placement is the one computed afresh
    fresh = estimate(topology.with_placement({"a": "n1", "b": "n2"}), counts)
    kept = evaluator.estimate()
    assert kept.resources == fresh.resources
    for field in ("series", "ce_seconds", "lower", "upper"):
        np.testing.assert_allclose(getattr(kept, field), getattr(fresh, field))
