"""Exact event traces on tiny hand-made cases, worked out by hand for every policy.

Costs are constant and selectivities integral, so every run is deterministic;
the expected traces below are derived in the comments, not from the code.
Both engines (reference heapq and numba) must produce them.
"""

from __future__ import annotations

import numpy as np
import pytest

from estimator.model import Topology, topology_from_dict
from simulator.plan import POLICIES, compile_plan
from simulator.run import simulate

ENGINES = ("reference", "fast")


def one_node(subinterval: float = 1.0) -> Topology:
    """s -> a -> b on one node of capacity 1; both operators cost 1 s per event."""
    return topology_from_dict(
        {
            "subinterval": subinterval,
            "nodes": [{"id": "n1", "capacity": 1.0}],
            "sources": [{"id": "s"}],
            "operators": [
                {"id": "a", "query": "q", "inputs": ["s"], "cost": 1.0},
                {"id": "b", "query": "q", "inputs": ["a"], "cost": 1.0},
            ],
            "placement": {"a": "n1", "b": "n1"},
        }
    )


def executions(topology: Topology, policy: str, engine: str, train: int = 1) -> list[tuple]:
    result = simulate(
        topology,
        {"s": np.array([0.0, 0.1, 0.2])},
        policy,
        np.random.default_rng(0),
        cost_distribution="constant",
        train=train,
        engine=engine,
    )
    frame = result.telemetry.frames()["executions"]
    return [
        (row.operator, row.stimulus_time, row.start_time) for row in frame.itertuples(index=False)
    ]


# Three events arrive at 0.0, 0.1 and 0.2; a(0.0) starts at once (the node is idle).
# At t=1 the queue holds a(0.1), a(0.2) (enqueued at 0.1, 0.2) and b(0.0) (enqueued at 1).
FIFO_TRACE = [  # arrival order at the node: a, a, then the three b's
    ("a", 0.0, 0.0), ("a", 0.1, 1.0), ("a", 0.2, 2.0),
    ("b", 0.0, 3.0), ("b", 0.1, 4.0), ("b", 0.2, 5.0),
]  # fmt: skip
STIMULUS_TRACE = [  # earliest stimulus: b(0.0) beats a(0.1) at t=1, b(0.1) beats a(0.2) at t=3
    ("a", 0.0, 0.0), ("b", 0.0, 1.0), ("a", 0.1, 2.0),
    ("b", 0.1, 3.0), ("a", 0.2, 4.0), ("b", 0.2, 5.0),
]  # fmt: skip
LONGEST_QUEUE_TRACE = [  # t=1: a has 2, b 1 -> a; t=2: a 1, b 2 -> b; t=3: 1-1 tie -> a (first)
    ("a", 0.0, 0.0), ("a", 0.1, 1.0), ("b", 0.0, 2.0),
    ("a", 0.2, 3.0), ("b", 0.1, 4.0), ("b", 0.2, 5.0),
]  # fmt: skip
WHOLE_QUEUE_TRACE = [  # min-cost cycle [a, b]; each visit drains the queue seen at its start:
    # a takes a(0.0) (queue of 1), b takes b(0.0), a takes both a's, b the two b's.
    # min-latency: output cost b=1 < a=2, cycle [b, a, b]; first non-empty spot is a: same.
    ("a", 0.0, 0.0), ("b", 0.0, 1.0), ("a", 0.1, 2.0),
    ("a", 0.2, 3.0), ("b", 0.1, 4.0), ("b", 0.2, 5.0),
]  # fmt: skip
SUBINTERVAL_TRACE = [  # w=0.15: a(0.0), a(0.1) in interval 0, a(0.2) in interval 1.
    # t=1: a(0.1) (interval 0, enqueued before b(0.0)); t=2: b(0.0), then b(0.1)
    # (interval 0), then a(0.2), b(0.2).
    ("a", 0.0, 0.0), ("a", 0.1, 1.0), ("b", 0.0, 2.0),
    ("b", 0.1, 3.0), ("a", 0.2, 4.0), ("b", 0.2, 5.0),
]  # fmt: skip
ROUND_ROBIN_TRAIN_2 = [  # cycle [a, b], two events per visit: a,a then b,b then a then b
    ("a", 0.0, 0.0), ("a", 0.1, 1.0), ("b", 0.0, 2.0),
    ("b", 0.1, 3.0), ("a", 0.2, 4.0), ("b", 0.2, 5.0),
]  # fmt: skip


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    ("policy", "train", "subinterval", "expected"),
    [
        ("fifo", 1, 1.0, FIFO_TRACE),
        ("stimulus", 1, 1.0, STIMULUS_TRACE),
        ("longest-queue", 1, 1.0, LONGEST_QUEUE_TRACE),
        ("min-cost", 1, 1.0, WHOLE_QUEUE_TRACE),
        ("min-latency", 1, 1.0, WHOLE_QUEUE_TRACE),
        ("subinterval", 1, 0.15, SUBINTERVAL_TRACE),
        ("subinterval", 1, 1.0, FIFO_TRACE),  # one subinterval: FIFO within it
        ("subinterval", 1, 0.05, STIMULUS_TRACE),  # one event per subinterval
        ("round-robin", 1, 1.0, STIMULUS_TRACE),  # alternates a, b, a, b, ...
        ("round-robin", 2, 1.0, ROUND_ROBIN_TRAIN_2),
    ],
)
def test_one_node_two_operators(
    engine: str, policy: str, train: int, subinterval: float, expected: list[tuple]
) -> None:
    assert executions(one_node(subinterval), policy, engine, train) == expected


