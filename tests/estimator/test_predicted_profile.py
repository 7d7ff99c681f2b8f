"""The predicted node profile: arrivals per sub-bucket pushed through the fitted model
(:func:`estimator.runs.predicted_node_profile`), against plain references."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimator.errors import ModelError
from estimator.model import Topology, topology_from_dict
from estimator.propagation import build_load_model, fine_basis
from estimator.runs import node_loads, predicted_node_profile
from tests.estimator.helpers import chain, chain_document


@st.composite
def cases(
    draw: st.DrawFn, product: bool
) -> tuple[Topology, np.ndarray, np.ndarray, list[dict[str, str]], list[int]]:
    """A random DAG (chains, joins, fan-out; with ``product``, some windowed joins) on 1..3
    nodes, coarse arrivals, arrivals per sub-bucket that need not add up to them (some
    subintervals empty), and one or two placement versions."""
    nodes, n_ops = draw(st.integers(1, 3)), draw(st.integers(1, 6))
    intervals, k = draw(st.integers(1, 5)), draw(st.integers(1, 4))
    operators: list[dict[str, object]] = []
    for j in range(n_ops):
        choices = ["s0", "s1", *(str(o["id"]) for o in operators)]
        inputs = draw(st.lists(st.sampled_from(choices), min_size=1, max_size=2, unique=True))
        operator: dict[str, object] = {
            "id": f"o{j}",
            "query": f"q{j % 2}",
            "inputs": inputs,
            "cost": [draw(st.floats(0.001, 0.1)) for _ in inputs],
            "selectivity": [draw(st.floats(0.0, 3.0)) for _ in inputs],
        }
        if product and len(inputs) == 2 and draw(st.booleans()):
            operator.update({"model": "product", "product_coefficient": 0.01})
        operators.append(operator)
    node_ids = [f"n{i}" for i in range(nodes)]

    def placement() -> dict[str, str]:
        return {str(o["id"]): draw(st.sampled_from(node_ids)) for o in operators}

    topology = topology_from_dict(
        {
            "subinterval": 1.0,
            "nodes": [{"id": n, "capacity": 1.0} for n in node_ids],
            "sources": [{"id": "s0"}, {"id": "s1"}],
            "operators": operators,
            "placement": placement(),
        }
    )
    cells = st.one_of(st.just(0), st.integers(1, 50))
    counts = np.array(draw(st.lists(cells, min_size=2 * intervals, max_size=2 * intervals)))
    size = 2 * intervals * k
    fine = np.array(draw(st.lists(cells, min_size=size, max_size=size)), dtype=float)
    placements = [topology.placement]
    starts = [0]
    if draw(st.booleans()):
        placements.append(placement())
        starts.append(draw(st.integers(0, intervals)))
    return (
        topology,
        counts.reshape(2, intervals).astype(float),
        fine.reshape(2, intervals, k),
        placements,
        starts,
    )


@settings(max_examples=150, deadline=None)
@given(cases(product=True))
def test_summed_over_sub_buckets_it_is_the_models_node_loads(
    case: tuple[Topology, np.ndarray, np.ndarray, list[dict[str, str]], list[int]],
) -> None:
    """Whatever the arrival profile (even one that does not add up to the arrivals, or
    empty), the predicted profile of each node and subinterval adds up to the node DLTS
    the model predicts per subinterval, placement versions respected."""
    topology, counts, fine, placements, starts = case
    model = build_load_model(topology, counts)
    profile = predicted_node_profile(topology, model, fine, placements, starts)
    assert profile.shape == (len(topology.node_ids), *fine.shape[1:])
    assert (profile >= -1e-12).all()
    expected = node_loads(topology, model.operator_dlts(), placements, starts)
    np.testing.assert_allclose(profile.sum(axis=2), expected, rtol=1e-9, atol=1e-12)


@settings(max_examples=100, deadline=None)
@given(cases(product=False))
def test_with_linear_operators_it_is_the_model_evaluated_per_sub_bucket(
    case: tuple[Topology, np.ndarray, np.ndarray, list[dict[str, str]], list[int]],
) -> None:
    """Linear operators and a profile that adds up to the arrivals: each sub-bucket's work
    is the model applied to that sub-bucket's arrivals alone (plain loop over them)."""
    topology, _, fine, placements, starts = case
    counts = fine.sum(axis=2)
    model = build_load_model(topology, counts)
    profile = predicted_node_profile(topology, model, fine, placements, starts)
    for j in range(fine.shape[2]):
        alone = build_load_model(topology, fine[:, :, j]).operator_dlts()
        expected = node_loads(topology, alone, placements, starts)
        np.testing.assert_allclose(profile[:, :, j], expected, rtol=1e-9, atol=1e-12)


def test_a_windowed_join_takes_the_shape_of_its_inputs_meeting_per_sub_bucket() -> None:
    """join = 0.01 * a * b per subinterval: 0.01 * 4 * 4 = 0.16 outputs. Per sub-bucket a
    and b meet only in the first, so all of the join's outputs (and the work of ``out``
    downstream of it) land there; the sources keep their own shapes."""
    document = chain_document(
        sources=[{"id": "a"}, {"id": "b"}],
        operators=[
            {"id": "join", "query": "q", "inputs": ["a", "b"], "cost": [0.1, 0.1],
             "selectivity": [1.0, 1.0], "model": "product", "product_coefficient": 0.01},
            {"id": "out", "query": "q", "inputs": ["join"], "cost": 1.0, "selectivity": 1.0},
        ],
        placement={"join": "n1", "out": "n2"},
    )  # fmt: skip
    topology = topology_from_dict(document)
    model = build_load_model(topology, np.array([[4.0], [4.0]]))
    fine = np.array([[[2.0, 2.0, 0.0, 0.0]], [[2.0, 0.0, 2.0, 0.0]]])
    basis = fine_basis(topology, model, fine)
    np.testing.assert_allclose(basis[:2], fine)
    np.testing.assert_allclose(basis[2], [[0.16, 0.0, 0.0, 0.0]])
    profile = predicted_node_profile(topology, model, fine, [topology.placement], [0])
    np.testing.assert_allclose(profile[0], [[0.4, 0.2, 0.2, 0.0]])  # join: 0.1 a + 0.1 b
    np.testing.assert_allclose(profile[1], [[0.16, 0.0, 0.0, 0.0]])  # out: 1.0 x 0.16


def test_a_subinterval_without_a_profile_is_spread_evenly() -> None:
    """The arrivals of interval 1 have no sub-bucket counts (e.g. ingested before the
    profile was stored): their work is spread evenly, interval 0 follows its profile."""
    topology = chain()
    model = build_load_model(topology, np.array([[10.0, 10.0], [0.0, 0.0]]))
    fine = np.zeros((2, 2, 2))
    fine[0, 0] = [10.0, 0.0]
    profile = predicted_node_profile(topology, model, fine, [topology.placement], [0])
    # n1 hosts parse (0.01 per a) and filter (0.02 per parse output, 2 per a): 0.05 per a
    np.testing.assert_allclose(profile[0], [[0.5, 0.0], [0.25, 0.25]])


def test_a_profile_of_the_wrong_shape_is_a_clear_error() -> None:
    topology = chain()
    model = build_load_model(topology, np.ones((2, 3)))
    with pytest.raises(ModelError, match=r"arrival profile of shape \(2, 2, 4\), expected \(2, 3"):
        predicted_node_profile(topology, model, np.ones((2, 2, 4)), [topology.placement], [0])
