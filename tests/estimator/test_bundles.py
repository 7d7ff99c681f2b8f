"""The bundle cycle of a Python operator against a record-by-record reference."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from estimator.bundles import (
    calm_cycle,
    cycle_excess,
    cycle_latency,
    full_bundle_work,
    record_work,
)
from estimator.errors import ModelError
from estimator.model import topology_from_dict
from estimator.python_worker import with_python_workers
from estimator.runs import analyse, bundle_excess
from tests.estimator.plain_bundles import plain_cycle_latency

RECORDS_PER_SECOND = 200
"""The reference's records per subinterval of 1 s: the model's work spread evenly, each
record at the end of its slot, so that at every tick (a multiple of 1/200 s here) the
records in equal the model's work."""


def reference(
    work: list[float],
    bundle_time: float,
    overhead: float,
    phase: float,
    size: int | None,
    checkpoint: tuple[float, float] | None = None,
) -> np.ndarray:
    """Per subinterval of 1 s, the largest latency of the records that arrive in it,
    from records played one by one through Flink's rules, event by event: the thread
    takes each record when it comes (or when it is free again); it finishes its bundle at
    once when ``size`` records are in, when a timer every ``bundle_time`` from ``phase``
    finds at least ``bundle_time`` gone since the previous finish ended and the bundle
    holds records, and when a checkpoint barrier (every ``checkpoint[0]`` from
    ``checkpoint[1]``) reaches it, behind the records come before it; the finish blocks
    the thread for ``overhead`` plus the records' work, which leave in order as the
    worker runs them."""
    arrivals: list[tuple[float, float, int]] = []  # (time, cost, subinterval)
    for k, w in enumerate(work):
        if w > 0:
            for j in range(RECORDS_PER_SECOND):
                arrivals.append((k + (j + 1) / RECORDS_PER_SECOND, w / RECORDS_PER_SECOND, k))
    out = np.full(len(work), -np.inf)
    limit = size if size is not None else math.inf
    last_end = free = 0.0
    bundle: list[tuple[float, float, int]] = []
    tick = phase if phase > 0 else bundle_time
    barrier = math.inf if checkpoint is None else checkpoint[1] or checkpoint[0]
    period = math.inf if checkpoint is None else checkpoint[0]
    next_record = 0

    def finish(at: float) -> None:
        nonlocal free, last_end
        clock = at + overhead
        for arrived, cost, k in bundle:
            clock += cost
            out[k] = max(out[k], clock - arrived)
        bundle.clear()
        free = last_end = clock

    while next_record < len(arrivals) or bundle:
        while tick < free:  # ticks while it ran do nothing
            tick += bundle_time
        arrival = arrivals[next_record][0] if next_record < len(arrivals) else math.inf
        if arrival <= barrier and max(arrival, free) <= min(tick, max(barrier, free)):
            bundle.append(arrivals[next_record])
            next_record += 1
            if len(bundle) >= limit:
                finish(max(arrival, free))
        elif max(barrier, free) <= tick:
            if bundle:
                finish(max(barrier, free))
            barrier += period
        else:
            if bundle and tick - last_end >= bundle_time:
                finish(tick)
            tick += bundle_time
    return out


