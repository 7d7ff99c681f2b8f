"""Per-origin backlog tracking (estimator.origins): against plain loops.

The compact kernel (a ring over the pending window, quiet subintervals skipped) equals
a plain-loop replay that holds every bucket of every operator (the prototype's
algorithm); with every operator fed by a source it is the burst-aware peak backlog
(Lindley at sub-bucket resolution); on a two-node tandem it stays within one step
(w / k, scaled by the share of the upstream's rate the downstream receives) of a fluid
replay at a 50 times finer time step; on one node it is monotone in the load, on
several nodes per query it is not (a slower upstream lets a node serve another query's
newer work first)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from itertools import pairwise
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimator.burst import SUB_BUCKETS, burst_from_profile, burst_profile
from estimator.errors import ModelError
from estimator.mace import estimate_from_dlts
from estimator.model import Topology, topology_from_dict
from estimator.origins import origin_latency
from estimator.pathaware import Detail, estimate_burst, estimate_origin, hand_ons
from estimator.runs import analyse
from tests.estimator.test_burst import loop_peaks


def source_spread(topology: Topology, port_work: np.ndarray, source_fine: np.ndarray) -> np.ndarray:
    """Each port's work per subinterval and sub-bucket (inputs x D x k) spread like its
    source's events, or like the operator feeding it, an operator's spread being its
    ports' added up (1/k per sub-bucket where it has no work)."""
    k = source_fine.shape[2]
    shares = {}
    for s, source in enumerate(topology.source_ids):
        for p in range(port_work.shape[1]):
            total = source_fine[s, p].sum()
            shares[source, p] = source_fine[s, p] / total if total > 0 else np.full(k, 1 / k)
    out = np.zeros((*port_work.shape, k))
    spread: dict[tuple[str, int], np.ndarray] = {}
    for op_id in topology.topological_order:
        op = topology.operator_by_id[op_id]
        rows = [
            topology.input_offsets[topology.operator_index[op_id]] + q
            for q in range(len(op.inputs))
        ]
        for p in range(port_work.shape[1]):
            for r, upstream in zip(rows, op.inputs, strict=True):
                out[r, p] = port_work[r, p] * (
                    shares[upstream, p] if upstream in topology.source_ids else spread[upstream, p]
                )
            total = sum(port_work[r, p] for r in rows)
            spread[op_id, p] = (
                sum(out[r, p] for r in rows) / total if total > 0 else np.full(k, 1 / k)
            )
    return out


