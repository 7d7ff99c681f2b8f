"""Incremental move evaluation equals full re-estimation after the move (property tests)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimator.evaluator import PlacementEvaluator, estimate
from estimator.kernels import commit_rows, node_matrices, node_pass
from estimator.model import Topology, topology_from_dict
from estimator.placement import PlacementProblem
from estimator.placement.mace_hc import HillClimber
from estimator.propagation import build_load_model
from tests.placement.helpers import reference_mace_wc

costs = st.floats(min_value=0.01, max_value=2.0)
selectivities = st.floats(min_value=0.0, max_value=2.0)


@st.composite
def deployments(draw: Any) -> tuple[Topology, np.ndarray, str, str]:
    """A random DAG on 1-5 nodes with a random placement, arrivals and one move."""
    n_nodes = draw(st.integers(1, 5))
    n_sources = draw(st.integers(1, 2))
    n_ops = draw(st.integers(1, 7))
    intervals = draw(st.integers(1, 15))
    sources = [f"s{k}" for k in range(n_sources)]
    nodes = [f"n{k}" for k in range(n_nodes)]
    operators = []
    for j in range(n_ops):
        upstream = sources + [f"o{i}" for i in range(j)]
        inputs = draw(st.lists(st.sampled_from(upstream), min_size=1, max_size=2))
        operators.append(
            {
                "id": f"o{j}",
                "query": draw(st.sampled_from(["q1", "q2"])),
                "inputs": inputs,
                "cost": [draw(costs) for _ in inputs],
                "selectivity": [draw(selectivities) for _ in inputs],
            }
        )
    topology = topology_from_dict(
        {
            "name": "random",
            "nodes": [
                {"id": n, "capacity": draw(st.floats(min_value=0.2, max_value=4.0))} for n in nodes
            ],
            "sources": [{"id": s} for s in sources],
            "operators": operators,
            "placement": {op["id"]: draw(st.sampled_from(nodes)) for op in operators},
        }
    )
    counts = np.array(
        [[draw(st.integers(0, 12)) for _ in range(intervals)] for _ in sources], dtype=float
    )
    return (
        topology,
        counts,
        draw(st.sampled_from(topology.operator_ids)),
        draw(st.sampled_from(nodes)),
    )


@settings(max_examples=150, deadline=None)
@given(deployments())
def test_move_mace_wc_equals_full_estimate_after_the_move(case: Any) -> None:
    topology, counts, op_id, node = case
    evaluator = PlacementEvaluator(topology, build_load_model(topology, counts))
    moved = {**topology.placement, op_id: node}
    full = estimate(topology.with_placement(moved), counts)
    assert evaluator.move_mace_wc(op_id, node) == pytest.approx(full.worst_case, rel=1e-9, abs=1e-9)
    np.testing.assert_allclose(
        evaluator.move_mace_series(op_id, node), full.series, rtol=1e-9, atol=1e-9
    )
    evaluator.apply_move(op_id, node)
    assert evaluator.mace_wc == pytest.approx(full.worst_case, rel=1e-9, abs=1e-9)
    assert evaluator.placement == moved


@settings(max_examples=150, deadline=None)
@given(deployments())
def test_hill_climber_scores_every_target_like_the_plain_definition(case: Any) -> None:
    topology, counts, op_id, _ = case
    problem = PlacementProblem(topology, build_load_model(topology, counts))
    climber = HillClimber(problem, PlacementEvaluator(topology, problem.model))
    op = problem.op_index[op_id]
    others = [k for k in range(problem.n_nodes) if k != climber.assignment[op]]
    targets = np.array(others, dtype=int)
    values, peak_sums = climber.target_mace_wc(op, targets)
    for value, peak_sum, target in zip(values, peak_sums, targets, strict=True):
        moved = {**topology.placement, op_id: problem.node_ids[int(target)]}
        from_scratch = estimate(topology.with_placement(moved), counts)
        assert value == pytest.approx(
            reference_mace_wc(topology, _arrivals(topology, counts), moved), rel=1e-9, abs=1e-9
        )
        peaks = from_scratch.ce_seconds.max(axis=1) if counts.shape[1] else 0.0
        assert peak_sum == pytest.approx(float(np.sum(peaks)), rel=1e-9, abs=1e-9)


def _arrivals(topology: Topology, counts: np.ndarray):
    from estimator.arrivals import Arrivals

    return Arrivals(topology.source_ids, counts)


def _ranked_top3(ce_seconds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per column, the three largest values and rows by a plain sort (lower row on ties)."""
    n, d = ce_seconds.shape
    values = np.full((3, d), -1.0)
    rows = np.full((3, d), -1)
    for p in range(d):
        ranked = sorted(range(n), key=lambda i: (-ce_seconds[i, p], i))[:3]
        values[: len(ranked), p] = ce_seconds[ranked, p]
        rows[: len(ranked), p] = ranked
    return values, rows