def test_hand_computed_burst() -> None:
    """T = 1 s, timer ticks at 1, 2, 3, ...; 0.05 s of work a second, 0.7 s a second
    in seconds 6-10, then 0.05 again.

    Calm: the bundle taken at 3 runs 0.1 s and ends at 3.1, so 4 is too soon (0.9 s
    after) and the next is taken at 5: a 2 s cycle; the record come just after 3 leaves
    first at 5 (subinterval 3: 2 s), the one come just before 4 after 0.05 s of work
    (subinterval 4: 1.05 s). Taken at 7: (5, 7] holds 0.75 s of work, ends at 7.75, next
    at 9. Taken at 9: (7, 9] holds 1.4 s, ends at 10.4; 11 is 0.6 s after, so the next
    is taken at 12: the record come just after 9 leaves at 12 (subinterval 9: 3 s).

    With bundles of 0.35 s of work at most (a bundle size), the first fills at 6 +
    0.3 / 0.7 = 6.4286 and is finished at once, and so is every one after it, each 0.5 s
    of records: a record waits 0.5 s at most for its bundle to fill (subintervals 6-9).
    The last fills at 10.9286; the records after it wait for the tick at 13, the first
    one 2.0714 s."""
    work = np.array([0.05] * 6 + [0.7] * 5 + [0.05] * 9)
    latency = cycle_latency(work, 1.0, 1.0, 0.0, 0.0)
    assert calm_cycle(1.0) == 2.0
    assert calm_cycle(1.0, 0.2) == 2.2
    assert calm_cycle(1.0, 0.0, checkpoint=0.7) == 0.7 and calm_cycle(1.0, 0.0, 5.0) == 2.0
    assert latency[[3, 4, 9]] == pytest.approx([2.0, 1.05, 3.0])
    assert cycle_excess(work, 1.0, 1.0).max() > 0.5
    assert np.all(cycle_excess(np.full(20, 0.05), 1.0, 1.0) == 0.0)
    # checkpoints every 0.7 s finish the bundles more often than the timer does: the
    # calm cycle is theirs, and the burst's bundles are cut at the barriers
    barriers = cycle_latency(work, 1.0, 1.0, 0.0, 0.0, checkpoint=0.7, checkpoint_phase=0.1)
    assert barriers == pytest.approx([0.7] * 20)  # a bundle never waits past a barrier
    assert cycle_excess(np.full(20, 0.05), 1.0, 1.0, checkpoint=0.7) == pytest.approx([0.0] * 20)
    sized = cycle_latency(work, 1.0, 1.0, 0.0, 0.0, bundle_work=0.35)
    assert sized[6:10] == pytest.approx([0.5] * 4)
    assert sized[10] == pytest.approx(13 - (6 + 0.3 / 0.7 + 4.5))
    assert sized[3] == pytest.approx(2.0)  # calm bundles never fill


@settings(max_examples=60, deadline=None)
@given(
    work=st.lists(
        st.sampled_from([0.0, 0.0231, 0.1173, 0.3191, 0.6112, 0.8837]), min_size=4, max_size=16
    ),
    bundle_time=st.sampled_from([0.5, 1.0, 2.0]),
    overhead=st.sampled_from([0.0, 0.0417]),
    phase_share=st.sampled_from([0.0, 0.25, 0.6]),
    size=st.sampled_from([None, 37, 149]),
    checkpoint=st.sampled_from([None, (0.7037, 0.1313), (3.3071, 1.9037)]),
)
def test_matches_records_played_one_by_one(
    work: list[float],
    bundle_time: float,
    overhead: float,
    phase_share: float,
    size: int | None,
    checkpoint: tuple[float, float] | None,
) -> None:
    """Per subinterval with records, the model's latency agrees with the record-by-record
    reference within a few records' spacing and work. A bundle size is a number of
    records; in the model it is their work, which the drawn work makes exact when every
    subinterval with records has the same work. (Works, overheads and checkpoint times
    avoid a bundle that runs a whole number of bundle times: at such a tie the next tick
    is taken or not by a rounding error.)"""
    loaded = [w for w in work if w > 0]
    if size is not None and len(set(loaded)) > 1:
        work = [loaded[0] if w > 0 else 0.0 for w in work]
    per_record = (loaded[0] / RECORDS_PER_SECOND) if loaded else 0.0
    bundle_work = math.inf if size is None else size * per_record
    phase = phase_share * bundle_time
    every, offset = checkpoint if checkpoint is not None else (None, 0.0)

    def model(scale: float, shift: float = 0.0) -> np.ndarray:
        return cycle_latency(
            np.array(work) * scale, 1.0, bundle_time, overhead, phase + shift,
            bundle_work * scale, every, offset + shift,
        )  # fmt: skip

    played = reference(work, bundle_time, overhead, phase, size, checkpoint)
    seen = np.isfinite(played)
    tolerance = 2.0 / RECORDS_PER_SECOND + 2 * per_record
    # a finish that ends within a record's spacing of a tick's threshold is a tie that
    # records and fluid work may break either way: such draws are left out
    spacing = 1.0 / RECORDS_PER_SECOND
    near = [model(0.99, -spacing), model(1.01, spacing)]
    assume(all(np.all(np.abs(m[seen] - model(1.0)[seen]) <= tolerance) for m in near))
    assert np.all(np.abs(model(1.0)[seen] - played[seen]) <= tolerance)


