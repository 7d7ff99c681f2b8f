"""A run whose node capacities change with its placement versions (a rescaled Flink
vertex): the estimate against a plain loop, and the verification of a rescale."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimator.model import topology_from_dict
from estimator.parallelism import Edits, predict, resolve, shape_of
from estimator.runs import RunAnalysis, analyse, node_loads
from estimator.verification import check_changes
from tests.estimator.test_parallelism import flink_topology

NODES = ("n1", "n2", "n3")
THREE = topology_from_dict(
    {
        "name": "three",
        "nodes": [{"id": n, "capacity": 1.0} for n in NODES],
        "sources": [{"id": "s"}],
        "operators": [
            {"id": "a", "query": "q", "inputs": ["s"], "cost": 0.1},
            {"id": "b", "query": "q", "inputs": ["a"], "cost": 0.1},
        ],
        "placement": {"a": "n1", "b": "n2"},
    }
)


def plain_mace(loads: np.ndarray, caps: np.ndarray, w: float) -> tuple[np.ndarray, np.ndarray]:
    """Lindley's recursion one subinterval at a time, capacity ``caps[i, p]`` in
    subinterval p: CE/C per node and the max over nodes."""
    ce = np.zeros_like(loads)
    for i in range(loads.shape[0]):
        backlog = 0.0
        for p in range(loads.shape[1]):
            backlog = max(0.0, backlog + loads[i, p] - caps[i, p] * w)
            ce[i, p] = backlog / caps[i, p]
    return ce, ce.max(axis=0)


@settings(max_examples=80, deadline=None)
@given(
    intervals=st.integers(1, 20),
    changes=st.lists(st.integers(0, 20), min_size=0, max_size=3),
    seed=st.integers(0, 10_000),
)
def test_capacities_per_version_against_a_plain_loop(
    intervals: int, changes: list[int], seed: int
) -> None:
    rng = np.random.default_rng(seed)
    starts = [0, *sorted(min(c, intervals) for c in changes)]
    capacities = [{n: float(rng.choice([0.5, 1.0, 2.0, 3.0])) for n in NODES} for _ in starts]
    placements = [dict(THREE.placement)] * len(starts)
    loads = rng.uniform(0, 3, (len(NODES), intervals))
    caps = np.ones((len(NODES), intervals))
    for k, start in enumerate(starts):
        caps[:, start:] = np.array([capacities[k][n] for n in NODES])[:, None]
    analysis = analyse(THREE, loads, placements, starts, capacities=capacities)
    ce, mace = plain_mace(loads, caps, THREE.subinterval)
    np.testing.assert_allclose(analysis.ce_seconds, ce, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(analysis.estimate, mace, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(analysis.per_query["q"], ce[:2].max(axis=0), atol=1e-9)


@settings(max_examples=30, deadline=None)
@given(intervals=st.integers(1, 15), seed=st.integers(0, 10_000))
def test_unchanged_capacities_are_todays_analysis_exactly(intervals: int, seed: int) -> None:
    loads = np.random.default_rng(seed).uniform(0, 3, (len(NODES), intervals))
    placements = [dict(THREE.placement), {"a": "n2", "b": "n3"}]
    starts = (0, intervals // 2)
    same = [THREE.capacity_by_node] * 2
    for name in ("mace", "path"):
        today = analyse(THREE, loads, placements, starts, name)
        versioned = analyse(THREE, loads, placements, starts, name, capacities=same)
        assert np.array_equal(today.estimate, versioned.estimate)
        assert np.array_equal(today.upper, versioned.upper)


@settings(max_examples=40, deadline=None)
@given(
    vertices=st.integers(1, 3),
    new=st.integers(1, 6),
    seed=st.integers(0, 10_000),
    intervals=st.integers(1, 12),
)
def test_a_stored_rescale_is_evaluated_as_the_whatif_of_that_parallelism(
    vertices: int, new: int, seed: int, intervals: int
) -> None:
    # a run recorded at parallelism 1 whose version 1 (from interval 0) has vertex 0 at
    # `new` subtasks: the estimate is what `mace whatif --set v0.parallelism=new` predicts
    # for the same operator work (even split, one TaskManager with enough slots)
    recorded = flink_topology(vertices, 8.0, [1] * vertices)
    op_dlts = np.random.default_rng(seed).uniform(0, 3, (len(recorded.operator_ids), intervals))
    placement = [dict(recorded.placement)]
    loads = node_loads(recorded, op_dlts, placement, [0])
    stored = analyse(recorded, loads, placement, [0], capacities=[{"v0-threads": float(new)}])
    shape = shape_of(recorded)
    whatif = predict(
        recorded, shape, resolve(shape, Edits({"v0-threads": new}, slots=new)), op_dlts
    )
    np.testing.assert_allclose(stored.estimate, whatif.estimate, rtol=1e-9, atol=1e-12)


# one operator `op` (cost 0.1) on the threads of a vertex inside a TaskManager of 4 cores;
# 15 events per second: 1.5 CPU-s/s. The vertex runs 1 subtask, then 2 from interval 3.
VERTEX = topology_from_dict(
    {
        "name": "vertex",
        "nodes": [
            {"id": "op-threads", "capacity": 1.0, "host": "tm"},
            {"id": "tm", "capacity": 4.0},
        ],
        "sources": [{"id": "s"}],
        "operators": [{"id": "op", "query": "op", "inputs": ["s"], "cost": 0.1}],
        "placement": {"op": "op-threads"},
    }
)


def test_hand_computed_rescale() -> None:
    # fitted on [0, 3): cost 0.1. One thread: CE 0.5, 1.0, 1.5. Two from interval 3
    # (capacity 2): CE 1.0, 0.5, 0 over capacity 2: 0.5, 0.25, 0. Predicted worst case
    # 1.5 before, 0.5 after; at the old parallelism it would have grown to 3.0.
    stats = pd.DataFrame(
        [("op", 0, p, 15, 15, 1.5) for p in range(6)],
        columns=["operator", "port", "interval", "events_in", "events_out", "cpu_seconds"],
    )
    counts = np.full((1, 6), 15.0)
    measured = np.array([0.6, 1.1, 1.6, 0.7, math.nan, 0.1])
    placements = [dict(VERTEX.placement)] * 2
    (check,) = check_changes(
        VERTEX,
        stats,
        counts,
        placements,
        (0, 3),
        measured,
        capacities=[{"op-threads": 1.0}, {"op-threads": 2.0}],
    )
    assert check.predicted_wc_before == pytest.approx(1.5)
    assert check.predicted_wc_after == pytest.approx(0.5)
    assert (check.measured_wc_before, check.measured_wc_after) == (1.6, 0.7)
    assert check.moved == ()
    assert check.rescaled == (("op-threads", 1.0, 2.0),)
    (unscaled,) = check_changes(VERTEX, stats, counts, placements, (0, 3), measured)
    assert unscaled.predicted_wc_after == pytest.approx(3.0)
    assert unscaled.rescaled == ()


def test_a_prediction_is_finished_with_its_training_window() -> None:
    # a real engine's pipeline delay, calibrated before the change, is added to both sides
    stats = pd.DataFrame(
        [("op", 0, p, 15, 15, 1.5) for p in range(6)],
        columns=["operator", "port", "interval", "events_in", "events_out", "cpu_seconds"],
    )
    seen: list[tuple[int, int]] = []

    def finish(analysis: RunAnalysis, window: tuple[int, int]) -> RunAnalysis:
        seen.append(window)
        return dataclasses.replace(analysis, estimate=analysis.estimate + 0.25)

    (check,) = check_changes(
        VERTEX,
        stats,
        np.full((1, 6), 15.0),
        [dict(VERTEX.placement)] * 2,
        (0, 3),
        np.ones(6),
        capacities=[{}, {"op-threads": 2.0}],
        finish=finish,
    )
    assert seen == [(0, 3)]
    assert check.predicted_wc_before == pytest.approx(1.75)
    assert check.predicted_wc_after == pytest.approx(0.75)


def test_the_model_reads_a_thread_at_the_capacity_it_had_before_the_change() -> None:
    # 15 records/s offered to one thread that serves 10 (busy all the time): a queue
    # grows, and the thread's cost is read off it as capacity / rate = 1 / 10 s. The
    # topology given is the job as it is now (2 subtasks); before the change it had 1,
    # so the backlog grows 0.5 s per second: 15 s after 30 s. Read at 2 subtasks the
    # cost would be 0.2 s and the backlog 60 s.
    now = topology_from_dict(
        {**VERTEX.to_dict(), "nodes": [{"id": "op-threads", "capacity": 2.0, "host": "tm"},
                                       {"id": "tm", "capacity": 4.0}]}
    )  # fmt: skip
    stats = pd.DataFrame(
        [("op", 0, p, 10, 10, 1.0) for p in range(30)]
        + [("op", 0, p, 15, 15, 1.5) for p in range(30, 40)],
        columns=["operator", "port", "interval", "events_in", "events_out", "cpu_seconds"],
    )
    (check,) = check_changes(
        now,
        stats,
        np.full((1, 40), 15.0),
        [dict(VERTEX.placement)] * 2,
        (0, 30),
        np.ones(40),
        capacities=[{"op-threads": 1.0}, {"op-threads": 2.0}],
    )
    assert check.predicted_wc_before == pytest.approx(15.0, rel=0.05)
    assert check.rescaled == (("op-threads", 1.0, 2.0),)
