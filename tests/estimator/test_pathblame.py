"""Path-aware latency blame: the critical chain against a plain loop, the
stages adding up to the path-aware estimate, and a hand-computed two-node run."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimator.blame import blame, busy_since
from estimator.model import topology_from_dict
from estimator.pathaware import release_lag
from estimator.pathblame import TIE, critical_windows, path_blame
from estimator.runs import analyse, node_loads

TANDEM = topology_from_dict(
    {
        "name": "tandem",
        "nodes": [{"id": "n1", "capacity": 1.0}, {"id": "n2", "capacity": 1.0}],
        "sources": [{"id": "s"}],
        "operators": [
            {"id": "a", "query": "q", "inputs": ["s"], "cost": 0.1, "selectivity": 1.0},
            {"id": "b", "query": "q", "inputs": ["a"], "cost": 0.1, "selectivity": 1.0},
            {"id": "c", "query": "q", "inputs": ["b"], "cost": 0.1, "selectivity": 1.0},
        ],
        "placement": {"a": "n1", "b": "n2", "c": "n2"},
    }
)


def test_hand_computed_two_nodes() -> None:
    # n1 work [2, 0.5, 0], n2 work b + c = [0.5, 1.5, 1.5], w = C = 1, T = [1, 2, 3].
    # n1 releases R1 = [2, 2.5, 3]; n2 (R2_p = max(R1_p, max(R2_{p-1}, R1_{p-1}) + x_p))
    # R2 = [2, 3.5, 5]: lag at 2 is 2.0 (Mace: n2's CE/C 1.0). Chain: n2 busy on [1, 2]
    # from R1_0 = 2 (3.0 of work in 2 subintervals: +1.0), n1 busy on [0, 0] from 0
    # (2.0 of work in 1: +1.0); 1.0 + 1.0 = 2.0. n2's 1.0 splits b 1.5 : c 1.5.
    dlts = np.array([[2.0, 0.5, 0.0], [0.5, 1.0, 0.5], [0.0, 0.5, 1.0]])
    counts = np.array([[20.0, 5.0, 0.0]])
    result = path_blame(TANDEM, dlts, counts, [TANDEM.placement], (0,))
    assert result.interval == 2 and result.estimate == pytest.approx(2.0)
    first, second = result.stages
    assert (first.resource, first.busy_since, first.busy_until) == ("n1", 0, 0)
    assert (second.resource, second.busy_since, second.busy_until) == ("n2", 1, 2)
    assert first.ce_seconds == pytest.approx(1.0) and second.ce_seconds == pytest.approx(1.0)
    assert first.contributions == pytest.approx({"a": 1.0})
    assert second.contributions == pytest.approx({"b": 0.5, "c": 0.5})
    assert second.sources == pytest.approx({"s": 1.0})
    assert result.dominant is first  # equal excess: the first stage
    # Mace blames n2 alone, with 1.0 s since subinterval 1
    alone = blame(TANDEM, dlts, counts, [TANDEM.placement], (0,), 2)
    assert (alone.resource, alone.busy_since, alone.ce_seconds) == ("n2", 1, pytest.approx(1.0))


def test_a_light_stage_drains_part_of_the_lag() -> None:
    # n1 is 3 s behind after subinterval 0 and then idle: it releases subintervals 0..3
    # all at t = 4 (R1 = [4, 4, 4, 4]); n2 keeps up with subinterval 0's 0.5 s as it
    # trickles out, then has 3 * 0.5 s left: R2_3 = 5.5, lag 1.5 (Mace 0). Chain: n1 on
    # [0, 0], 4 s of work in 1 subinterval: +3; n2 on [1, 3], 1.5 s of work in 3: -1.5.
    dlts = np.array([[4.0, 0.0, 0.0, 0.0], [0.5, 0.5, 0.5, 0.5], [0.0, 0.0, 0.0, 0.0]])
    result = path_blame(TANDEM, dlts, np.ones((1, 4)), [TANDEM.placement], (0,), 3)
    assert result.estimate == pytest.approx(1.5)
    first, second = result.stages
    assert (first.busy_since, first.busy_until, first.ce_seconds) == (0, 0, pytest.approx(3.0))
    assert (second.busy_since, second.busy_until) == (1, 3)
    assert second.ce_seconds == pytest.approx(-1.5)
    assert second.contributions == pytest.approx({"b": -1.5})
    assert result.dominant is first


# -- the critical chain against a plain loop ------------------------------------------


def _plain_release(work: np.ndarray, stages: list[int], delays: list[float], w: float):  # type: ignore[no-untyped-def]
    """A[k][j] and R[k][j] by the tandem recursion of estimator.pathaware, with loops."""
    n = work.shape[1]
    previous = [(j + 1) * w for j in range(n)]
    arrived_all, release_all = [], []
    for row, delay in zip(stages, delays, strict=True):
        arrived = [previous[j] + delay for j in range(n)]
        release, last = [], 0.0
        for j in range(n):
            before = arrived[j - 1] if j > 0 else 0.0
            last = max(arrived[j], max(last, before) + work[row, j])
            release.append(last)
        arrived_all.append(arrived)
        release_all.append(release)
        previous = release
    return arrived_all, release_all


def _plain_windows(work, stages, delays, w, p):  # type: ignore[no-untyped-def]
    arrived, _ = _plain_release(work, stages, delays, w)
    out, last = [], p
    for k in range(len(stages) - 1, -1, -1):
        if last < 0:
            out.append((0, -1, False))
            continue
        values = []
        for j in range(-1, last + 1):
            start = arrived[k][j] if j >= 0 else 0.0
            values.append(start + sum(work[stages[k], i] for i in range(j + 1, last + 1)))
        best = max(values)
        j = max(i for i, v in enumerate(values) if v >= best - TIE * max(1.0, abs(best))) - 1
        out.append((j + 1, last, j >= 0))
        last = j
    return out[::-1]


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    intervals=st.integers(1, 10),
    depth=st.integers(1, 4),
    with_delays=st.booleans(),
)
def test_chain_matches_a_plain_loop_and_adds_up(
    seed: int, intervals: int, depth: int, with_delays: bool
) -> None:
    rng = np.random.default_rng(seed)
    w = float(rng.choice([0.5, 1.0]))
    work = rng.uniform(0, 2.0, (5, intervals)) * (rng.random((5, intervals)) < 0.7)
    stages = [int(r) for r in rng.permutation(5)[:depth]]
    delays = [0.0] + [float(d) for d in rng.uniform(0, 0.8, depth - 1) * with_delays]
    p = int(rng.integers(0, intervals))
    windows = critical_windows(work, stages, delays, w, p)
    assert windows == _plain_windows(work, stages, delays, w, p)
    _, release = _plain_release(work, stages, delays, w)
    lag = release[-1][p] - (p + 1) * w
    vector = release_lag(work, np.array([stages]), np.array([delays]), w)[0, p]
    assert vector == pytest.approx(lag, abs=1e-9)
    # the windows are consecutive, end at p, and with the delays crossed add up to the lag
    on_chain = [(a, b) for a, b, _ in windows if b >= 0]
    assert on_chain[-1][1] == p
    for (_, b), (a, _) in itertools.pairwise(on_chain):
        assert a == b + 1
    total = sum(
        work[row, a : b + 1].sum() - (b - a + 1) * w + (d if crossed else 0.0)
        for row, d, (a, b, crossed) in zip(stages, delays, windows, strict=True)
    )
    assert total == pytest.approx(lag, abs=1e-9)


def test_one_stage_is_the_busy_period_of_mace() -> None:
    # one stage: the window is blame's busy period and its excess the node's CE/C
    work = np.array([[0.5, 1.8, 1.6, 0.4, 0.3, 1.5]])
    ce, level = [], 0.0
    for x in work[0]:
        level = max(0.0, level + x - 1.0)
        ce.append(level)
    for p in range(work.shape[1]):
        [(first, last, _)] = critical_windows(work, [0], [0.0], 1.0, p)
        if ce[p] > 0:
            assert first == busy_since(np.array(ce), p) and last == p
            assert work[0, first : last + 1].sum() - (last - first + 1) == pytest.approx(ce[p])
        else:
            assert first == p + 1  # empty: no backlog at p


# -- on a topology, with placement versions -----------------------------------------

CHAIN = topology_from_dict(
    {
        "name": "chain",
        "nodes": [
            {"id": "n1", "capacity": 1.0},
            {"id": "n2", "capacity": 2.0},
            {"id": "n3", "capacity": 1.0},
        ],
        "sources": [{"id": "s1"}, {"id": "s2"}],
        "operators": [
            {"id": "a", "query": "q1", "inputs": ["s1"], "cost": 0.01, "selectivity": 1.0},
            {
                "id": "b",
                "query": "q1",
                "inputs": ["a", "s2"],
                "cost": [0.01, 0.02],
                "selectivity": [1.0, 1.0],
            },
            {"id": "c", "query": "q1", "inputs": ["b"], "cost": 0.03, "selectivity": 1.0},
            {"id": "d", "query": "q2", "inputs": ["s2"], "cost": 0.02, "selectivity": 1.0},
        ],
        "placement": {"a": "n1", "b": "n2", "c": "n3", "d": "n3"},
        "links": [{"from": "n1", "to": "n2", "delay": 0.25}],
    }
)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), intervals=st.integers(1, 10), moved_at=st.integers(0, 10))
def test_stages_add_up_to_the_path_aware_estimate(seed: int, intervals: int, moved_at: int) -> None:
    rng = np.random.default_rng(seed)
    dlts = rng.uniform(0, 2.0, (4, intervals)) * (rng.random((4, intervals)) < 0.8)
    counts = rng.integers(0, 50, (2, intervals)).astype(float)
    moved = {**CHAIN.placement, "c": "n1", "d": "n1"}  # c returns to n1: folded
    placements, starts = [CHAIN.placement, moved], (0, min(moved_at, intervals))
    p = int(rng.integers(0, intervals))
    result = path_blame(CHAIN, dlts, counts, placements, starts, p)
    loads = node_loads(CHAIN, dlts, placements, starts)
    estimate = analyse(CHAIN, loads, placements, starts, "path").estimate[p]
    assert result.estimate == pytest.approx(estimate)
    parts = sum(s.ce_seconds + s.delay_seconds for s in result.stages)
    assert parts == pytest.approx(estimate, abs=1e-7)
    for stage in result.stages:  # an empty window has no excess; a window always has load
        assert sum(stage.contributions.values()) == pytest.approx(stage.ce_seconds, abs=1e-9)
        if stage.sources:
            assert sum(stage.sources.values()) == pytest.approx(stage.ce_seconds)
    # the default interval is the path-aware estimate's worst
    worst = path_blame(CHAIN, dlts, counts, placements, starts)
    assert worst.estimate == pytest.approx(
        analyse(CHAIN, loads, placements, starts, "path").estimate.max()
    )
