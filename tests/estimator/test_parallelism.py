"""Parallelism, slots, TaskManagers and cores as resources, against plain references."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimator.bundles import cycle_excess, full_bundle_work
from estimator.errors import ScenarioError
from estimator.model import Topology, topology_from_dict
from estimator.parallelism import (
    Edits,
    expand,
    fewest_subtasks,
    max_parallelism,
    predict,
    query_masks,
    resolve,
    resource_loads,
    shape_of,
    utilisation_rule,
    worst_case,
)
from estimator.python_worker import with_python_workers
from estimator.runs import analyse, node_loads, query_hosts


def flink_topology(vertices: int, cores: float, parallelism: list[int]) -> Topology:
    """A chain of ``vertices`` vertices (two chained operators each, on the vertex's
    threads node of capacity = its parallelism) inside one TaskManager, a sink per
    query: the shape connectors/flink/graph.py gives."""
    nodes: list[dict[str, Any]] = [
        {"id": f"v{k}-threads", "capacity": float(parallelism[k]), "host": "tm-a"}
        for k in range(vertices)
    ]
    nodes.append({"id": "tm-a", "capacity": cores})
    operators, placement = [], {}
    upstream = "src"
    for k in range(vertices):
        for part in ("head", "tail"):
            op = f"v{k}-{part}"
            operators.append(
                {
                    "id": op,
                    "query": "q1" if k < 2 else "q2",
                    "inputs": [upstream],
                    "cost": 0.01 * (k + 1),
                    "selectivity": 1.0,
                }
            )
            placement[op] = f"v{k}-threads"
            upstream = op
    return topology_from_dict(
        {
            "name": "flink",
            "subinterval": 1.0,
            "nodes": nodes,
            "sources": [{"id": "src"}],
            "operators": operators,
            "placement": placement,
        }
    )


def with_python(topology: Topology, vertices: set[int], bundles: bool = False) -> Topology:
    """``topology`` with the operators of ``vertices`` measured as Python operators (their
    work outside the thread), so their threads share their TaskManager's Python worker;
    with ``bundles``, the TaskManager's Python operators run bundles of at most 20
    records every 0.5 s, which their threads take."""
    if bundles:
        nodes = tuple(
            replace(n, bundle_time=0.5, bundle_size=20) if n.id == "tm-a" else n
            for n in topology.nodes
        )
        topology = replace(topology, nodes=nodes)
    stats = pd.DataFrame(
        [
            {
                "operator": op, "port": 0, "interval": 0, "events_in": 1.0,
                "events_out": 1.0, "cpu_seconds": 0.1,
                "work_seconds": 0.01 if int(op[1:].split("-")[0]) in vertices else np.nan,
            }
            for op in topology.operator_ids
        ]
    )  # fmt: skip
    return with_python_workers(topology, stats)


loads_strategy = st.integers(1, 12).flatmap(
    lambda n: st.lists(
        st.lists(st.floats(0, 5, allow_nan=False), min_size=n, max_size=n),
        min_size=1,
        max_size=1,
    )
)


@settings(max_examples=60, deadline=None)
@given(
    vertices=st.integers(1, 4),
    cores=st.sampled_from([1.0, 2.0, 3.5]),
    seed=st.integers(0, 10_000),
    intervals=st.integers(1, 15),
    python=st.sets(st.integers(0, 3)),
    bundles=st.booleans(),
)
def test_parallelism_one_on_one_taskmanager_is_todays_model(
    vertices: int, cores: float, seed: int, intervals: int, python: set[int], bundles: bool
) -> None:
    """Python vertices included: their threads share the TaskManager's worker, and run
    their bundles as the run's analysis plays them."""
    topology = with_python(flink_topology(vertices, cores, [1] * vertices), python, bundles)
    rng = np.random.default_rng(seed)
    op_dlts = rng.uniform(0, 2, (len(topology.operator_ids), intervals))
    shape = shape_of(topology)
    deployment = resolve(shape, Edits())
    resources = expand(shape, deployment)
    placement = [dict(topology.placement)]
    today = node_loads(topology, op_dlts, placement, [0])
    assert resources.ids == topology.node_ids
    assert np.array_equal(resources.capacities, [n.capacity for n in topology.nodes])
    assert np.array_equal(resource_loads(topology, shape, resources, op_dlts), today)
    hosts = query_hosts(topology, placement, [0], intervals)
    masks = query_masks(topology, shape, resources)
    assert {q: list(m) for q, m in masks.items()} == {q: list(h[:, 0]) for q, h in hosts.items()}
    predicted = predict(topology, shape, deployment, op_dlts)
    recorded = analyse(topology, today, placement, [0], bundle_work=full_bundle_work(topology))
    assert predicted.bundle_rise.keys() == recorded.bundle_rise.keys()
    assert np.array_equal(predicted.estimate, recorded.estimate)
    for query in topology.queries:
        assert np.array_equal(predicted.per_query[query], recorded.per_query[query])


