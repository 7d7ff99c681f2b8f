"""Nodes inside hosts (threads in a machine) and queries that share operators."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimator.errors import ModelError
from estimator.evaluator import PlacementEvaluator, estimate
from estimator.model import topology_from_dict
from estimator.propagation import build_load_model
from estimator.runs import analyse, node_loads, query_hosts


def plain_ce(load: np.ndarray, capacity: float) -> np.ndarray:
    """CE by the recursion, one subinterval (w = 1 s) after another."""
    out, backlog = [], 0.0
    for work in load:
        backlog = max(0.0, backlog + work - capacity)
        out.append(backlog)
    return np.array(out)


def threads_document(cores: float, costs: tuple[float, float, float]) -> dict[str, Any]:
    """Three operators, each on its own one-thread node, all threads in one machine."""
    return {
        "name": "threads",
        "nodes": [
            {"id": "t1", "capacity": 1.0, "host": "tm"},
            {"id": "t2", "capacity": 1.0, "host": "tm"},
            {"id": "t3", "capacity": 1.0, "host": "tm"},
            {"id": "tm", "capacity": cores},
        ],
        "sources": [{"id": "s"}],
        "operators": [
            {"id": "a", "query": "qa", "inputs": ["s"], "cost": costs[0]},
            {"id": "b", "query": "qb", "inputs": ["a"], "cost": costs[1]},
            {"id": "c", "query": "qc", "inputs": ["a"], "cost": costs[2]},
        ],
        "placement": {"a": "t1", "b": "t2", "c": "t3"},
    }


def test_threads_that_together_want_more_than_the_cores_saturate_the_host() -> None:
    # 100 events/s, 6 ms each on three threads: each thread 60% busy, together 1.8 cores
    topology = topology_from_dict(threads_document(1.0, (0.006, 0.006, 0.006)))
    counts = np.full((1, 10), 100.0)
    result = estimate(topology, counts)
    rows = dict(zip(result.resources, result.ce_seconds, strict=True))
    assert np.all(rows["t1"] == 0) and np.all(rows["t2"] == 0)
    # the host does 1.8 s of work per second with one core: 0.8 s more backlog a second
    np.testing.assert_allclose(rows["tm"], 0.8 * np.arange(1, 11))
    np.testing.assert_allclose(result.series, rows["tm"])
    assert result.resources[result.bottleneck_index[-1]] == "tm"
    # every query's events go through a, on t1 in tm: every query sees the host's backlog
    for query in ("qa", "qb", "qc"):
        np.testing.assert_allclose(result.per_query[query], rows["tm"])


def test_with_enough_cores_the_threads_alone_set_the_estimate() -> None:
    counts = np.array([[100.0, 300.0, 50.0, 0.0, 0.0]])
    hosted = estimate(topology_from_dict(threads_document(3.0, (0.004, 0.002, 0.001))), counts)
    document = threads_document(3.0, (0.004, 0.002, 0.001))
    document["nodes"] = [{"id": n["id"], "capacity": n["capacity"]} for n in document["nodes"]]
    plain = estimate(topology_from_dict(document), counts)
    np.testing.assert_allclose(hosted.series, plain.series)
    for query in ("qa", "qb", "qc"):
        np.testing.assert_allclose(hosted.per_query[query], plain.per_query[query])


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.floats(0.0005, 0.02), min_size=3, max_size=3),
    st.floats(0.5, 3.0),
    st.lists(st.integers(0, 400), min_size=4, max_size=12),
)
def test_host_rows_are_the_sum_of_their_threads(
    costs: list[float], cores: float, rates: list[int]
) -> None:
    """The evaluator and a run's analysis agree with a plain computation: node loads by
    hand, each host's load the sum of its threads', CE per row by the recursion."""
    topology = topology_from_dict(threads_document(cores, tuple(costs)))  # type: ignore[arg-type]
    counts = np.array([rates], dtype=float)
    work = {"a": costs[0] * counts[0], "b": costs[1] * counts[0], "c": costs[2] * counts[0]}
    by_hand = {"t1": work["a"], "t2": work["b"], "t3": work["c"]}
    by_hand["tm"] = work["a"] + work["b"] + work["c"]
    caps = {"t1": 1.0, "t2": 1.0, "t3": 1.0, "tm": cores}
    expected = {n: plain_ce(by_hand[n], caps[n]) / caps[n] for n in by_hand}
    result = estimate(topology, counts)
    for node, ce in zip(result.resources, result.ce_seconds, strict=True):
        np.testing.assert_allclose(ce, expected[node], atol=1e-9)
    np.testing.assert_allclose(result.series, np.max(list(expected.values()), axis=0), atol=1e-9)
    model = build_load_model(topology, counts)
    op_dlts = model.operator_dlts()
    loads = node_loads(topology, op_dlts, [topology.placement], (0,))
    for node, row in zip(topology.node_ids, loads, strict=True):
        np.testing.assert_allclose(row, by_hand[node], atol=1e-12)
    analysis = analyse(topology, loads, [topology.placement], (0,))
    np.testing.assert_allclose(analysis.estimate, result.series, atol=1e-9)
    masks = query_hosts(topology, [topology.placement], (0,), counts.shape[1])
    assert all(masks[q][topology.node_index["tm"]].all() for q in topology.queries)


def test_a_move_between_threads_is_evaluated_with_the_host() -> None:
    document = threads_document(1.0, (0.004, 0.004, 0.004))
    document["nodes"].append({"id": "t4", "capacity": 1.0})  # a thread outside the machine
    topology = topology_from_dict(document)
    counts = np.full((1, 8), 100.0)
    evaluator = PlacementEvaluator(topology, build_load_model(topology, counts))
    assert evaluator.mace_wc == pytest.approx(0.2 * 8)  # 1.2 cores of work on one core
    trial = evaluator.move_mace_wc("c", "t4")
    evaluator.apply_move("c", "t4")
    moved = topology.with_placement({**topology.placement, "c": "t4"})
    assert trial == pytest.approx(estimate(moved, counts).series.max())
    assert evaluator.mace_wc == pytest.approx(0.0)


@pytest.mark.parametrize(
    ("host", "message"),
    [
        ("nowhere", "unknown node 'nowhere'"),
        ("t1", "cannot host itself"),
        ("t2", "'t2' is hosted by 'tm' itself"),
    ],
)
def test_a_bad_host_is_named(host: str, message: str) -> None:
    document = threads_document(2.0, (0.001, 0.001, 0.001))
    document["nodes"][0]["host"] = host
    with pytest.raises(ModelError, match=message):
        topology_from_dict(document)


def test_hosts_round_trip_through_the_file_format() -> None:
    topology = topology_from_dict(threads_document(2.0, (0.001, 0.001, 0.001)))
    assert topology_from_dict(topology.to_dict()) == topology
    assert topology.to_dict()["nodes"][0] == {"id": "t1", "capacity": 1.0, "host": "tm"}


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_a_query_holds_every_operator_upstream_of_its_own(data: st.DataObject) -> None:
    """query_members against a plain reference: every operator from which a path leads
    to one of the query's operators."""
    n = data.draw(st.integers(1, 8))
    operators = []
    for k in range(n):
        inputs = data.draw(
            st.lists(st.sampled_from(["s", *[f"o{j}" for j in range(k)]]), min_size=1, max_size=3)
        )
        query = data.draw(st.sampled_from(["q1", "q2", "q3"]))
        operators.append({"id": f"o{k}", "query": query, "inputs": inputs, "cost": 0.001})
    document = {
        "nodes": [{"id": "n", "capacity": 1.0}],
        "sources": [{"id": "s"}],
        "operators": operators,
        "placement": {o["id"]: "n" for o in operators},
    }
    topology = topology_from_dict(document)
    edges = {(u, o["id"]) for o in operators for u in o["inputs"]}

    def reaches(a: str, b: str) -> bool:
        frontier, seen = [a], {a}
        while frontier:
            x = frontier.pop()
            if x == b:
                return True
            for u, v in edges:
                if u == x and v not in seen:
                    seen.add(v)
                    frontier.append(v)
        return False

    for query in topology.queries:
        own = [o["id"] for o in operators if o["query"] == query]
        expected = {o["id"] for o in operators if any(reaches(o["id"], x) for x in own)}
        assert set(topology.operators_of_query(query)) == expected