def reference_replay(
    topology: Topology,
    port_work: np.ndarray,
    node_fine: np.ndarray | None,
    k: int,
    source_fine: np.ndarray | None = None,
) -> np.ndarray:
    """Plain loop of the model in estimator/origins.py holding every bucket: queries x D;
    each port's work spread like ``source_fine`` (:func:`source_spread`) when given, else
    like its node's ``node_fine``, else evenly."""
    ops = list(topology.operators)
    index = topology.operator_index
    node_of = [topology.node_index[topology.placement[o.id]] for o in ops]
    caps = [n.capacity for n in topology.nodes]
    n, intervals = len(caps), port_work.shape[1]
    buckets, delta = intervals * k, topology.subinterval / k
    rows = [(j, q, o.inputs[q]) for j, o in enumerate(ops) for q in range(len(o.inputs))]
    node_cpu = np.zeros((n, intervals))
    for r, (j, _, _) in enumerate(rows):
        node_cpu[node_of[j]] += port_work[r]
    fine = np.zeros((len(rows), buckets))
    by_source = None if source_fine is None else source_spread(topology, port_work, source_fine)
    for r, (j, _, _) in enumerate(rows):
        i = node_of[j]
        for s in range(buckets):
            p, b = divmod(s, k)
            if by_source is not None:
                fine[r, s] = by_source[r, p, b]
            elif node_fine is None:
                fine[r, s] = port_work[r, p] / k
            elif node_cpu[i, p] > 0:
                fine[r, s] = port_work[r, p] * node_fine[i, p, b] / node_cpu[i, p]
    work = np.zeros((len(ops), buckets))
    for r, (j, _, _) in enumerate(rows):
        work[j] += fine[r]
    arriving = np.zeros((len(ops), buckets))  # from sources, at the start of the step
    owed, ratio = np.zeros((len(rows), buckets)), np.zeros((len(rows), buckets))
    for r, (j, _, up) in enumerate(rows):
        for s in range(buckets):
            if up in index and work[index[up], s] > 0:
                owed[r, s] = fine[r, s]
                ratio[r, s] = fine[r, s] / work[index[up], s]
            else:
                arriving[j, s] += fine[r, s]
    order = [index[o] for o in topology.topological_order]
    tol = 1e-12 * max(float(port_work.sum()), 1.0)
    pending = np.zeros((len(ops), buckets))
    finish = np.full((len(ops), buckets), -np.inf)
    step = 0
    while step < buckets or pending.sum() > tol:
        if step < buckets:
            pending[:, step] += arriving[:, step]
        end = (step + 1) * delta
        clock = [step * delta] * n
        top = min(step, buckets - 1)
        progressed = True
        while progressed:
            progressed = False
            for i in range(n):
                for s in range(top + 1):
                    for o in (o for o in order if node_of[o] == i):
                        if pending[o, s] <= 0 or clock[i] >= end:
                            continue
                        amount = pending[o, s]
                        served = min(amount, (end - clock[i]) * caps[i])
                        pending[o, s] = amount - served if amount - served > tol else 0.0
                        clock[i] += served / caps[i]
                        if served > tol:
                            finish[o, s] = max(finish[o, s], clock[i])
                        progressed = True
                        for r, (d, _, up) in enumerate(rows):
                            if up == ops[o].id:
                                sent = min(served * ratio[r, s], owed[r, s])
                                owed[r, s] -= sent
                                pending[d, s] += sent
        step += 1
    late = np.maximum(finish - (np.arange(buckets) + 1) * delta, 0.0)
    per_op = late.reshape(len(ops), intervals, k).max(axis=2)
    read = {u for o in ops for u in o.inputs}
    return np.array(
        [
            np.max(
                [
                    np.zeros(intervals),
                    *(per_op[index[o]] for o in topology.operators_of_query(q) if o not in read),
                ],
                axis=0,
            )
            for q in topology.queries
        ]
    )


@st.composite
def dags(draw: st.DrawFn) -> tuple[Topology, np.ndarray, np.ndarray | None, int]:
    """A random operator DAG (chains, joins, fan-out) on 1..3 nodes with random port work
    per subinterval and a random (or no) node profile, some cells empty."""
    nodes, n_ops = draw(st.integers(1, 3)), draw(st.integers(1, 6))
    intervals, k = draw(st.integers(1, 5)), draw(st.integers(1, 4))
    operators: list[dict[str, object]] = []
    for j in range(n_ops):
        choices = ["s0", "s1", *(str(o["id"]) for o in operators)]
        inputs = draw(st.lists(st.sampled_from(choices), min_size=1, max_size=2, unique=True))
        operators.append(
            {"id": f"o{j}", "query": f"q{j % 2}", "inputs": inputs, "cost": [0.01] * len(inputs)}
        )
    topology = topology_from_dict(
        {
            "subinterval": 1.0,
            "nodes": [{"id": f"n{i}", "capacity": draw(st.floats(0.5, 2.0))} for i in range(nodes)],
            "sources": [{"id": "s0"}, {"id": "s1"}],
            "operators": operators,
            "placement": {str(o["id"]): f"n{draw(st.integers(0, nodes - 1))}" for o in operators},
        }
    )
    cells = st.one_of(st.just(0.0), st.floats(0.01, 2.0))
    rows = topology.input_offsets[-1]
    port = np.array(draw(st.lists(cells, min_size=rows * intervals, max_size=rows * intervals)))
    fine = None
    if draw(st.booleans()):
        size = nodes * intervals * k
        fine = np.array(draw(st.lists(cells, min_size=size, max_size=size)))
        fine = fine.reshape(nodes, intervals, k)
    return topology, port.reshape(rows, intervals), fine, k


