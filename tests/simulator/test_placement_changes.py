"""Placement changes during a run: queued work migrates, nothing is lost, both engines agree."""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from estimator.loaders import load_topology
from estimator.model import Topology, topology_from_dict
from simulator.errors import SimulationError
from simulator.live import PlacementRequest, run_live
from simulator.plan import POLICIES
from simulator.run import simulate
from simulator.telemetry import version_name, write_run
from simulator.workloads import workload_model
from tests.simulator.test_engines import bursty_arrivals, random_topology

ENGINES = ("reference", "fast")


def two_nodes() -> Topology:
    """s -> a -> b, both on n1 (capacity 1, 1 s per event); n2 is idle."""
    return topology_from_dict(
        {
            "nodes": [{"id": "n1", "capacity": 1.0}, {"id": "n2", "capacity": 1.0}],
            "sources": [{"id": "s"}],
            "operators": [
                {"id": "a", "query": "q", "inputs": ["s"], "cost": 1.0},
                {"id": "b", "query": "q", "inputs": ["a"], "cost": 1.0},
            ],
            "placement": {"a": "n1", "b": "n1"},
        }
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_queued_work_moves_in_order_and_service_in_progress_finishes(engine: str) -> None:
    # Four events at 0, 0.1, 0.2, 0.3 under FIFO on n1: a(0) runs [0,1), then the queue is
    # a(.1) a(.2) a(.3) b(0) ... At t=2.5, a(.2) is in service (started at 2) and a(.3),
    # b(0), b(.1) are queued. Moving b to n2 at 2.5: a(.2) finishes on n1 at 3, a(.3) runs
    # there [3,4); b(0) and b(.1) go to idle n2 in their queue order and b(0) starts at
    # 2.5, b(.1) at 3.5; b(.2) (queued at 3 on n1's consumer, now n2) runs at 4.5, b(.3)
    # at 5.5.
    result = simulate(
        two_nodes(),
        {"s": np.array([0.0, 0.1, 0.2, 0.3])},
        "fifo",
        np.random.default_rng(0),
        cost_distribution="constant",
        engine=engine,
        changes=[(2.5, {"b": "n2"})],
    )
    frame = result.telemetry.frames()["executions"]
    rows = [(r.node, r.operator, r.stimulus_time, r.start_time) for r in frame.itertuples()]
    assert rows == [
        ("n1", "a", 0.0, 0.0),
        ("n1", "a", 0.1, 1.0),
        ("n1", "a", 0.2, 2.0),
        ("n2", "b", 0.0, 2.5),
        ("n1", "a", 0.3, 3.0),
        ("n2", "b", 0.1, 3.5),
        ("n2", "b", 0.2, 4.5),
        ("n2", "b", 0.3, 5.5),
    ]
    assert result.versions == ((2.5, {"a": "n1", "b": "n2"}),)


def outputs_by_stimulus(topology: Topology, changes: list, policy: str) -> Counter:
    result = simulate(
        topology,
        bursty_arrivals(3, 400, 3.0),
        policy,
        np.random.default_rng(3),
        cost_distribution="exponential",
        changes=changes,
    )
    out = result.telemetry.frames()["outputs"]
    return Counter(zip(out.operator, out.stimulus_time, strict=True))


def whole_selectivities(seed: int, nodes: int) -> Topology:
    """A random DAG whose outputs per input are fixed (0, 1 or 2), so every stimulus has a
    known set of outputs however the events are scheduled."""
    document = random_topology(seed, nodes, product=False).to_dict()
    for op in document["operators"]:
        values = op["selectivity"]
        values = values if isinstance(values, list) else [values]
        op["selectivity"] = [float(round(s)) for s in values]
    return topology_from_dict(document)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), nodes=st.integers(2, 3), policy=st.sampled_from(POLICIES))