@pytest.mark.parametrize("engine", ENGINES)
def test_one_node_outputs_and_counts(engine: str) -> None:
    result = simulate(
        one_node(),
        {"s": np.array([0.0, 0.1, 0.2])},
        "stimulus",
        np.random.default_rng(0),
        cost_distribution="constant",
        engine=engine,
    )
    frames = result.telemetry.frames()
    outputs = [tuple(r) for r in frames["outputs"].itertuples(index=False)]
    # b(0.0) ends at 2, b(0.1) at 4, b(0.2) at 6 (STIMULUS_TRACE plus the 1 s cost)
    assert outputs == [("q", "b", 0.0, 2.0), ("q", "b", 0.1, 4.0), ("q", "b", 0.2, 6.0)]
    assert list(frames["executions"]["outputs"]) == [1] * 6
    assert list(frames["executions"]["cpu_seconds"]) == [1.0] * 6
    assert list(frames["arrivals"]["stimulus_time"]) == [0.0, 0.1, 0.2]


def two_nodes(fan_out: bool = False) -> Topology:
    """s -> a on n1 (0.25 s/event) -> b (and c) on n2 (1 s/event); the link n1->n2 has a
    0.5 s delay and carries 100 bytes/s, a's events are 50 bytes (0.5 s to transmit)."""
    ops = [
        {"id": "a", "query": "q", "inputs": ["s"], "cost": 0.25, "event_bytes": 50},
        {"id": "b", "query": "q", "inputs": ["a"], "cost": 1.0},
    ]
    placement = {"a": "n1", "b": "n2"}
    if fan_out:
        ops.append({"id": "c", "query": "q", "inputs": ["a"], "cost": 1.0})
        placement["c"] = "n2"
    return topology_from_dict(
        {
            "nodes": [{"id": "n1", "capacity": 1.0}, {"id": "n2", "capacity": 1.0}],
            "sources": [{"id": "s"}],
            "operators": ops,
            "placement": placement,
            "links": [{"from": "n1", "to": "n2", "delay": 0.5, "bandwidth": 100.0}],
        }
    )


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("policy", POLICIES)
def test_two_nodes_joined_by_a_link(engine: str, policy: str) -> None:
    # a(0.0) runs [0, 0.25]; its output goes on the link at 0.25, is transmitted until
    # 0.75 and arrives at 1.25. a(0.2) runs [0.25, 0.5]; the link is busy until 0.75, so
    # its output is transmitted [0.75, 1.25] and arrives at 1.75. n2 runs b(0.0) [1.25,
    # 2.25] and b(0.2) [2.25, 3.25] (queued at 1.75). One operator per node: every
    # policy gives the same trace.
    result = simulate(
        two_nodes(),
        {"s": np.array([0.0, 0.2])},
        policy,
        np.random.default_rng(0),
        cost_distribution="constant",
        engine=engine,
    )
    frames = result.telemetry.frames()
    rows = [
        (r.node, r.operator, r.stimulus_time, r.start_time)
        for r in frames["executions"].itertuples(index=False)
    ]
    assert rows == [
        ("n1", "a", 0.0, 0.0),
        ("n1", "a", 0.2, 0.25),
        ("n2", "b", 0.0, 1.25),
        ("n2", "b", 0.2, 2.25),
    ]
    assert list(frames["outputs"]["egress_time"]) == [2.25, 3.25]