@settings(max_examples=200, deadline=None)
@given(
    work=st.lists(st.one_of(st.just(0.0), st.floats(0.001, 3.0)), min_size=1, max_size=40),
    subinterval=st.sampled_from([0.5, 1.0, 2.0]),
    bundle_time=st.floats(0.05, 3.0),
    overhead=st.one_of(st.just(0.0), st.floats(0.0, 0.5)),
    phase_share=st.floats(0.0, 0.99),
    bundle_work=st.one_of(st.just(math.inf), st.floats(0.01, 4.0)),
    checkpoint=st.one_of(st.none(), st.tuples(st.floats(0.3, 10.0), st.floats(0.0, 0.99))),
)
def test_the_compiled_play_is_the_plain_one(
    work: list[float],
    subinterval: float,
    bundle_time: float,
    overhead: float,
    phase_share: float,
    bundle_work: float,
    checkpoint: tuple[float, float] | None,
) -> None:
    """Any work, settings and phases: the compiled play gives the plain Python play's
    latencies, step for step."""
    every, share = checkpoint if checkpoint is not None else (None, 0.0)
    args = (np.array(work), subinterval, bundle_time, overhead, phase_share * bundle_time,
            bundle_work, every, share * (every or 0.0))  # fmt: skip
    np.testing.assert_allclose(cycle_latency(*args), plain_cycle_latency(*args), rtol=1e-9)


def chain_document(bundle_time: float | None, size: int | None = None) -> dict[str, Any]:
    """A source, a Python thread (3 ms a record) in a 2-core machine, and its sink."""
    thread: dict[str, Any] = {"id": "py", "capacity": 1.0, "host": "tm"}
    if bundle_time is not None:
        thread["bundle_time"] = bundle_time
    if size is not None:
        thread["bundle_size"] = size
    return {
        "name": "chain",
        "nodes": [thread, {"id": "tm", "capacity": 2.0}],
        "sources": [{"id": "s"}],
        "operators": [
            {"id": "udf", "query": "q", "inputs": ["s"], "cost": 0.003, "selectivity": 0.5},
            {"id": "sink", "query": "q", "inputs": ["udf"], "cost": 0.001},
        ],
        "placement": {"udf": "py", "sink": "py"},
    }


def test_a_thread_with_a_bundle_time_adds_the_cycles_rise_to_its_queries() -> None:
    """At 70% of the thread no backlog forms, but the bundle cycle stretches: the
    query's estimate is the rise above the calm cycle, which the calm delay holds. With
    a bundle size the rise follows the full bundles' work passed in."""
    load = np.array([[0.7] * 10 + [0.05] * 10])  # the thread's work per second
    hosts_load = np.vstack([load, load])
    placement = [{"udf": "py", "sink": "py"}]
    plain = analyse(topology_from_dict(chain_document(None)), hosts_load, placement, [0])
    bundled = analyse(topology_from_dict(chain_document(1.0)), hosts_load, placement, [0])
    expected = cycle_excess(load[0], 1.0, 1.0)
    assert np.all(plain.per_query["q"] == 0.0) and not plain.bundle_rise
    assert expected.max() >= 1.0
    np.testing.assert_allclose(bundled.bundle_rise["q"], expected)
    np.testing.assert_allclose(bundled.per_query["q"], expected)
    np.testing.assert_allclose(bundled.estimate, expected)
    assert np.all(bundled.upper >= bundled.estimate)
    sized = topology_from_dict(chain_document(1.0, 100))
    full = analyse(sized, hosts_load, placement, [0], bundle_work={"py": 0.35})
    np.testing.assert_allclose(
        full.bundle_rise["q"], cycle_excess(load[0], 1.0, 1.0, bundle_work=0.35)
    )
    assert full.bundle_rise["q"].max() < expected.max()


def test_a_full_bundle_is_its_records_work_through_the_thread() -> None:
    """udf costs 3 ms and passes half its records to sink (1 ms), on the same thread:
    a record entering the thread costs 3 + 0.5 x 1 = 3.5 ms, a bundle of 100 of them
    0.35 s. A thread without a size has no full bundle."""
    topology = topology_from_dict(chain_document(1.0, 100))
    assert record_work(topology, "udf", 0) == pytest.approx(0.0035)
    assert record_work(topology, "sink", 0) == pytest.approx(0.001)
    assert full_bundle_work(topology) == {"py": pytest.approx(0.35)}
    assert full_bundle_work(topology_from_dict(chain_document(1.0))) == {}


def test_bundle_settings_round_trip_and_bad_ones_are_named() -> None:
    document = chain_document(0.05, 1000)
    document["nodes"][0]["checkpoint_interval"] = 10.0
    topology = topology_from_dict(document)
    assert topology_from_dict(topology.to_dict()) == topology
    assert topology.to_dict()["nodes"][0]["bundle_size"] == 1000
    assert topology.nodes[0].checkpoint_interval == 10.0
    assert topology.nodes[0].bundles and not topology.nodes[1].bundles
    for key, value, message in (
        ("bundle_time", 0.0, "bundle_time"),
        ("bundle_time", "1s", "bundle_time"),
        ("bundle_size", 0, "bundle_size"),
        ("bundle_size", 1.5, "bundle_size"),
        ("bundle_size", True, "bundle_size"),
        ("checkpoint_interval", 0, "checkpoint_interval"),
        ("checkpoint_interval", "1s", "checkpoint_interval"),
    ):
        bad = chain_document(1.0)
        bad["nodes"][0][key] = value
        with pytest.raises(ModelError, match=f"node '{node_id(bad)}' {message}"):
            topology_from_dict(bad)