def test_a_change_loses_no_event(seed: int, nodes: int, policy: str) -> None:
    """Every stimulus produces the same outputs with and without changes mid-run."""
    topology = whole_selectivities(seed, nodes)
    rng = np.random.default_rng(seed)
    ops, node_ids = topology.operator_ids, topology.node_ids
    changes = [
        (float(rng.uniform(0.2, 1.5)), {ops[0]: node_ids[-1]}),
        (float(rng.uniform(1.6, 3.0)), {o: str(rng.choice(node_ids)) for o in ops}),
    ]
    assert outputs_by_stimulus(topology, changes, policy) == outputs_by_stimulus(
        topology, [], policy
    )


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    nodes=st.integers(2, 3),
    policy=st.sampled_from(POLICIES),
    times=st.lists(st.floats(0.01, 3.5), min_size=1, max_size=3, unique=True),
)
def test_engines_agree_with_changes(seed: int, nodes: int, policy: str, times: list[float]) -> None:
    """Random workloads (windowed joins and links included), changes at random times."""
    topology = random_topology(seed, nodes)
    rng = np.random.default_rng(seed)
    nodes_ids = topology.node_ids
    moves = [
        {o: str(rng.choice(nodes_ids)) for o in topology.operator_ids if rng.random() < 0.6}
        for _ in times
    ]
    changes = [(t, m) for t, m in zip(times, moves, strict=True) if m]
    arrivals = bursty_arrivals(seed, 300, 3.0)
    runs = [
        simulate(topology, arrivals, policy, np.random.default_rng(seed), engine=e, changes=changes)
        for e in ENGINES
    ]
    assert runs[0].trace.executions > 0
    assert runs[0].trace.equals(runs[1].trace)
    # each consumer port received exactly what its upstream produced
    ex = runs[0].telemetry.frames()["executions"]
    produced = {s: len(t) for s, t in arrivals.items()}
    produced.update({str(k): int(v) for k, v in ex.groupby("operator")["outputs"].sum().items()})
    for op in topology.operators:
        for port, upstream in enumerate(op.inputs):
            got = int(((ex.operator == op.id) & (ex.port == port)).sum())
            assert got == produced.get(upstream, 0), (op.id, port)


def test_no_change_keeps_the_trace() -> None:
    topology = random_topology(11, 3)
    arrivals = bursty_arrivals(11, 300, 3.0)
    plain = simulate(topology, arrivals, "stimulus", np.random.default_rng(2))
    same = simulate(
        topology,
        arrivals,
        "stimulus",
        np.random.default_rng(2),
        changes=[(1.0, dict(topology.placement))],  # a change that moves nothing
    )
    assert plain.trace.equals(same.trace)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ([(1.0, {"zz": "n1"})], "unknown operator 'zz'"),
        ([(1.0, {"a": "n9"})], "unknown node 'n9'"),
        ([(0.0, {"a": "n2"})], "after the run's origin"),
        ([(float("nan"), {"a": "n2"})], "after the run's origin"),
        ([(1.0, {"a": "n2"}), (1.0, {"b": "n2"})], "two changes at the same time"),
        ([(1.0, {})], "moves no operator"),
    ],
)
def test_bad_changes_are_named(changes: list, message: str) -> None:
    with pytest.raises(SimulationError, match=message):
        simulate(two_nodes(), {"s": np.array([0.0])}, changes=changes)


def test_write_run_records_each_change_as_a_topology_version(tmp_path) -> None:
    topology = two_nodes()
    result = simulate(
        topology, {"s": np.array([0.0, 0.5])}, changes=[(0.75, {"b": "n2"}), (3.5, {"a": "n2"})]
    )
    run_dir = write_run(result.telemetry, topology, tmp_path, "r", versions=result.versions)
    names = sorted(p.name for p in run_dir.glob("topology*.yaml"))
    assert names == ["topology-0.75.yaml", "topology-3.5.yaml", "topology.yaml"]
    assert version_name(0.75) == "topology-0.75.yaml"
    assert load_topology(run_dir / "topology-3.5.yaml").placement == {"a": "n2", "b": "n2"}
    assert load_topology(run_dir / "topology.yaml").placement == {"a": "n1", "b": "n1"}


CHAIN = """
name: chain
subinterval: 1.0
nodes: [{id: n1, capacity: 1.0}, {id: n2, capacity: 1.0}]
sources: [{id: s}]
operators:
  - {id: a, query: q, inputs: [s], cost: 0.01, selectivity: 1.0}
  - {id: b, query: q, inputs: [a], cost: 0.01, selectivity: 1.0}
placement: {a: n1, b: n1}
"""


def live_run(tmp_path: Path, run_id: str, request_at: float | None) -> tuple[Path, list]:
    """A live run on a fake clock (one second per flush, 40 flushes); at ``request_at``
    seconds after the start the requests poll returns one request moving b to n2."""
    (tmp_path / "chain.yaml").write_text(CHAIN)
    topology, model = workload_model(str(tmp_path / "chain.yaml"), load=0.9)
    now = [1_000_000.0]
    stop = threading.Event()
    outcomes: list = []

    def tick(index: int, written: dict) -> None:
        now[0] += 1.0
        if index == 40:
            stop.set()

    def poll() -> list[PlacementRequest]:
        if request_at is None or outcomes or now[0] < 1_000_000.0 + request_at:
            return []
        return [PlacementRequest({"b": "n2"}, lambda at, why: outcomes.append((at, why)))]

    run_dir = run_live(
        topology, model, tmp_path, run_id, stop, seed=1, flush_every=0.001, segment=10.0,
        clock=lambda: now[0], on_flush=tick, requests=poll,
    )  # fmt: skip
    return run_dir, outcomes