def reference_expansion(
    parallelism: list[int], slots: int, taskmanagers: int | None, cores: float,
    unit_loads: np.ndarray, python: set[int],
) -> dict[str, np.ndarray]:  # fmt: skip
    """Plain loops: shared slot k holds subtask k of every vertex; slot k is on
    TaskManager k // slots; a subtask carries 1/p of its vertex; a TaskManager the sum
    of its subtasks, except those of the ``python`` vertices, summed by the Python
    worker of their TaskManager. Returns each resource's load by id."""
    needed = max(parallelism)
    count = taskmanagers if taskmanagers is not None else max(1, math.ceil(needed / slots))
    out: dict[str, np.ndarray] = {}
    names = ["tm-a"] + [f"tm-added-{t}" for t in range(1, count)]
    tm_load = [np.zeros(unit_loads.shape[1]) for _ in range(count)]
    for v, p in enumerate(parallelism):
        for k in range(p):
            name = f"v{v}-threads" if p == 1 else f"v{v}-threads#{k}"
            out[name] = unit_loads[v] / p
            if v in python:
                worker = f"python-worker@{names[k // slots]}"
                out[worker] = out.get(worker, 0.0) + unit_loads[v] / p
            else:
                tm_load[k // slots] = tm_load[k // slots] + unit_loads[v] / p
    for t in range(count):
        out[names[t]] = tm_load[t]
    return out


@settings(max_examples=80, deadline=None)
@given(
    parallelism=st.lists(st.integers(1, 7), min_size=1, max_size=4),
    slots=st.integers(1, 4),
    extra_tms=st.none() | st.integers(0, 2),
    cores=st.sampled_from([4.0, 6.5]),
    seed=st.integers(0, 10_000),
    python=st.sets(st.integers(0, 3)),
)
def test_expansion_matches_a_plain_reference(
    parallelism: list[int], slots: int, extra_tms: int | None, cores: float, seed: int,
    python: set[int],
) -> None:  # fmt: skip
    vertices = len(parallelism)
    python = {v for v in python if v < vertices}
    topology = with_python(flink_topology(vertices, 2.0, [1] * vertices), python)
    rng = np.random.default_rng(seed)
    op_dlts = rng.uniform(0, 2, (len(topology.operator_ids), 6))
    shape = shape_of(topology)
    taskmanagers = None
    if extra_tms is not None:
        taskmanagers = math.ceil(max(parallelism) / slots) + extra_tms
    edits = Edits(
        parallelism={f"v{k}-threads": p for k, p in enumerate(parallelism)},
        slots=slots,
        taskmanagers=taskmanagers,
        cores=cores,
    )
    deployment = resolve(shape, edits)
    resources = expand(shape, deployment)
    loads = resource_loads(topology, shape, resources, op_dlts)
    unit_loads = op_dlts[0::2] + op_dlts[1::2]  # each vertex's head and tail
    expected = reference_expansion(parallelism, slots, taskmanagers, cores, unit_loads, python)
    assert set(resources.ids) == set(expected)
    for row, node in enumerate(resources.ids):
        assert np.allclose(loads[row], expected[node], rtol=1e-12, atol=1e-12), node
        tm = node.startswith("tm-")
        assert resources.capacities[row] == (cores if tm else 1.0)
    assert deployment.subtasks == sum(parallelism)
    # no TaskManager holds more subtasks of one vertex than it has slots
    for unit, rows in resources.unit_rows.items():
        per_tm = [resources.host_row[r] for r in rows]
        assert max(per_tm.count(t) for t in set(per_tm)) <= slots, unit


def test_a_keyed_operator_split_evenly_halves_its_backlog_per_subtask() -> None:
    topology = flink_topology(1, 4.0, [1])
    op_dlts = np.array([[3.0, 0.0], [0.0, 0.0]])  # 3 s of work in 1 s on one thread
    shape = shape_of(topology)
    one = predict(topology, shape, resolve(shape, Edits()), op_dlts)
    two = predict(topology, shape, resolve(shape, Edits({"v0-threads": 2}, slots=2)), op_dlts)
    assert worst_case(one) == pytest.approx(2.0)  # 2 CPU-s waiting on one thread
    assert worst_case(two) == pytest.approx(0.5)  # 1.5 on each of two threads, 0.5 left


def test_threads_sharing_too_few_cores_saturate_the_taskmanager() -> None:
    topology = flink_topology(1, 1.0, [1])
    op_dlts = np.array([[1.6, 0.0], [0.0, 0.0]])
    shape = shape_of(topology)
    analysis = predict(topology, shape, resolve(shape, Edits({"v0-threads": 2}, slots=2)), op_dlts)
    assert worst_case(analysis) == pytest.approx(0.6)  # 0.8 per thread, 1.6 on one core
    assert analysis.bottleneck_nodes[0] == "tm-a"
    more = resolve(shape, Edits({"v0-threads": 2}, slots=1))  # a second TaskManager
    assert more.taskmanagers == 2
    assert worst_case(predict(topology, shape, more, op_dlts)) == pytest.approx(0.0)


def with_slots(topology: Topology, slots: int) -> Topology:
    """``topology`` with its TaskManager recording ``slots`` task slots, as the collector
    writes it from Flink's ``slotsNumber``."""
    document = topology.to_dict()
    for node in document["nodes"]:
        if node["id"] == "tm-a":
            node["slots"] = slots
    return topology_from_dict(document)


def test_a_rescale_fills_the_recorded_slots_before_it_needs_a_taskmanager() -> None:
    topology = flink_topology(1, 1.0, [1])
    op_dlts = np.array([[1.6, 0.0], [0.0, 0.0]])
    unknown = shape_of(topology)
    assert not unknown.slots_recorded
    assert resolve(unknown, Edits({"v0-threads": 2})).taskmanagers == 2  # 1 slot each
    eight = shape_of(with_slots(topology, 8))
    assert eight.slots_recorded and eight.slots == 8
    deployment = resolve(eight, Edits({"v0-threads": 2}))
    assert (deployment.taskmanagers, deployment.slots) == (1, 8)
    # both subtasks on the one TaskManager's core: 0.8 each, 1.6 on one core
    assert worst_case(predict(topology, eight, deployment, op_dlts)) == pytest.approx(0.6)
    # a slot count the user sets wins over the recorded one
    assert resolve(eight, Edits({"v0-threads": 2}, slots=1)).taskmanagers == 2


def with_python_mode(topology: Topology, mode: str) -> Topology:
    """``topology`` with its TaskManager's ``python_workers`` set to ``mode``."""
    document = topology.to_dict()
    for node in document["nodes"]:
        if node["id"] == "tm-a":
            node["python_workers"] = mode
    return topology_from_dict(document)


@pytest.mark.parametrize(("mode", "expected"), [("per-slot", 0.0), ("shared", 0.6)])
def test_parallelism_adds_python_workers_only_where_each_slot_has_its_own(
    mode: str, expected: float
) -> None:
    """1.6 s of Python work in one second: one interpreter leaves 0.6 s; two subtasks in
    two slots with a worker each (process mode) serve it on two cores."""
    topology = with_python(with_slots(with_python_mode(flink_topology(1, 2.0, [1]), mode), 2), {0})
    op_dlts = np.array([[1.6, 0.0], [0.0, 0.0]])
    shape = shape_of(topology)
    one = predict(topology, shape, resolve(shape, Edits()), op_dlts)
    assert worst_case(one) == pytest.approx(0.6)
    two = predict(topology, shape, resolve(shape, Edits({"v0-threads": 2})), op_dlts)
    assert worst_case(two) == pytest.approx(expected)


@settings(max_examples=40, deadline=None)
@given(
    parallelism=st.lists(st.integers(1, 4), min_size=1, max_size=3),
    cores=st.sampled_from([1.0, 2.0, 3.0]),
    python=st.sets(st.integers(0, 2)),
)
def test_the_recorded_deployment_expands_to_the_recorded_workers(
    parallelism: list[int], cores: float, python: set[int]
) -> None:
    """A per-slot TaskManager's Python worker has the cores in the what-if's expansion of
    the recorded deployment that the recorded topology gives it."""
    vertices = len(parallelism)
    base = with_python_mode(flink_topology(vertices, cores, parallelism), "per-slot")
    topology = with_python(with_slots(base, max(parallelism)), {v for v in python if v < vertices})
    shape = shape_of(topology)
    resources = expand(shape, resolve(shape, Edits()))
    recorded = topology.capacity_by_node
    for row, node in enumerate(resources.ids):
        if node.startswith("python-worker@"):
            assert resources.capacities[row] == recorded[node]


def test_a_recorded_slot_count_below_the_jobs_parallelism_is_not_taken() -> None:
    shape = shape_of(with_slots(flink_topology(1, 4.0, [4]), 2))
    assert shape.slots == 4  # the recorded job ran 4 subtasks on its one TaskManager


def test_a_simulated_machine_is_copied() -> None:
    topology = topology_from_dict(
        {
            "name": "sim",
            "nodes": [{"id": "m", "capacity": 2.0}],
            "sources": [{"id": "s"}],
            "operators": [{"id": "a", "query": "q", "inputs": ["s"], "cost": 1.0}],
            "placement": {"a": "m"},
        }
    )
    shape = shape_of(topology)
    deployment = resolve(shape, Edits({"m": 3}))
    resources = expand(shape, deployment)
    assert resources.ids == ("m#0", "m#1", "m#2")
    assert list(resources.capacities) == [2.0, 2.0, 2.0]
    with pytest.raises(ScenarioError, match="no TaskManagers"):
        resolve(shape, Edits(slots=2))


@pytest.mark.parametrize(
    ("edits", "message"),
    [
        (Edits({"v0-threads": 0}), r"v0-threads.parallelism: must be a whole number from 1 to 128"),
        (Edits({"v0-threads": 129}), r"from 1 to 128 \(the max parallelism\), got 129"),
        (Edits({"nope": 2}), "unknown operator 'nope'"),
        (Edits({"v0-threads": 4}, slots=2, taskmanagers=1), "the job needs 4 slots"),
        (Edits(slots=4, cores=2.0), "4 slots per TaskManager is more than its 2 cores"),
        (Edits(capacity={"v0-threads": 2.0}), "set cores instead"),
        (Edits(taskmanagers=0), "taskmanagers: must be from 1"),
    ],
)
def test_bad_edits_are_one_line_errors(edits: Edits, message: str) -> None:
    shape = shape_of(flink_topology(1, 2.0, [1]))
    with pytest.raises(ScenarioError, match=message):
        resolve(shape, edits)


def test_max_parallelism_follows_flinks_default_rule() -> None:
    assert [max_parallelism(p) for p in (1, 85, 86, 200, 30000)] == [128, 128, 256, 512, 32768]


def bursty_loads() -> np.ndarray:
    """Ten cycles of 9 s at 0.5 CPU-s/s and 1 s at 3.0: mean 0.75 CPU-s/s."""
    cycle = [0.5] * 9 + [3.0]
    return np.array([cycle * 10, [0.0] * 100])


def test_utilisation_rule_misses_an_objective_the_greedy_plan_meets() -> None:
    topology = flink_topology(1, 8.0, [1])
    shape = shape_of(topology)
    op_dlts = bursty_loads()
    rule = utilisation_rule(topology, shape, op_dlts)
    assert rule == {"v0-threads": 2}  # ceil(0.75 / 0.7)
    by_rule = predict(topology, shape, resolve(shape, Edits(rule)), op_dlts)
    assert worst_case(by_rule) == pytest.approx(0.5)  # 1.5 per thread in a burst
    plan = fewest_subtasks(topology, shape, op_dlts, objective=0.2, max_total=16)
    assert plan.parallelism == {"v0-threads": 3}
    assert plan.feasible and plan.worst_case == pytest.approx(0.0)


def test_utilisation_rule_over_provisions_a_loose_objective() -> None:
    topology = flink_topology(1, 8.0, [1])
    shape = shape_of(topology)
    op_dlts = bursty_loads()
    plan = fewest_subtasks(topology, shape, op_dlts, objective=2.5, max_total=16)
    assert plan.parallelism == {"v0-threads": 1}  # 2.0 s at one subtask meets 2.5 s
    assert utilisation_rule(topology, shape, op_dlts) == {"v0-threads": 2}


def test_greedy_stops_at_max_total_and_says_it_is_infeasible() -> None:
    topology = flink_topology(2, 8.0, [1, 1])
    shape = shape_of(topology)
    op_dlts = np.vstack([bursty_loads(), bursty_loads()])
    plan = fewest_subtasks(topology, shape, op_dlts, objective=0.1, max_total=3)
    assert sum(plan.parallelism.values()) == 3
    assert not plan.feasible


def test_each_subtask_of_a_python_vertex_runs_its_own_bundles() -> None:
    """One Python vertex (0.01 + 0.01 s of work a record on its thread) fed 45 records a
    second for 10 s, then 5: at parallelism 1 its bundles of 0.5 s stretch, at 3 each
    subtask's third of the work (bundles of at most 20 records, 0.4 s of work) does so
    less; the query's rise is that of one subtask's bundles."""
    topology = with_python(flink_topology(1, 4.0, [1]), {0}, bundles=True)
    records = np.array([45.0] * 10 + [5.0] * 10)
    op_dlts = np.vstack([0.01 * records, 0.01 * records])
    shape = shape_of(topology)
    for p in (1, 3):
        deployment = resolve(shape, Edits(parallelism={"v0-threads": p}))
        analysis = predict(topology, shape, deployment, op_dlts)
        expected = cycle_excess(0.02 * records / p, 1.0, 0.5, bundle_work=20 * 0.02)
        np.testing.assert_allclose(analysis.bundle_rise["q1"], expected)
        assert np.all(analysis.per_query["q1"] >= expected)
    assert cycle_excess(0.02 * records, 1.0, 0.5, bundle_work=0.4).max() > expected.max()