@settings(max_examples=150, deadline=None)
@given(dags())
def test_the_compact_kernel_equals_the_replay_holding_every_bucket(
    case: tuple[Topology, np.ndarray, np.ndarray | None, int],
) -> None:
    topology, port, fine, k = case
    np.testing.assert_allclose(
        origin_latency(topology, port, fine, k),
        reference_replay(topology, port, fine, k),
        atol=1e-9,
    )


def test_a_node_handing_on_to_itself_still_serves_every_bucket_it_received() -> None:
    """The join o1 on n1 trickles buckets 0 and 1 to o2 on n0, which hands on to o3 and
    o4 on n0 itself. After n0 has served all it had in a step, it looks only at the buckets
    it received since; its hand-ons to its own operators must not take the place of
    those buckets, else it idles with bucket 1 pending (2.75 s and 2.61 s, not 2.5 s:
    n0 has 3.5 s of work, busy from 0 to 3.5 s, and bucket 1 ends at 1 s)."""
    operators = [
        ("o0", "q0", ["s0"]),
        ("o1", "q1", ["s0", "s1"]),
        ("o2", "q0", ["o1"]),
        ("o3", "q1", ["o2"]),
        ("o4", "q0", ["o2"]),
    ]
    topology = topology_from_dict(
        {
            "subinterval": 1.0,
            "nodes": [{"id": "n0", "capacity": 1.0}, {"id": "n1", "capacity": 1.125}],
            "sources": [{"id": "s0"}, {"id": "s1"}],
            "operators": [
                {"id": o, "query": q, "inputs": inputs, "cost": [0.01] * len(inputs)}
                for o, q, inputs in operators
            ],
            "placement": {"o0": "n0", "o1": "n1", "o2": "n0", "o3": "n0", "o4": "n0"},
        }
    )
    port = np.array([[0.0], [2.0], [1.5], [1.5], [1.5], [0.5]])
    latency = origin_latency(topology, port, None, 2)
    np.testing.assert_allclose(latency, reference_replay(topology, port, None, 2), atol=1e-9)
    assert latency[0, 0] == pytest.approx(2.5)  # q0's sink o4 ends with n0's work


@settings(max_examples=150, deadline=None)
@given(dags())
def test_the_replay_split_over_two_threads_equals_the_plain_loop(
    case: tuple[Topology, np.ndarray, np.ndarray | None, int],
) -> None:
    """From 2 subintervals on, the second part is replayed on another thread from an
    empty state and joined where both replays find nothing pending: the same figures."""
    from estimator import origins

    topology, port, fine, k = case
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(origins, "PARALLEL_FROM", 2)
        got = origin_latency(topology, port, fine, k)
    np.testing.assert_allclose(got, reference_replay(topology, port, fine, k), atol=1e-9)


@st.composite
def dags_with_sources(
    draw: st.DrawFn,
) -> tuple[Topology, np.ndarray, np.ndarray, int]:
    """:func:`dags` with each source's events per subinterval and sub-bucket instead of a
    node profile, some cells (and whole subintervals) empty."""
    topology, port, _, k = draw(dags())
    size = 2 * port.shape[1] * k
    cells = st.one_of(st.just(0.0), st.floats(1.0, 50.0))
    events = np.array(draw(st.lists(cells, min_size=size, max_size=size)))
    return topology, port, events.reshape(2, port.shape[1], k), k


@settings(max_examples=150, deadline=None)
@given(dags_with_sources(), st.booleans())
def test_spread_like_the_sources_the_kernel_equals_the_plain_loop(
    case: tuple[Topology, np.ndarray, np.ndarray, int], split: bool
) -> None:
    """Each port's work spread like its sources' events (through the operators feeding
    it, joins mixing their inputs by work), on one thread or split over two."""
    from estimator import origins

    topology, port, events, k = case
    with pytest.MonkeyPatch.context() as patch:
        if split:
            patch.setattr(origins, "PARALLEL_FROM", 2)
        got = origin_latency(topology, port, None, k, source_fine=events)
    want = reference_replay(topology, port, None, k, source_fine=events)
    np.testing.assert_allclose(got, want, atol=1e-9)