def test_live_request_moves_an_operator_and_loses_nothing(tmp_path: Path) -> None:
    run_dir, outcomes = live_run(tmp_path, "moved", request_at=12.5)
    ((at, problem),) = outcomes
    assert problem is None and 1_000_012.0 < at < 1_000_014.0
    version = run_dir / version_name(at)
    assert version.is_file() and load_topology(version).placement == {"a": "n1", "b": "n2"}
    ex = pq.read_table(run_dir / "executions").to_pandas()
    b = ex[ex.operator == "b"]
    assert set(b[b.start_time < at].node) == {"n1"} and set(b[b.start_time >= at].node) == {"n2"}
    # no execution written twice; every stimulus long enough before the end has its a, its b
    # and its output, exactly once
    assert not ex.duplicated(["operator", "stimulus_time", "start_time"]).any()
    arrivals = pq.read_table(run_dir / "arrivals").column("stimulus_time").to_numpy()
    outputs = pq.read_table(run_dir / "outputs").to_pandas()
    done = np.sort(arrivals[arrivals < 1_000_035.0])
    assert done.size > 100
    for frame in (ex[ex.operator == "a"], b, outputs):
        times = np.sort(frame.stimulus_time.to_numpy())
        assert np.array_equal(times[times < 1_000_035.0], done)
    # before the change, the run wrote exactly what the run without a request wrote
    plain_dir, _ = live_run(tmp_path, "plain", request_at=None)
    plain = pq.read_table(plain_dir / "executions").to_pandas()
    key = ["operator", "stimulus_time", "start_time", "node", "cpu_seconds"]
    before = ex[ex.start_time < at].sort_values(key).reset_index(drop=True)
    plain_before = plain[plain.start_time < at].sort_values(key).reset_index(drop=True)
    assert before.equals(plain_before)
    assert not (plain_dir / version.name).exists()


def test_live_request_for_an_unknown_node_is_refused(tmp_path: Path) -> None:
    (tmp_path / "chain.yaml").write_text(CHAIN)
    topology, model = workload_model(str(tmp_path / "chain.yaml"), load=0.5)
    now = [2_000_000.0]
    stop = threading.Event()
    outcomes: list = []
    asked = [
        PlacementRequest({"b": "n7"}, lambda at, why: outcomes.append((at, why))),
        PlacementRequest({"b": "n1"}, lambda at, why: outcomes.append((at, why))),
    ]

    def tick(index: int, written: dict) -> None:
        now[0] += 1.0
        stop.set()

    run_dir = run_live(
        topology, model, tmp_path, "r", stop, flush_every=0.001, segment=10.0,
        clock=lambda: now[0], on_flush=tick, requests=lambda: asked,
    )  # fmt: skip
    assert outcomes == [
        (None, "placement change at 2e+06 s: operator 'b' moved to unknown node 'n7'"),
        (None, "the running system already has this placement"),
    ]
    assert [p.name for p in run_dir.glob("topology*.yaml")] == ["topology.yaml"]


def test_simulate_command_change_option(tmp_path: Path, capsys) -> None:
    from mace.cli import main

    (tmp_path / "chain.yaml").write_text(CHAIN)
    (tmp_path / "move.yaml").write_text("b: n2\n")
    (tmp_path / "bad.yaml").write_text("b: n9\n")
    base = ["simulate", str(tmp_path / "chain.yaml"), "--duration", "6", "--out", str(tmp_path)]
    assert main([*base, "--run-id", "r", "--change", f"2.5:{tmp_path / 'move.yaml'}"]) == 0
    assert "1 placement change(s)" in capsys.readouterr().out
    assert load_topology(tmp_path / "r" / "topology-2.5.yaml").placement == {"a": "n1", "b": "n2"}
    ex = pq.read_table(tmp_path / "r" / "executions").to_pandas()
    assert set(ex[(ex.operator == "b") & (ex.start_time >= 2.5)].node) == {"n2"}
    for change, message in [
        ("soon:x.yaml", "--change 'soon:x.yaml': expected AT_SECONDS:PLACEMENT"),
        ("-1:x.yaml", "expected AT_SECONDS:PLACEMENT"),
        ("3", "expected AT_SECONDS:PLACEMENT"),
        ("3:missing.yaml", "missing.yaml: no such file"),
        (f"3:{tmp_path / 'bad.yaml'}", "operator 'b' moved to unknown node 'n9'"),
    ]:
        assert main([*base, "--run-id", "bad", f"--change={change}"]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, err
