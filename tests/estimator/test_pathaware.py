"""Path-aware fluid tandem estimator: equals Mace on one node, never below Mace,
and a hand-computed two-node tandem case."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimator.errors import ModelError
from estimator.evaluator import estimate
from estimator.mace import estimate_from_dlts
from estimator.model import topology_from_dict
from estimator.pathaware import (
    ESTIMATORS,
    estimate_path_aware,
    estimator_by_name,
    machine_paths,
    path_aware_from_dlts,
    release_lag,
)


def tandem(placement: dict[str, str], capacities: tuple[float, float] = (1.0, 1.0)) -> Any:
    return topology_from_dict(
        {
            "name": "tandem",
            "subinterval": 1.0,
            "nodes": [
                {"id": "n1", "capacity": capacities[0]},
                {"id": "n2", "capacity": capacities[1]},
            ],
            "sources": [{"id": "s"}],
            "operators": [
                {"id": "a", "query": "q", "inputs": ["s"], "cost": 0.5, "selectivity": 1.0},
                {"id": "b", "query": "q", "inputs": ["a"], "cost": 0.25, "selectivity": 1.0},
                {"id": "c", "query": "q", "inputs": ["b"], "cost": 0.25, "selectivity": 1.0},
            ],
            "placement": placement,
        }
    )


def lindley(load: np.ndarray, service: float) -> np.ndarray:
    """Plain-loop CE, the reference."""
    out, ce = [], 0.0
    for value in load:
        ce = max(0.0, ce + value - service)
        out.append(ce)
    return np.array(out)


counts = st.lists(st.integers(0, 12), min_size=1, max_size=30)


@settings(max_examples=60, deadline=None)
@given(counts)
def test_single_node_equals_mace_exactly(series: list[int]) -> None:
    topology = tandem({"a": "n1", "b": "n1", "c": "n1"})
    arrivals = np.array([series], dtype=float)
    path = estimate_path_aware(topology, arrivals)
    reference = lindley(arrivals[0] * 1.0, 1.0)
    np.testing.assert_allclose(path.series, reference, atol=1e-9)
    np.testing.assert_allclose(path.series, estimate(topology, arrivals).series, atol=1e-9)


@settings(max_examples=60, deadline=None)
@given(
    counts,
    st.sampled_from(["n1", "n2"]),
    st.sampled_from(["n1", "n2"]),
    st.sampled_from(["n1", "n2"]),
    st.floats(0.3, 3.0),
)
def test_never_below_mace(series: list[int], a: str, b: str, c: str, cap: float) -> None:
    topology = tandem({"a": a, "b": b, "c": c}, (1.0, cap))
    arrivals = np.array([series], dtype=float)
    path = estimate_path_aware(topology, arrivals)
    mace = estimate(topology, arrivals)
    assert np.all(path.series >= mace.series - 1e-9)
    assert np.all(path.per_query["q"] >= mace.per_query["q"] - 1e-9)
    np.testing.assert_allclose(path.upper, path.series + 1.0 + path.epsilon)


def reference_tandem(x: list[np.ndarray], w: float) -> np.ndarray:
    """The release recursion written as a plain double loop."""
    intervals = len(x[0])
    release = [(p + 1) * w for p in range(intervals)]
    for work in x:
        out: list[float] = []
        for p in range(intervals):
            arrived = release[p]
            before = release[p - 1] if p else 0.0
            previous = out[p - 1] if p else -np.inf
            out.append(max(arrived, max(previous, before) + work[p]))
        release = out
    return np.array(release) - (np.arange(intervals) + 1) * w


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.floats(0.0, 5.0), min_size=6, max_size=6), min_size=1, max_size=4),
    st.floats(0.5, 2.0),
)
def test_vectorized_recursion_matches_loop(work: list[list[float]], w: float) -> None:
    rows = np.array(work)
    stages = np.arange(len(work))[None, :]
    lag = release_lag(rows, stages, np.zeros_like(stages, dtype=float), w)
    np.testing.assert_allclose(lag[0], np.maximum(reference_tandem(list(rows), w), 0), atol=1e-9)


def test_hand_computed_two_node_tandem() -> None:
    # n1 gets 2 s of work in subinterval 0; n2 gets 0.5 s then 1.5 s (w = 1, C = 1).
    # n1 releases subinterval 0 at t = 2 and subinterval 1 at t = 2 as well.
    # n2, subinterval 0: its 0.5 s flows in over [0, 2] -> done at t = 2, lag 1.
    # n2, subinterval 1: work can start only at t = 2 (n1 releases p = 0 first),
    # 1.5 s -> done at 3.5, lag 3.5 - 2 = 1.5. Mace says max(0, 0.5) = 0.5 there.
    dlts = np.array([[2.0, 0.0], [0.5, 1.5]])
    base = estimate_from_dlts(dlts, np.ones(2), ["n1", "n2"], 1.0, 0.0, {"q": np.ones(2, bool)})
    np.testing.assert_allclose(base.series, [1.0, 0.5])
    topology = tandem({"a": "n1", "b": "n2", "c": "n2"})
    paths = machine_paths(topology, base.resources)
    path = path_aware_from_dlts(base, paths)
    np.testing.assert_allclose(path.series, [1.0, 1.5])
    np.testing.assert_allclose(path.per_query["q"], [1.0, 1.5])
    assert path.bottleneck == ["n1", "n2"]


def test_paths_fold_revisits_and_include_link_stages() -> None:
    topology = topology_from_dict(
        {
            **tandem({"a": "n1", "b": "n2", "c": "n1"}).to_dict(),
            "links": [{"from": "n1", "to": "n2", "delay": 0.25, "bandwidth": 1000}],
        }
    )
    resources = ["n1", "n2", "n1->n2"]
    (path,) = machine_paths(topology, resources)["q"]
    assert [(s.resource, s.delay) for s in path] == [(0, 0.0), (2, 0.25), (1, 0.0)]


def test_registry_and_unknown_name() -> None:
    assert set(ESTIMATORS) == {"mace", "path", "burst", "origin"}
    assert estimator_by_name("path") is estimate_path_aware
    with pytest.raises(ModelError, match="unknown estimator 'fluid'"):
        estimator_by_name("fluid")