@settings(max_examples=100, deadline=None)
@given(dags())
def test_sources_spread_evenly_give_the_even_replay(
    case: tuple[Topology, np.ndarray, np.ndarray | None, int],
) -> None:
    topology, port, _, k = case
    events = np.ones((2, port.shape[1], k))
    np.testing.assert_allclose(
        origin_latency(topology, port, None, k, source_fine=events),
        origin_latency(topology, port, None, k),
        atol=1e-9,
    )


def test_a_source_profile_of_the_wrong_shape_is_a_clear_error() -> None:
    with pytest.raises(ModelError, match="source profile of shape"):
        origin_latency(_chain(), np.ones((2, 3)), None, 4, source_fine=np.ones((2, 3, 4)))


class _InTurn:
    """A one-worker pool that runs each task when it is submitted: the second replay ends
    before the first starts, so the first joins it at the first boundary it can."""

    def __init__(self, max_workers: int) -> None:
        pass

    def __enter__(self) -> _InTurn:
        return self

    def __exit__(self, *_: object) -> None:
        pass

    def submit(self, task: Callable[..., object], *args: object) -> Future[object]:
        done: Future[object] = Future()
        done.set_result(task(*args))
        return done


def test_a_backlog_across_the_split_and_a_second_replay_out_of_room() -> None:
    """The second replay starts inside a backlog (the first replays on until both are
    empty), then runs out of its eighth of the state limit in a later backlog (the part
    after the join is replayed again on one core): the plain loop's figures either way."""
    from estimator import origins

    topology, intervals, k = _chain(), 60, 8
    port = np.zeros((2, intervals))
    port[:, 10:20] = 1.6  # a backlog across the split
    port[:, 30:50] = 1.9  # a window of about 76 buckets, past the first ring of 64
    fine = np.repeat(port[:, :, None] / k, k, axis=2)
    expected = reference_replay(topology, port, fine, k)
    calls: list[tuple[int, int, int]] = []  # (first bucket, window refused, joined at)
    replay = origins._replay

    def spy(*args: Any) -> tuple[np.ndarray, int, int]:
        out, window, joined = replay(*args)
        calls.append((int(args[-5]), window, joined))  # begin, split, meet, record, slots
        return out, window, joined

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(origins, "PARALLEL_FROM", 2)
        patch.setattr(origins, "ThreadPoolExecutor", _InTurn)
        patch.setattr(origins, "_quiet_boundary", lambda *_: 15)
        patch.setattr(origins, "_replay", spy)
        np.testing.assert_allclose(origin_latency(topology, port, fine, k), expected, atol=1e-9)
        (second, _, _), (first, _, joined) = calls
        assert (second, first) == (15 * k, 0) and 20 < joined < 30
        calls.clear()
        # room for 256 slots: the second replay gets 32 and gives up at its first growth
        patch.setattr(origins, "MAX_STATE_BYTES", 256 * (8 * 2 + 12 * 2 + 8))
        np.testing.assert_allclose(origin_latency(topology, port, fine, k), expected, atol=1e-9)
        assert [(b, w > 0, j) for b, w, j in calls] == [
            (15 * k, True, -1),
            (0, False, joined),
            (joined * k, False, -1),
        ]


def _paths(topology: Topology) -> list[list[str]]:
    """Every source-to-sink operator path, enumerated one by one."""
    fed = {o: [d.id for d in topology.operators if o in d.inputs] for o in topology.operator_ids}
    starts = [o.id for o in topology.operators if not set(o.inputs) & set(topology.operator_ids)]
    found: list[list[str]] = []
    stack = [[o] for o in starts]
    while stack:
        path = stack.pop()
        after = fed[path[-1]]
        if not after:
            found.append(path)
        stack += [[*path, d] for d in after]
    return found


@settings(max_examples=100, deadline=None)
@given(dags())
def test_hand_ons_is_the_most_node_changes_along_one_enumerated_path(
    case: tuple[Topology, np.ndarray, np.ndarray | None, int],
) -> None:
    topology = case[0]
    where = topology.placement
    changes = [sum(where[a] != where[b] for a, b in pairwise(p)) for p in _paths(topology)]
    expected = max(changes)
    assert hand_ons(topology) == expected