@st.composite
def move_sequences(draw: Any) -> tuple[Topology, np.ndarray, list[tuple[str, str]]]:
    topology, counts, _, _ = draw(deployments())
    moves = draw(
        st.lists(
            st.tuples(st.sampled_from(topology.operator_ids), st.sampled_from(topology.node_ids)),
            min_size=1,
            max_size=8,
        )
    )
    return topology, counts, moves


@settings(max_examples=150, deadline=None)
@given(move_sequences())
def test_committed_moves_keep_the_state_of_a_full_evaluation(case: Any) -> None:
    """apply_move rewrites two rows and repairs the top-3; after any sequence of moves
    the state is what a full evaluation of the final placement gives, the top-3 is the
    plain ranking of its own CE/C, and each trial predicted the committed Mace exactly."""
    topology, counts, moves = case
    model = build_load_model(topology, counts)
    evaluator = PlacementEvaluator(topology, model)
    for op_id, node in moves:
        predicted = evaluator.move_mace_series(op_id, node)
        evaluator.apply_move(op_id, node)
        np.testing.assert_array_equal(evaluator.mace, predicted)
        fresh = PlacementEvaluator(topology, model, evaluator.placement)
        for mine, theirs in [
            (evaluator.node_dlts, fresh.node_dlts),
            (evaluator.ce_seconds, fresh.ce_seconds),
            (evaluator.peaks, fresh.peaks),
            (evaluator.mace, fresh.mace),
        ]:
            np.testing.assert_allclose(mine, theirs, rtol=1e-9, atol=1e-9)
        values, rows = _ranked_top3(evaluator.ce_seconds)
        np.testing.assert_array_equal(evaluator.top3[0], values)
        np.testing.assert_array_equal(evaluator.top3[1], rows)
        np.testing.assert_array_equal(evaluator.peaks, evaluator.ce_seconds.max(axis=1))
        assert evaluator.mace_wc == pytest.approx(
            reference_mace_wc(topology, _arrivals(topology, counts), evaluator.placement),
            rel=1e-9,
            abs=1e-9,
        )


def test_commit_rescans_a_column_whose_third_place_it_cannot_vouch_for() -> None:
    """Row 0 leads every column and drops to zero: the new third place (row 3) was
    outside the old top-3, so only a rescan can find it."""
    basis = np.ones((1, 4))
    coef = np.array([[10.0], [9.0], [8.0], [7.0], [6.0]])
    service, capacity = np.zeros(5), np.ones(5)
    dlts, ce = node_matrices(5, 4)
    top_values, top_rows, peaks = node_pass(coef, basis, service, capacity, dlts, ce)
    assert (top_rows.T == [0, 1, 2]).all()
    coef[0] = 0.0  # its operator went to node 4, which had none of it before
    rescanned = commit_rows(
        coef, basis, service, capacity, dlts, ce, top_values, top_rows, peaks, 0, 4
    )
    assert rescanned == 4
    assert (top_rows.T == [1, 2, 3]).all()
    np.testing.assert_array_equal(top_values, ce[[1, 2, 3]])
    np.testing.assert_array_equal(peaks, [0.0, 36.0, 32.0, 28.0, 24.0])


@settings(max_examples=100, deadline=None)
@given(deployments())
def test_target_scores_equal_single_move_trials(case: Any) -> None:
    """The hill climber's batched scoring of one operator's targets is move_mace_wc per target."""
    topology, counts, op_id, _ = case
    problem = PlacementProblem(topology, build_load_model(topology, counts))
    evaluator = PlacementEvaluator(topology, problem.model)
    climber = HillClimber(problem, evaluator)
    op = problem.op_index[op_id]
    others = [k for k in range(problem.n_nodes) if k != climber.assignment[op]]
    targets = np.array(others, dtype=int)
    values, _ = climber.target_mace_wc(op, targets)
    for value, target in zip(values, targets, strict=True):
        assert value == evaluator.move_mace_wc(op_id, problem.node_ids[int(target)])