@pytest.mark.parametrize("engine", ENGINES)
def test_output_crosses_a_link_once_per_destination_node(engine: str) -> None:
    # Two consumers on n2: each output of a is transmitted once (0.5 s) and fans out at
    # n2, so a(0.0)'s copy arrives at 1.25 for both b and c; a(0.2)'s at 1.75.
    # n2 (stimulus order) then runs b(0.0) [1.25, 2.25], c(0.0) [2.25, 3.25],
    # b(0.2) [3.25, 4.25], c(0.2) [4.25, 5.25].
    result = simulate(
        two_nodes(fan_out=True),
        {"s": np.array([0.0, 0.2])},
        "stimulus",
        np.random.default_rng(0),
        cost_distribution="constant",
        engine=engine,
    )
    frame = result.telemetry.frames()["executions"]
    on_n2 = frame[frame.node == "n2"]
    assert list(zip(on_n2.operator, on_n2.start_time, strict=True)) == [
        ("b", 1.25),
        ("c", 2.25),
        ("b", 3.25),
        ("c", 4.25),
    ]


def test_min_latency_cycle_is_aurora_figure_4() -> None:
    """Aurora's Figure 4 tree (b5->b3->b2->b1, b4->b2, b6->b1), equal costs and
    selectivity 1: output cost is the depth, so the min-latency traversal is
    b1, b2 b1, b6 b1, b4 b2 b1, b3 b2 b1, b5 b3 b2 b1 (section 4.1.2)."""
    ops = [
        {"id": "b5", "inputs": ["x5"], "cost": 1.0},
        {"id": "b4", "inputs": ["x4"], "cost": 1.0},
        {"id": "b3", "inputs": ["b5"], "cost": 1.0},
        {"id": "b2", "inputs": ["b3", "b4"], "cost": 1.0},
        {"id": "b6", "inputs": ["x6"], "cost": 1.0},
        {"id": "b1", "inputs": ["b2", "b6"], "cost": 1.0},
    ]
    topology = topology_from_dict(
        {
            "nodes": [{"id": "n", "capacity": 1.0}],
            "sources": [{"id": "x4"}, {"id": "x5"}, {"id": "x6"}],
            "operators": ops,
            "placement": {o["id"]: "n" for o in ops},
        }
    )
    plan = compile_plan(topology, "min-latency")
    names = [plan.operator_ids[k] for k in plan.cycle_ops]
    expected = "b1 b2 b1 b6 b1 b4 b2 b1 b3 b2 b1 b5 b3 b2 b1"
    assert names == expected.split(" ")
    post_order = [plan.operator_ids[k] for k in compile_plan(topology, "min-cost").cycle_ops]
    for k, op in enumerate(post_order):  # every box after the boxes feeding it
        assert all(
            post_order.index(up) < k
            for up in topology.operator_by_id[op].inputs
            if up.startswith("b")
        )