def test_a_long_backlog_grows_the_window_and_quiet_subintervals_are_skipped() -> None:
    """A chain over two nodes overloaded for 20 subintervals (about 100 buckets pending,
    past the initial ring of 64), drained, then quiet: the kernel equals the plain loop throughout,
    and the quiet tail (nothing pending) is 0."""
    topology = _chain()
    intervals, k = 50, 8
    port = np.zeros((2, intervals))
    port[:, :20] = 1.6
    port[:, 36:] = 0.2
    fine = np.repeat(port[:, :, None] / k, k, axis=2)
    got = origin_latency(topology, port, fine, k)
    np.testing.assert_allclose(got, reference_replay(topology, port, fine, k), atol=1e-9)
    assert got[0, 19] > 10.0 and np.all(got[0, 36:] == 0.0)


def test_a_long_chain_on_one_node_feeding_another() -> None:
    """A chain of 70 operators on one node (each bucket's work handed on within the node,
    operator after operator) feeding one on a slower node, overloaded, equals the plain
    loop."""
    ops = [
        {"id": f"o{j}", "query": "q", "inputs": [f"o{j - 1}" if j else "s0"], "cost": 0.01}
        for j in range(71)
    ]
    topology = topology_from_dict(
        {
            "subinterval": 1.0,
            "nodes": [{"id": "n0", "capacity": 1.0}, {"id": "n1", "capacity": 0.5}],
            "sources": [{"id": "s0"}],
            "operators": ops,
            "placement": {o["id"]: ("n1" if o["id"] == "o70" else "n0") for o in ops},
        }
    )
    intervals, k = 4, 2
    port = np.zeros((71, intervals))
    port[:, :2] = np.linspace(0.01, 0.03, 71)[:, None]
    port[70, :2] = 0.9
    got = origin_latency(topology, port, None, k)
    np.testing.assert_allclose(got, reference_replay(topology, port, None, k), atol=1e-9)
    assert got.max() > 1.0


def _chain(caps: tuple[float, float] = (1.0, 1.0)) -> Topology:
    """a on n0 feeds b on n1 (query q, sink b)."""
    return topology_from_dict(
        {
            "subinterval": 1.0,
            "nodes": [{"id": "n0", "capacity": caps[0]}, {"id": "n1", "capacity": caps[1]}],
            "sources": [{"id": "s0"}],
            "operators": [
                {"id": "a", "query": "q", "inputs": ["s0"], "cost": 0.01},
                {"id": "b", "query": "q", "inputs": ["a"], "cost": 0.01},
            ],
            "placement": {"a": "n0", "b": "n1"},
        }
    )


def _independent(nodes: int, capacities: list[float]) -> Topology:
    """One query per node, each a single operator fed by its own source."""
    return topology_from_dict(
        {
            "subinterval": 1.0,
            "nodes": [{"id": f"n{i}", "capacity": capacities[i]} for i in range(nodes)],
            "sources": [{"id": f"s{i}"} for i in range(nodes)],
            "operators": [
                {"id": f"o{i}", "query": f"q{i}", "inputs": [f"s{i}"], "cost": 0.01}
                for i in range(nodes)
            ],
            "placement": {f"o{i}": f"n{i}" for i in range(nodes)},
        }
    )


@st.composite
def profiles(draw: st.DrawFn, nodes: int, low: float = 0.01) -> tuple[np.ndarray, list[float]]:
    intervals, k = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    size = nodes * intervals * k
    work = draw(st.lists(st.floats(low, 2.0), min_size=size, max_size=size))
    caps = draw(st.lists(st.floats(0.5, 2.0), min_size=nodes, max_size=nodes))
    return np.array(work).reshape(nodes, intervals, k), caps


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 3).flatmap(lambda n: profiles(n)))
def test_operators_fed_by_sources_give_the_burst_aware_estimate(
    case: tuple[np.ndarray, list[float]],
) -> None:
    """Every operator fed by a source and work in every sub-bucket: per query (one node
    each) the burst peak backlog / C, and the system the burst-aware series."""
    fine, caps = case
    nodes = fine.shape[0]
    topology = _independent(nodes, caps)
    c = np.array(caps)
    port = fine.sum(axis=2)
    latency = origin_latency(topology, port, fine, fine.shape[2])
    np.testing.assert_allclose(latency, loop_peaks(fine, c) / c[:, None], atol=1e-9)
    hosts = {q: np.arange(nodes) == i for i, q in enumerate(topology.queries)}
    base = estimate_from_dlts(port, c, topology.node_ids, 1.0, 0.0, hosts)
    burst = burst_from_profile(base, burst_profile(fine, c * 1.0), hosts)
    origin = estimate_origin.apply(topology, base, Detail(node_fine=fine, port_work=port))
    np.testing.assert_allclose(origin.series, burst.series, atol=1e-9)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 3).flatmap(lambda n: profiles(n, low=0.0)))
