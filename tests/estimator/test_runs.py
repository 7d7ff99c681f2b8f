"""Run analysis helpers: the one rule for placement versions over intervals, per-query
Mace with a placement that changes over time, and node loads from measured rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimator.mace import per_query_max
from estimator.model import first_interval_from, topology_from_dict, version_at, version_starts
from estimator.runs import measured_node_dlts


@pytest.mark.parametrize(
    ("valid_from", "first"),
    [
        (102.0, 2),  # exactly origin + 2w: interval 2 starts with the new placement
        (102.0 - 1e-6, 2),  # just before the boundary: still from interval 2
        (102.0 + 1e-6, 3),  # just after it: interval 2 started under the old placement
        (99.0, 0),  # before the origin: from interval 0
    ],
)
def test_first_interval_at_a_version_boundary(valid_from: float, first: int) -> None:
    assert first_interval_from(valid_from, 100.0, 1.0) == first


def test_boundary_survives_float_rounding() -> None:
    """0.0 + 3 * 0.3 is 0.8999999999999999 < 0.9: comparing times said interval 3 still
    ran the old placement, while 0.9 s is the start of interval 3."""
    assert 3 * 0.3 < 0.9
    starts = version_starts([0.0, 0.9], 0.0, 0.3)
    assert starts == (0, 3)
    assert [version_at(starts, k) for k in range(5)] == [0, 0, 0, 1, 1]


def test_version_at_with_several_versions() -> None:
    starts = version_starts([100.0, 102.0, 102.5, 104.0], 100.0, 1.0)
    assert starts == (0, 2, 3, 4)
    assert [version_at(starts, k) for k in range(6)] == [0, 0, 1, 2, 3, 3]


def test_per_query_max_with_a_fixed_and_a_moving_mask() -> None:
    ce = np.array([[1.0, 0.0, 3.0], [2.0, 5.0, 0.5]])
    np.testing.assert_array_equal(per_query_max(ce, np.array([True, False])), [1.0, 0.0, 3.0])
    moving = np.array([[True, True, False], [False, True, False]])
    np.testing.assert_array_equal(per_query_max(ce, moving), [1.0, 5.0, 0.0])


def test_measured_node_dlts_follow_versions_and_skip_unknown_rows() -> None:
    topology = topology_from_dict(
        {
            "name": "t",
            "nodes": [{"id": "n1", "capacity": 1.0}, {"id": "n2", "capacity": 1.0}],
            "sources": [{"id": "s"}],
            "operators": [
                {"id": "a", "query": "q", "inputs": ["s"], "cost": 0.1, "selectivity": 1.0},
                {"id": "b", "query": "q", "inputs": ["a"], "cost": 0.1, "selectivity": 1.0},
            ],
            "placement": {"a": "n1", "b": "n2"},
        }
    )
    cpu = pd.DataFrame(
        {
            "operator": ["a", "b", "a", "b", "zz", "a"],
            "interval": [0, 0, 1, 1, 0, 7],
            "cpu": [0.1, 0.2, 0.3, 0.4, 9.0, 9.0],
        }
    )
    moved = [{"a": "n1", "b": "n2"}, {"a": "n2", "b": "n2"}]
    dlts = measured_node_dlts(topology, cpu, moved, (0, 1), 2)
    np.testing.assert_allclose(dlts, [[0.1, 0.0], [0.2, 0.7]])


COUNTER_TOPOLOGY = {
    "name": "flink",
    "nodes": [{"id": "a-threads", "capacity": 1.0}, {"id": "b-threads", "capacity": 1.0}],
    "sources": [{"id": "s"}],
    "operators": [
        {"id": "a", "query": "q", "inputs": ["s"], "cost": 0.001, "selectivity": 1.0},
        {"id": "b", "query": "q", "inputs": ["a"], "cost": 0.001, "selectivity": 1.0},
    ],
    "placement": {"a": "a-threads", "b": "b-threads"},
}


def _stats(rows: list[tuple[str, int, int, int, float]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=["operator", "interval", "events_in", "events_out", "cpu"])
    return frame.rename(columns={"cpu": "cpu_seconds"}).assign(port=0)


def test_offered_work_shows_the_backlog_that_busy_time_hides() -> None:
    """An overloaded thread is busy 1.0 s of every second whatever arrives: its busy time
    gives no excess, the work offered (arrivals x cost) does. Its downstream operator's
    records come out of that backlog at 100 a second, but their work belongs to the
    seconds their events arrived in: 300 a second x 2 ms (the paper's DLTS, by stimulus
    time), which a resource both threads share has to serve to get them through."""
    from estimator.runs import estimated_operator_dlts, offered_operator_dlts

    topology = topology_from_dict(COUNTER_TOPOLOGY)
    # 300 events/s arrive for 3 s at a, which does 100 events/s at 10 ms each (saturated),
    # then works off the backlog; b receives what a emits.
    counts = np.array([[300.0, 300.0, 300.0, 0.0, 0.0, 0.0]])
    stats = _stats(
        [("a", k, 100, 100, 1.0) for k in range(6)] + [("b", k, 100, 100, 0.2) for k in range(6)]
    )
    offered = offered_operator_dlts(topology, stats, counts, 6)
    # fitted cost of a: 6.0 s / 600 events = 10 ms; b: 1.2 s / 600 = 2 ms
    np.testing.assert_allclose(offered[0], [3.0, 3.0, 3.0, 0.0, 0.0, 0.0])
    np.testing.assert_allclose(offered[1], [0.6, 0.6, 0.6, 0.0, 0.0, 0.0])
    common = {"stats": stats, "counts": counts}
    busy = stats.rename(columns={"cpu_seconds": "cpu"})
    by_busy = estimated_operator_dlts(topology, cpu=busy, counters=False, intervals=6, **common)
    by_offer = estimated_operator_dlts(topology, cpu=busy, counters=True, intervals=6, **common)
    np.testing.assert_allclose(by_busy[0], [1.0] * 6)  # never above capacity: CE stays 0
    np.testing.assert_allclose(by_offer[0], [3.0, 3.0, 3.0, 0.0, 0.0, 0.0])


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_offered_work_matches_a_plain_loop(seed: int) -> None:
    """Each operator's work per subinterval: its source's arrivals there through the
    selectivities upstream, times its cost, all fitted over the whole run."""
    from estimator.runs import offered_operator_dlts

    rng = np.random.default_rng(seed)
    topology = topology_from_dict(COUNTER_TOPOLOGY)
    intervals = 7
    counts = rng.integers(0, 50, (1, intervals)).astype(float)
    rows = []
    for op in ("a", "b"):
        for k in range(intervals):
            events = int(rng.integers(1, 40))
            rows.append((op, k, events, int(rng.integers(0, 40)), float(rng.uniform(0, 0.5))))
    stats = _stats(rows)
    cost = {
        op: stats.loc[stats["operator"] == op, "cpu_seconds"].sum()
        / stats.loc[stats["operator"] == op, "events_in"].sum()
        for op in ("a", "b")
    }
    a = stats[stats["operator"] == "a"]
    selectivity = a["events_out"].sum() / a["events_in"].sum()
    expected = np.zeros((2, intervals))
    for k in range(intervals):
        expected[0, k] = cost["a"] * counts[0, k]
        expected[1, k] = cost["b"] * selectivity * counts[0, k]
    np.testing.assert_allclose(offered_operator_dlts(topology, stats, counts, intervals), expected)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_node_dlts_add_up_exactly_as_a_plain_loop(seed: int) -> None:
    """operator_matrix and node_loads add cells row after row in row order: the same
    sums, to the bit, as a plain loop (the reports built from them stay unchanged)."""
    rng = np.random.default_rng(seed)
    n_ops, n_nodes, intervals = int(rng.integers(1, 12)), int(rng.integers(1, 5)), 9
    topology = topology_from_dict(
        {
            "name": "t",
            "nodes": [{"id": f"n{k}", "capacity": 1.0} for k in range(n_nodes)],
            "sources": [{"id": "s"}],
            "operators": [
                {"id": f"o{k}", "query": "q", "inputs": ["s"], "cost": 0.1, "selectivity": 1.0}
                for k in range(n_ops)
            ],
            "placement": {f"o{k}": "n0" for k in range(n_ops)},
        }
    )
    size = int(rng.integers(0, 80))
    cpu = pd.DataFrame(
        {
            "operator": rng.choice([f"o{k}" for k in range(n_ops)] + ["unknown"], size),
            "interval": rng.integers(-2, intervals + 2, size),
            "cpu": rng.uniform(0, 1, size) * 10.0 ** rng.integers(-6, 6, size),
        }
    )
    placements = [{f"o{k}": f"n{rng.integers(0, n_nodes)}" for k in range(n_ops)} for _ in range(2)]
    starts = (0, int(rng.integers(0, intervals + 1)))
    ops = np.zeros((n_ops, intervals))
    for op, interval, value in zip(cpu.operator, cpu.interval, cpu.cpu, strict=True):
        if op != "unknown" and 0 <= interval < intervals:
            ops[int(op[1:]), interval] += value
    expected = np.zeros((n_nodes, intervals))
    for interval in range(intervals):
        placement = placements[0 if interval < starts[1] else 1]
        for k in range(n_ops):
            expected[int(placement[f"o{k}"][1:]), interval] += ops[k, interval]
    dlts = measured_node_dlts(topology, cpu, placements, starts, intervals)
    np.testing.assert_array_equal(dlts, expected)
