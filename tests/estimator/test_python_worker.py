"""The Python worker's interpreter as a resource shared by the job's Python operators."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimator.model import Topology, topology_from_dict
from estimator.python_worker import (
    WORKER_CAPACITY,
    python_operators,
    with_python_workers,
)


def _job(operators: int, tms: int = 1) -> Topology:
    """``operators`` operators in a chain from source s, each on a thread of its own,
    threads spread over ``tms`` TaskManagers of 2 cores in turn."""
    ids = [f"op{k}" for k in range(operators)]
    return topology_from_dict(
        {
            "name": "job",
            "subinterval": 1.0,
            "nodes": [
                {"id": f"{op}-threads", "capacity": 1.0, "host": f"tm{k % tms}"}
                for k, op in enumerate(ids)
            ]
            + [{"id": f"tm{k}", "capacity": 2.0} for k in range(tms)],
            "sources": [{"id": "s"}],
            "operators": [
                {"id": op, "query": "q", "inputs": ["s" if k == 0 else ids[k - 1]], "cost": 0.001}
                for k, op in enumerate(ids)
            ],
            "placement": {op: f"{op}-threads" for op in ids},
        }
    )


def _stats(work: dict[str, float | None], intervals: int = 4) -> pd.DataFrame:
    """Rows of 10 records a subinterval per operator, ``work`` seconds outside the thread
    each (None: not measured)."""
    rows = [
        {
            "operator": op, "port": 0, "interval": t, "events_in": 10.0, "events_out": 10.0,
            "cpu_seconds": 0.1, "work_seconds": np.nan if seconds is None else seconds,
        }
        for op, seconds in work.items()
        for t in range(intervals)
    ]  # fmt: skip
    return pd.DataFrame(rows)


def test_python_threads_move_from_their_taskmanager_to_its_worker() -> None:
    """Two of three operators had worker time: their threads share a node of one core
    standing for the TaskManager's Python worker; the Java operator's thread stays on the
    TaskManager's cores."""
    topology = _job(3)
    out = with_python_workers(topology, _stats({"op0": 0.02, "op1": 0.05, "op2": None}))
    hosts = {n.id: n.host for n in out.nodes}
    assert hosts == {
        "op0-threads": "python-worker@tm0",
        "op1-threads": "python-worker@tm0",
        "op2-threads": "tm0",
        "tm0": None,
        "python-worker@tm0": None,
    }
    assert {n.id: n.capacity for n in out.nodes}["python-worker@tm0"] == WORKER_CAPACITY == 1.0
    assert with_python_workers(out, _stats({"op0": 0.02})) is out


def test_without_worker_time_the_topology_is_kept() -> None:
    """No work column, work not measured, or measured as zero (a Java operator's thread
    beside a Python worker): nothing changes."""
    topology = _job(2)
    assert with_python_workers(topology, _stats({"op0": None}).drop(columns="work_seconds")) is (
        topology
    )
    assert with_python_workers(topology, _stats({"op0": None, "op1": 0.0})) is topology
    assert python_operators(_stats({"op0": None, "op1": 0.0})) == set()


def test_a_lone_python_thread_has_its_worker_to_itself() -> None:
    out = with_python_workers(_job(2, tms=2), _stats({"op0": 0.02, "op1": 0.03}))
    assert {n.id: n.host for n in out.nodes}["op1-threads"] == "python-worker@tm1"
    assert {n.id for n in out.nodes if n.host is None} == {
        "tm0",
        "tm1",
        "python-worker@tm0",
        "python-worker@tm1",
    }


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 6),
    st.integers(1, 3),
    st.data(),
)
def test_a_workers_load_is_its_python_operators_work(
    operators: int, tms: int, data: st.DataObject
) -> None:
    """Against a plain sum: with hosts applied to per-node work, a worker's row is the
    work of the Python threads of its TaskManager, a TaskManager's row that of its other
    threads, and every thread keeps its own row."""
    topology = _job(operators, tms)
    python = data.draw(st.sets(st.sampled_from(topology.operator_ids)))
    out = with_python_workers(topology, _stats({op: 0.01 for op in python}))
    work = data.draw(st.lists(st.floats(0, 5), min_size=len(out.nodes), max_size=len(out.nodes)))
    rows = np.array(work, dtype=float)
    threads = {n.id: n for n in topology.nodes if n.host is not None}
    for n in out.nodes:
        if n.host is None:
            rows[out.node_index[n.id]] = 0.0  # hosts carry no work of their own here
    loaded = out.with_hosts(rows)
    for node in out.nodes:
        k = out.node_index[node.id]
        if node.id in threads:
            assert loaded[k] == rows[k]
            continue
        expected = 0.0
        for thread in threads.values():
            op = thread.id.removesuffix("-threads")
            worker_of_tm = f"python-worker@{thread.host}"
            carrier = worker_of_tm if op in python else thread.host
            if carrier == node.id:
                expected += rows[out.node_index[thread.id]]
        assert loaded[k] == pytest.approx(expected)


def _per_slot(topology: Topology, parallelism: dict[str, float], cores: float) -> Topology:
    """``topology`` with its TaskManager tm0 running a Python worker per slot on ``cores``
    cores, and the threads of ``parallelism`` at those parallelisms."""
    document = topology.to_dict()
    for node in document["nodes"]:
        if node["id"] == "tm0":
            node |= {"python_workers": "per-slot", "capacity": cores}
        node["capacity"] = parallelism.get(node["id"], node["capacity"])
    return topology_from_dict(document)


@pytest.mark.parametrize(
    ("parallelism", "cores", "expected"),
    [
        ({"op0-threads": 2.0}, 2.0, 2.0),  # two slots hold Python subtasks: two workers
        ({"op0-threads": 2.0, "op1-threads": 1.0}, 2.0, 2.0),  # slot sharing: still two
        ({"op0-threads": 3.0}, 2.0, 2.0),  # three workers on two cores
        ({"op0-threads": 1.0}, 2.0, 1.0),  # one slot, one worker
        ({"op2-threads": 4.0}, 4.0, 1.0),  # op2 is Java: its slots run no Python
    ],
)
def test_a_per_slot_taskmanager_has_a_worker_core_per_slot_with_python(
    parallelism: dict[str, float], cores: float, expected: float
) -> None:
    topology = _per_slot(_job(3), parallelism, cores)
    out = with_python_workers(topology, _stats({"op0": 0.02, "op1": 0.05, "op2": None}))
    assert out.capacity_by_node["python-worker@tm0"] == expected


def test_a_shared_or_unrecorded_taskmanager_has_one_interpreter() -> None:
    stats = _stats({"op0": 0.02, "op1": 0.05})
    for mode in ("shared", None):
        document = _job(2).to_dict()
        document["nodes"][0]["capacity"] = 2.0
        if mode is not None:
            document["nodes"][-1]["python_workers"] = mode
        out = with_python_workers(topology_from_dict(document), stats)
        assert out.capacity_by_node["python-worker@tm0"] == WORKER_CAPACITY
