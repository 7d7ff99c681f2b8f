"""Input stimulus series through selectivities, two-input operators and the product model."""

from __future__ import annotations

import numpy as np

from estimator.arrivals import arrivals_from_matrix
from estimator.evaluator import estimate
from estimator.model import topology_from_dict
from estimator.propagation import build_load_model
from tests.estimator.helpers import chain, chain_document

A = np.array([100.0, 0.0, 40.0])
B = np.array([10.0, 20.0, 0.0])


def test_series_follow_selectivities_and_ports() -> None:
    topology = chain()
    model = build_load_model(topology, np.vstack([A, B]))
    index = {o: k for k, o in enumerate(topology.operator_ids)}
    parse_out = 2.0 * A
    filter_out = 0.25 * parse_out
    np.testing.assert_allclose(model.input_series(index["filter"], 0), parse_out)
    np.testing.assert_allclose(model.input_series(index["join"], 0), filter_out)
    np.testing.assert_allclose(model.input_series(index["join"], 1), B)
    np.testing.assert_allclose(model.output_series(index["join"]), 1.0 * filter_out + 0.5 * B)
    dlts = model.operator_dlts()
    np.testing.assert_allclose(dlts[index["parse"]], 0.01 * A)
    np.testing.assert_allclose(dlts[index["filter"]], 0.02 * parse_out)
    np.testing.assert_allclose(dlts[index["join"]], 0.1 * filter_out + 0.05 * B)


def test_node_dlts_sums_hosted_operators() -> None:
    topology = chain()
    result = estimate(topology, arrivals_from_matrix(["a", "b"], np.vstack([A, B])))
    n1 = 0.01 * A + 0.02 * 2.0 * A
    n2 = 0.1 * 0.5 * A + 0.05 * B
    np.testing.assert_allclose(result.dlts[0], n1)
    np.testing.assert_allclose(result.dlts[1], n2)
    # n1: DLTS 5, 0, 2 against 1 CPU-s of service per subinterval.
    np.testing.assert_allclose(result.ce[0], [4.0, 3.0, 4.0])
    # n2 (C = 2): DLTS 5.5, 1, 2 -> CE 3.5, 2.5, 2.5 CPU-s, i.e. half that in seconds.
    np.testing.assert_allclose(result.ce[1], [3.5, 2.5, 2.5])
    np.testing.assert_allclose(result.ce_seconds[1], [1.75, 1.25, 1.25])


def test_product_model_multiplies_inputs() -> None:
    document = chain_document()
    document["operators"][2].update({"model": "product", "product_coefficient": 0.01})
    document["operators"].append(
        {"id": "sink", "query": "q2", "inputs": ["join"], "cost": 0.5, "selectivity": 1.0}
    )
    document["placement"]["sink"] = "n2"
    topology = topology_from_dict(document)
    model = build_load_model(topology, np.vstack([A, B]))
    index = {o: k for k, o in enumerate(topology.operator_ids)}
    filter_out = 0.5 * A
    joined = 0.01 * filter_out * B
    np.testing.assert_allclose(model.output_series(index["join"]), joined)
    np.testing.assert_allclose(model.operator_dlts()[index["sink"]], 0.5 * joined)
    # The join's own cost stays linear in its inputs.
    np.testing.assert_allclose(model.operator_dlts()[index["join"]], 0.1 * filter_out + 0.05 * B)