def test_with_empty_sub_buckets_fed_by_sources_it_is_at_most_the_burst_peak(
    case: tuple[np.ndarray, list[float]],
) -> None:
    """A sub-bucket without work has no event to be late: the burst peak still counts
    the backlog left from earlier ones, the replay does not."""
    fine, caps = case
    c = np.array(caps)
    latency = origin_latency(_independent(len(caps), caps), fine.sum(axis=2), fine, fine.shape[2])
    assert np.all(latency <= loop_peaks(fine, c) / c[:, None] + 1e-9)


@settings(max_examples=100, deadline=None)
@given(dags(), st.data())
def test_on_one_node_more_work_never_lowers_any_estimate(
    case: tuple[Topology, np.ndarray, np.ndarray | None, int], data: st.DataObject
) -> None:
    """One node serves its pieces in a fixed priority (stimulus bucket, then topological
    order), so adding work to any operator port in a subinterval can only delay every
    piece: every query's estimate is monotone in the load. The node profile holds the
    same CPU as the ports (as stored profiles do) and grows with the same shape, so the
    other operators' work keeps its sub-buckets: a profile that changes shape, or holds
    more than the ports, moves or rescales their work, and that is not more load."""
    topology, port, fine, k = case
    document = topology.to_dict()
    document["nodes"] = document["nodes"][:1]
    document["placement"] = {o: "n0" for o in topology.operator_ids}
    topology = topology_from_dict(document)
    if fine is not None:  # the node's profile holds the same CPU as its ports' work
        shape, work = fine[0], port.sum(axis=0)[:, None]
        sums = shape.sum(axis=1, keepdims=True)
        fine = np.where(sums > 0, shape / np.where(sums > 0, sums, 1.0) * work, work / k)[None]
    extra = data.draw(st.floats(0.01, 2.0))
    row = data.draw(st.integers(0, port.shape[0] - 1))
    p = data.draw(st.integers(0, port.shape[1] - 1))
    more_port = port.copy()
    more_port[row, p] += extra
    more_fine = None
    if fine is not None:
        more_fine = fine.copy()
        total = fine[0, p].sum()
        if total > 0:
            more_fine[0, p] *= (total + extra) / total
        else:
            more_fine[0, p] += extra / k
    before = origin_latency(topology, port, fine, k)
    after = origin_latency(topology, more_port, more_fine, k)
    assert np.all(after >= before - 1e-9)


def test_on_several_nodes_a_slower_upstream_can_lower_another_querys_estimate() -> None:
    """Not monotone across nodes, per query: q1's a (n0) feeds b (n1); q2's c runs on n1
    from a source. More work for a delays b's work at n1, which then serves c's newer
    work first: q1 gets later, q2 earlier."""
    topology = topology_from_dict(
        {
            "subinterval": 1.0,
            "nodes": [{"id": "n0", "capacity": 1.0}, {"id": "n1", "capacity": 1.0}],
            "sources": [{"id": "s0"}, {"id": "s1"}],
            "operators": [
                {"id": "a", "query": "q1", "inputs": ["s0"], "cost": 0.01},
                {"id": "b", "query": "q1", "inputs": ["a"], "cost": 0.01},
                {"id": "c", "query": "q2", "inputs": ["s1"], "cost": 0.01},
            ],
            "placement": {"a": "n0", "b": "n1", "c": "n1"},
        }
    )
    port = np.array([[1.7, 1.5, 1.2], [1.2, 1.7, 0.0], [1.0, 0.5, 0.9]])
    slower = port.copy()
    slower[0, 0] = 3.3  # a's work of subinterval 0 (port row 0)
    before = origin_latency(topology, port, None, 1)
    after = origin_latency(topology, slower, None, 1)
    assert after[0, 0] > before[0, 0] + 1.5  # q1: 0.49 -> 2.11 s
    assert after[1, 1] < before[1, 1] - 1.5  # q2: 2.4 -> 0.59 s
    np.testing.assert_allclose(after, reference_replay(topology, slower, None, 1), atol=1e-9)


