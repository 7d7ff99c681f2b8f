"""Per-query Mace: the maximum over the nodes hosting the query's operators."""

from __future__ import annotations

import numpy as np

from estimator.arrivals import arrivals_from_matrix
from estimator.evaluator import estimate
from estimator.model import topology_from_dict
from tests.estimator.helpers import chain, chain_document


def test_per_query_takes_only_hosting_nodes() -> None:
    document = chain_document()
    document["nodes"].append({"id": "n3", "capacity": 1.0})
    document["placement"]["join"] = "n3"
    document["operators"][2]["cost"] = [0.2, 0.05]
    topology = topology_from_dict(document)
    a = np.array([300.0, 0.0, 0.0, 0.0])  # n1: 0.01 * 300 + 0.02 * 600 = 15 CPU-s, then idle
    b = np.array([0.0, 0.0, 0.0, 0.0])
    result = estimate(topology, arrivals_from_matrix(["a", "b"], np.vstack([a, b])))
    # q1 lives on n1 only: CE 14, 13, 12, 11 (capacity 1, w 1).
    np.testing.assert_allclose(result.per_query["q1"], [14.0, 13.0, 12.0, 11.0])
    # q2 (join) lives on n3: DLTS 0.2 * 150 = 30 at p0 -> CE 29, 28, 27, 26.
    np.testing.assert_allclose(result.per_query["q2"], [29.0, 28.0, 27.0, 26.0])
    np.testing.assert_allclose(result.series, [29.0, 28.0, 27.0, 26.0])
    assert result.bottleneck == ["n3"] * 4


def test_query_sharing_a_node_sees_its_backlog() -> None:
    topology = chain(placement={"parse": "n1", "filter": "n2", "join": "n2"})
    a = np.array([0.0, 0.0])
    b = np.array([100.0, 0.0])  # only the join's b port is loaded: 5 CPU-s on n2 (C = 2)
    result = estimate(topology, arrivals_from_matrix(["a", "b"], np.vstack([a, b])))
    np.testing.assert_allclose(result.per_query["q2"], [1.5, 0.5])
    # q1's filter shares n2, so q1 waits behind the same backlog.
    np.testing.assert_allclose(result.per_query["q1"], [1.5, 0.5])
