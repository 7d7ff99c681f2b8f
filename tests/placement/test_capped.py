"""A cap on the moves a placement search proposes (:func:`estimator.placement.capped`)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimator.errors import ModelError
from estimator.model import topology_from_dict
from estimator.placement import PlacementProblem, capped, moves, place
from estimator.placement.common import Clock


def _problem(costs: list[float], nodes: int = 2) -> PlacementProblem:
    topology = topology_from_dict(
        {
            "nodes": [{"id": f"n{k}", "capacity": 1.0} for k in range(nodes)],
            "sources": [{"id": "s"}],
            "operators": [
                {"id": f"o{k}", "query": f"q{k % 2}", "inputs": ["s"], "cost": c}
                for k, c in enumerate(costs)
            ],
            "placement": {f"o{k}": "n0" for k in range(len(costs))},
        }
    )
    return PlacementProblem.from_arrivals(topology, np.full((1, 20), 4.0))


def test_the_cap_keeps_the_move_that_gains_most() -> None:
    """a (0.2 s per event) and the light b and c all on n1; a search moved all three to
    n2. With one move allowed, only a moves: undoing b, then c, costs nothing."""
    problem = _problem([0.2, 0.01, 0.01, 0.2])
    found = problem.result("test", np.array([1, 1, 1, 0]), Clock(1.0), 1)
    one = capped(problem, found, 1)
    assert one.placement == {"o0": "n1", "o1": "n0", "o2": "n0", "o3": "n0"}
    assert one.mace_wc == pytest.approx(problem.full_mace_wc(one.placement))
    assert capped(problem, found, 0).placement == dict(problem.topology.placement)
    assert capped(problem, found, 3) is found


def test_a_bad_cap_is_refused() -> None:
    problem = _problem([0.1])
    found = problem.result("test", np.array([1]), Clock(1.0), 1)
    with pytest.raises(ModelError, match="max moves"):
        capped(problem, found, -1)


@settings(max_examples=40, deadline=None)
@given(
    costs=st.lists(st.sampled_from([0.01, 0.05, 0.1, 0.2, 0.3]), min_size=1, max_size=5),
    targets=st.lists(st.integers(0, 2), min_size=5, max_size=5),
    cap=st.integers(0, 5),
)
def test_capped_keeps_a_subset_of_the_moves_within_the_cap(
    costs: list[float], targets: list[int], cap: int
) -> None:
    """The capped placement moves at most ``cap`` operators, each to where the search put
    it; it is never worse than the current placement, and never better than the best
    subset of the search's moves of that size (a plain enumeration)."""
    problem = _problem(costs, nodes=3)
    found = problem.result("test", np.array(targets[: len(costs)]), Clock(1.0), 1)
    result = capped(problem, found, cap)
    moved = moves(problem, result.placement)
    assert len(moved) <= cap
    assert all(result.placement[op] == found.placement[op] for op in moved)
    current = dict(problem.topology.placement)
    assert result.mace_wc == pytest.approx(problem.full_mace_wc(result.placement))
    assert result.mace_wc <= problem.full_mace_wc(current) + 1e-9
    searched = moves(problem, found.placement)
    best = min(
        problem.full_mace_wc({**current, **{op: found.placement[op] for op in subset}})
        for size in range(min(cap, len(searched)) + 1)
        for subset in itertools.combinations(searched, size)
    )
    assert result.mace_wc >= best - 1e-9


def test_place_takes_the_cap() -> None:
    problem = _problem([0.2, 0.2, 0.2, 0.2])
    result = place(problem.topology, np.full((1, 20), 4.0), budget=0.5, max_moves=1,
                   rng=np.random.default_rng(0))  # fmt: skip
    assert len(moves(problem, result.placement)) <= 1