def fluid_tandem(work: np.ndarray, caps: list[float], width: float, fine_steps: int) -> np.ndarray:
    """Plain loop: node 0 serves its work (sources) oldest bucket first in steps of
    width / k / fine_steps, node 1 gets its work of a bucket in proportion to what
    node 0 served of it; the latency of each subinterval (per node)."""
    _, intervals, k = work.shape
    x = work.reshape(2, -1)
    buckets = intervals * k
    dt = width / k / fine_steps
    pending = np.zeros((2, buckets))
    finish = np.full((2, buckets), -np.inf)
    step = 0
    while step < buckets * fine_steps or pending.sum() > 1e-12:
        if step % fine_steps == 0 and step // fine_steps < buckets:
            pending[0, step // fine_steps] += x[0, step // fine_steps]
        for node in (0, 1):
            budget = caps[node] * dt
            for s in range(buckets):
                if pending[node, s] > 1e-15 and budget > 0:
                    served = min(pending[node, s], budget)
                    pending[node, s] -= served
                    budget -= served
                    finish[node, s] = step * dt + (caps[node] * dt - budget) / caps[node]
                    if node == 0:
                        pending[1, s] += served * x[1, s] / x[0, s]
        step += 1
    ends = (np.arange(buckets) + 1) * width / k
    return np.maximum(finish - ends, 0.0).reshape(2, intervals, k).max(axis=2)


@settings(max_examples=30, deadline=None)
@given(profiles(2))
def test_a_tandem_is_within_one_step_of_a_finer_fluid_replay(
    case: tuple[np.ndarray, list[float]],
) -> None:
    fine, caps = case
    topology = _chain((caps[0], caps[1]))
    # each node hosts one operator: its profile is its operator's work
    latency = origin_latency(topology, fine.sum(axis=2), fine, fine.shape[2])
    reference = fluid_tandem(fine, caps, 1.0, 50)[1]  # the sink b, on n1
    step = 1.0 / fine.shape[2]
    ratio = (fine[1] / fine[0]).max() * caps[0] / caps[1]
    assert np.all(np.abs(latency[0] - reference) <= step * max(1.0, ratio) + 1e-6)


def test_without_a_profile_work_is_spread_evenly() -> None:
    """No node profile: every sub-bucket gets 1/k of the subinterval's work (A-2)."""
    topology = _chain()
    port = np.array([[3.0, 0.5], [1.0, 0.5]])
    even = np.repeat(port[:, :, None] / 4, 4, axis=2)
    np.testing.assert_allclose(
        origin_latency(topology, port, None, 4), origin_latency(topology, port, even, 4)
    )


def test_a_query_is_as_late_as_its_sinks() -> None:
    """a: 2 s of work in one 1 s bucket, ends at 2 (1 s late); b gets half of a's work
    each step and serves it from the step's start, ending at 1.5: half a step before a
    fluid b (keeping up, ends at 2). The query's sink is b: 0.5 s."""
    topology = _chain()
    port = np.array([[2.0], [1.0]])
    np.testing.assert_allclose(origin_latency(topology, port, None, 1), [[0.5]])


def test_a_run_analysis_carries_each_estimators_own_band() -> None:
    """``analyse`` keeps the band the estimator documents: Mace + w + eps for Mace,
    max(per-origin, Mace) + (h + 2)w/k + eps for per-origin with the sources' profile
    (h = 1 hand-on from n1 to n2 here, w = 1), + w/4 more with a node profile only, + 2w
    + eps without a profile, the burst-aware band for burst; the lower edge stays Mace."""
    topology = _chain()
    port = np.array([[1.6, 1.6, 0.2, 0.0], [1.2, 1.2, 0.3, 0.0]])
    k = 4
    fine = np.zeros((2, 4, k))
    fine[:, :, 0] = port  # every subinterval's work arrives in its first quarter
    dlts = port  # one operator per node: the node's DLTS is its port's work
    detail = Detail(node_fine=fine, port_work=port)
    eps = 0.01 + 0.01
    mace = analyse(topology, dlts, [topology.placement], (0,), "mace", detail)
    origin = analyse(topology, dlts, [topology.placement], (0,), "origin", detail)
    even = analyse(topology, dlts, [topology.placement], (0,), "origin", Detail(port_work=port))
    burst = analyse(topology, dlts, [topology.placement], (0,), "burst", detail)
    np.testing.assert_allclose(mace.upper, mace.estimate + 1.0 + eps)
    series = origin_latency(topology, port, fine, k).max(axis=0)
    np.testing.assert_allclose(origin.estimate, series)
    np.testing.assert_allclose(origin.upper, np.maximum(series, mace.estimate) + 3 / k + 0.25 + eps)
    events = fine[:1, :, :] * 100  # the source's events: all in the first quarter too
    by_source = analyse(
        topology,
        dlts,
        [topology.placement],
        (0,),
        "origin",
        Detail(port_work=port, source_fine=events),
    )
    source_series = origin_latency(topology, port, None, k, source_fine=events).max(axis=0)
    np.testing.assert_allclose(by_source.estimate, source_series)
    np.testing.assert_allclose(
        by_source.upper, np.maximum(source_series, mace.estimate) + 3 / k + eps
    )
    even_series = origin_latency(topology, port, None, SUB_BUCKETS).max(axis=0)
    np.testing.assert_allclose(even.upper, np.maximum(even_series, mace.estimate) + 2 + eps)
    base = estimate_from_dlts(
        dlts, np.ones(2), topology.node_ids, 1.0, eps, {"q": np.ones(2, bool)}
    )
    np.testing.assert_allclose(burst.upper, estimate_burst.apply(topology, base, detail).upper)
    for analysis in (origin, even, burst):
        np.testing.assert_allclose(analysis.lower, mace.estimate)
    assert origin.upper[0] != mace.upper[0]  # the bands differ


def test_a_backlog_past_the_state_limit_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """The replay state grows with the backlog window; past MAX_STATE_BYTES the estimator
    says so instead of running the process out of memory."""
    from estimator import origins

    monkeypatch.setattr(origins, "MAX_STATE_BYTES", 64 * 8 * 4)  # 64 slots of 2 ops, 1 port
    port = np.zeros((2, 50))
    port[:, :20] = 1.6  # about 100 buckets pending at the peak
    with pytest.raises(ModelError, match=r"per-origin: a backlog window of .* use the burst"):
        origin_latency(_chain(), port, None, 8)


def test_from_arrivals_and_in_what_if_it_replays_the_models_port_work() -> None:
    """``mace estimate --estimator origin`` and What-if have arrivals, not measurements:
    the replay runs on the model's load per port, spread evenly, with the band
    max(per-origin, Mace) + 2w + eps."""
    from estimator.arrivals import Arrivals
    from estimator.propagation import build_load_model, port_load
    from estimator.whatif import Scenario, evaluate_scenario

    topology = _chain()
    arrivals = Arrivals(("s0",), np.array([[160.0, 160.0, 20.0, 0.0, 0.0]]))
    port = port_load(topology, build_load_model(topology, arrivals.for_topology(topology)))
    expected = origin_latency(topology, port, None, SUB_BUCKETS).max(axis=0)
    direct = estimate_origin(topology, arrivals)
    np.testing.assert_allclose(direct.series, expected)
    assert direct.worst_case > 1.0  # a backlog that a tandem replay sees
    np.testing.assert_allclose(
        direct.upper, np.maximum(expected, direct.lower) + 2.0 + direct.epsilon
    )
    scenario = evaluate_scenario(topology, arrivals, Scenario(), estimator="origin")
    np.testing.assert_allclose(scenario.estimate.series, expected)