def node_id(document: dict[str, Any]) -> str:
    return str(document["nodes"][0]["id"])


def test_python_threads_run_bundles_as_their_taskmanager_says() -> None:
    """The collector records the job's bundle settings on its TaskManager (a node with
    ``python_workers``, which runs no bundles itself); the threads whose Python work
    was measured take them with their worker, a Java thread does not."""
    document = chain_document(None)
    document["nodes"][1] |= {
        "python_workers": "shared",
        "bundle_time": 0.5,
        "bundle_size": 64,
        "checkpoint_interval": 10.0,
    }
    document["nodes"].append({"id": "java", "capacity": 1.0, "host": "tm"})
    document["operators"][1]["inputs"] = ["udf"]
    document["placement"]["sink"] = "java"
    stats = pd.DataFrame(
        {
            "operator": ["udf", "sink"],
            "port": [0, 0],
            "interval": [0, 0],
            "events_in": [10.0, 5.0],
            "events_out": [5.0, 0.0],
            "cpu_seconds": [0.1, 0.01],
            "work_seconds": [0.03, np.nan],
        }
    )
    nodes = {n.id: n for n in with_python_workers(topology_from_dict(document), stats).nodes}
    py = nodes["py"]
    assert (py.bundle_time, py.bundle_size, py.checkpoint_interval, py.bundles) == (
        0.5,
        64,
        10.0,
        True,
    )
    assert nodes["py"].host == "python-worker@tm"
    assert nodes["java"].bundle_time is None and not nodes["tm"].bundles


def test_a_join_adds_the_slower_input_path_not_both() -> None:
    """Two sources, each parsed on its own Python thread, joined on a third: a record
    crosses one parser and the join, so the query's rise is the larger parser's plus
    the join's, interval by interval (a thread counted once per path)."""
    document = {
        "name": "join",
        "nodes": [
            {"id": "left", "capacity": 1.0, "bundle_time": 1.0},
            {"id": "right", "capacity": 1.0, "bundle_time": 1.0},
            {"id": "joiner", "capacity": 1.0, "bundle_time": 1.0},
        ],
        "sources": [{"id": "s1"}, {"id": "s2"}],
        "operators": [
            {"id": "p1", "query": "q", "inputs": ["s1"], "cost": 0.001},
            {"id": "p2", "query": "q", "inputs": ["s2"], "cost": 0.001},
            {"id": "j", "query": "q", "inputs": ["p1", "p2"], "cost": [0.001, 0.001]},
            {"id": "out", "query": "q", "inputs": ["j"], "cost": 1e-6},
        ],
        "placement": {"p1": "left", "p2": "right", "j": "joiner", "out": "joiner"},
    }
    topology = topology_from_dict(document)
    loads = np.array(
        [[0.7] * 8 + [0.05] * 8, [0.05] * 4 + [0.8] * 6 + [0.05] * 6, [0.6] * 10 + [0.05] * 6]
    )
    rises = [cycle_excess(row, 1.0, 1.0) for row in loads]
    expected = np.maximum(rises[0], rises[1]) + rises[2]
    got = bundle_excess(topology, loads, [topology.placement], [0])
    assert (np.minimum(rises[0], rises[1]) > 0).any()  # both rise at once somewhere
    np.testing.assert_allclose(got["q"], expected)


def test_a_rescaled_thread_plays_each_subtask_with_its_share_of_the_work() -> None:
    """The thread runs 1 subtask for 10 s, then 2 (a rescale): from then on each
    subtask's bundles carry half the thread's work, and its cycles stretch less than
    the one subtask's would."""
    topology = topology_from_dict(chain_document(1.0))
    load = np.array([0.7] * 20)
    capacities = np.array([[1.0] * 10 + [2.0] * 10, [2.0] * 20])
    rises = bundle_excess(
        topology, np.vstack([load, load]), [topology.placement], [0], capacities=capacities
    )
    np.testing.assert_allclose(rises["q"], cycle_excess(load / capacities[0], 1.0, 1.0))
    alone = cycle_excess(load, 1.0, 1.0)
    np.testing.assert_allclose(rises["q"][:10], alone[:10])
    assert rises["q"][12:].max() < alone[12:].min()
