"""The bundle cycle of a Python operator against a record-by-record reference."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimator.bundles import calm_cycle, cycle_excess, cycle_latency
from estimator.errors import ModelError
from estimator.model import topology_from_dict
from estimator.runs import analyse, bundle_excess

RECORDS_PER_SECOND = 200
"""The reference's records per subinterval of 1 s: the model's work spread evenly, each
record at the end of its slot, so that at every tick (a multiple of 1/200 s here) the
records in equal the model's work."""


def reference(
    work: list[float], bundle_time: float, overhead: float, phase: float
) -> tuple[np.ndarray, float]:
    """Per subinterval of 1 s, the largest latency of the records that leave in it, and
    the largest of the run (records leaving after its last subinterval not counted),
    from records played one by one through Flink's rule: a timer every
    ``bundle_time`` from ``phase`` finishes the bundle when at least ``bundle_time``
    went by since the previous finish ended and it holds records; the finish blocks the
    thread for ``overhead`` plus the records' work, which leave in order as the worker
    runs them; records that come meanwhile join the next bundle."""
    arrivals: list[tuple[float, float]] = []  # (time, cost)
    for k, w in enumerate(work):
        if w > 0:
            for j in range(RECORDS_PER_SECOND):
                arrivals.append((k + (j + 1) / RECORDS_PER_SECOND, w / RECORDS_PER_SECOND))
    out = np.full(len(work), -np.inf)
    worst = -np.inf
    last_end = -math.inf
    next_record = 0
    tick = phase if phase > 0 else bundle_time
    while next_record < len(arrivals):
        if tick - last_end >= bundle_time:
            bundle = []
            while next_record < len(arrivals) and arrivals[next_record][0] <= tick:
                bundle.append(arrivals[next_record])
                next_record += 1
            if bundle:
                clock = tick + overhead
                for arrived, cost in bundle:
                    clock += cost
                    latency = clock - arrived
                    k = int(clock)
                    if k < len(work):  # the run ends with its last subinterval
                        out[k] = max(out[k], latency)
                        worst = max(worst, latency)
                last_end = clock
        tick += bundle_time
    return out, worst


def test_hand_computed_burst() -> None:
    """T = 1 s, timer ticks at 1, 2, 3, ...; 0.05 s of work a second, 0.7 s a second
    in seconds 6-10, then 0.05 again.

    Calm: the bundle taken at 3 runs 0.1 s and ends at 3.1, so 4 is too soon (0.9 s
    after) and the next is taken at 5: a 2 s cycle, whose first record waited 2 s.
    Taken at 7: (5, 7] holds 0.75 s of work, ends at 7.75, next at 9. Taken at 9:
    (7, 9] holds 1.4 s, ends at 10.4; 11 is 0.6 s after, so the next is taken at 12, a
    3 s cycle: the record come just after 9 leaves at 12 (latency 3 s), and the bundle
    (1.45 s) leaves over 12-13.45. The next is taken at 15 (14 is 0.55 s after): 3 s
    again, then 2 s cycles from 15 on."""
    work = np.array([0.05] * 6 + [0.7] * 5 + [0.05] * 9)
    latency = cycle_latency(work, 1.0, 1.0, 0.0, 0.0)
    assert calm_cycle(1.0) == 2.0
    assert calm_cycle(1.0, 0.2) == 2.2
    assert np.allclose(latency[[5, 9, 10]], 2.0)
    assert np.allclose(latency[[12, 13, 15]], 3.0)
    assert np.allclose(latency[17], 2.0)
    assert cycle_excess(work, 1.0, 1.0).max() > 0.0
    assert np.all(cycle_excess(np.full(20, 0.05), 1.0, 1.0) == 0.0)
    assert np.allclose(cycle_excess(work, 1.0, 1.0, stages=2), 2 * cycle_excess(work, 1.0, 1.0))


@settings(max_examples=40, deadline=None)
@given(
    work=st.lists(
        st.sampled_from([0.0, 0.0231, 0.1173, 0.3191, 0.6112, 0.8837]), min_size=4, max_size=16
    ),
    bundle_time=st.sampled_from([0.5, 1.0, 2.0]),
    overhead=st.sampled_from([0.0, 0.0417, 0.2913]),
    phase_share=st.sampled_from([0.0, 0.25, 0.6]),
)
def test_matches_records_played_one_by_one(
    work: list[float], bundle_time: float, overhead: float, phase_share: float
) -> None:
    """The run's largest latency agrees with the record-by-record reference within one
    record's spacing and work, and no subinterval where records leave is below it.
    (Works and overheads avoid a bundle that runs a whole number of bundle times: at
    such a tie the next tick is taken or not by a rounding error.)"""
    phase = phase_share * bundle_time
    model = cycle_latency(np.array(work), 1.0, bundle_time, overhead, phase)
    per_subinterval, worst = reference(work, bundle_time, overhead, phase)
    tolerance = 2.0 / RECORDS_PER_SECOND
    left = np.isfinite(per_subinterval)
    if not left.any():
        return
    assert abs(float(model[left].max()) - worst) <= tolerance
    assert np.all(model[left] >= per_subinterval[left] - tolerance)


def chain_document(bundle_time: float | None) -> dict[str, Any]:
    """A source, a Python thread (3 ms a record) in a 2-core machine, and its sink."""
    thread: dict[str, Any] = {"id": "py", "capacity": 1.0, "host": "tm"}
    if bundle_time is not None:
        thread["bundle_time"] = bundle_time
    return {
        "name": "chain",
        "nodes": [thread, {"id": "tm", "capacity": 2.0}],
        "sources": [{"id": "s"}],
        "operators": [
            {"id": "udf", "query": "q", "inputs": ["s"], "cost": 0.003},
            {"id": "sink", "query": "q", "inputs": ["udf"], "cost": 1e-6},
        ],
        "placement": {"udf": "py", "sink": "py"},
    }


def test_a_thread_with_a_bundle_time_adds_the_cycles_rise_to_its_queries() -> None:
    """At 70% of the thread no backlog forms, but the bundle cycle stretches: the
    query's estimate is the rise above the calm cycle, which the calm delay holds."""
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


def test_bundle_times_round_trip_and_bad_ones_are_named() -> None:
    document = chain_document(0.05)
    document["nodes"][0]["bundle_stages"] = 2
    topology = topology_from_dict(document)
    assert topology_from_dict(topology.to_dict()) == topology
    assert topology.to_dict()["nodes"][0]["bundle_stages"] == 2
    for key, value, message in (
        ("bundle_time", 0.0, "bundle_time"),
        ("bundle_time", "1s", "bundle_time"),
        ("bundle_stages", 0, "bundle_stages"),
        ("bundle_stages", 1.5, "bundle_stages"),
    ):
        bad = chain_document(1.0)
        bad["nodes"][0][key] = value
        with pytest.raises(ModelError, match=f"node 'py' {message}"):
            topology_from_dict(bad)


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
