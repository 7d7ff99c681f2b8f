"""Latency blame: the shares add up to CE_p, checked against a plain loop."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimator.blame import blame, busy_since
from estimator.model import topology_from_dict

TOPOLOGY = topology_from_dict(
    {
        "name": "two",
        "nodes": [{"id": "n1", "capacity": 1.0}, {"id": "n2", "capacity": 2.0}],
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
            {"id": "c", "query": "q2", "inputs": ["s2"], "cost": 0.03, "selectivity": 1.0},
        ],
        "placement": {"a": "n1", "b": "n1", "c": "n2"},
    }
)


def test_hand_computed_blame() -> None:
    # n1 (C = 1): loads a + b = [0.5, 2.0, 1.5, 0.2] -> CE [0, 1.0, 1.5, 0.7];
    # worst at interval 2, busy since interval 1 (CE was 0 at interval 0).
    # Over [1, 2]: a has 1.0 + 0.5 = 1.5, b has 1.0 + 1.0 = 2.0 of 3.5 -> CE 1.5 split
    # 1.5 * 1.5/3.5 and 1.5 * 2.0/3.5.
    dlts = np.array([[0.25, 1.0, 0.5, 0.1], [0.25, 1.0, 1.0, 0.1], [0.0, 0.3, 0.3, 0.0]])
    counts = np.array([[25.0, 100.0, 50.0, 10.0], [0.0, 10.0, 10.0, 0.0]])
    result = blame(TOPOLOGY, dlts, counts, [TOPOLOGY.placement], (0,))
    assert (result.interval, result.resource, result.busy_since) == (2, "n1", 1)
    assert result.ce_seconds == pytest.approx(1.5)
    assert result.contributions == pytest.approx({"a": 1.5 * 1.5 / 3.5, "b": 1.5 * 2.0 / 3.5})
    assert sum(result.sources.values()) == pytest.approx(1.5)
    # a's share is all s1's; b's splits by the load: from s1 via a 0.01 * 150 arrivals,
    # from s2 directly 0.02 * 20 -> 1.5 : 0.4
    b_share = 1.5 * 2.0 / 3.5
    assert result.sources["s2"] == pytest.approx(b_share * 0.4 / 1.9)


def test_no_backlog_blames_nobody() -> None:
    dlts = np.full((3, 4), 0.1)
    result = blame(TOPOLOGY, dlts, np.ones((2, 4)), [TOPOLOGY.placement], (0,), interval=3)
    assert result.ce_seconds == 0 and result.contributions == {} and result.busy_since == 3


def _plain(dlts: np.ndarray, placements: list[dict[str, str]], starts: tuple[int, ...], p: int):  # type: ignore[no-untyped-def]
    """CE, busy period and shares with loops, for every node; the blamed node's."""
    ops = list(TOPOLOGY.operator_ids)
    caps = {n.id: n.capacity for n in TOPOLOGY.nodes}
    best = None
    for node, cap in caps.items():
        ce, history = 0.0, []
        where = []
        for k in range(p + 1):
            version = max(v for v, s in enumerate(starts) if s <= k)
            here = [j for j, op in enumerate(ops) if placements[version][op] == node]
            where.append(here)
            ce = max(0.0, ce + sum(dlts[j, k] for j in here) - cap)
            history.append(ce)
        if best is None or ce / cap > best[1] / caps[best[0]]:
            best = (node, ce, history, where)
    assert best is not None
    node, ce, history, where = best
    since = p
    while since > 0 and history[since - 1] > 0:
        since -= 1
    if ce <= 0:
        since = p
    totals = dict.fromkeys(ops, 0.0)
    for k in range(since, p + 1):
        for j in where[k]:
            totals[ops[j]] += dlts[j, k]
    load = sum(totals.values())
    shares = {op: ce / caps[node] * v / load for op, v in totals.items() if v > 0 and ce > 0}
    return node, since, ce / caps[node], shares


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    intervals=st.integers(1, 12),
    moved_at=st.integers(0, 12),
)
def test_shares_add_up_to_ce_and_match_a_plain_loop(
    seed: int, intervals: int, moved_at: int
) -> None:
    rng = np.random.default_rng(seed)
    dlts = rng.uniform(0, 1.5, (3, intervals)) * (rng.random((3, intervals)) < 0.8)
    counts = rng.integers(0, 50, (2, intervals)).astype(float)
    moved = {**TOPOLOGY.placement, "b": "n2"}
    placements, starts = [TOPOLOGY.placement, moved], (0, min(moved_at, intervals))
    p = int(rng.integers(0, intervals))
    result = blame(TOPOLOGY, dlts, counts, placements, starts, interval=p)
    node, since, ce, shares = _plain(dlts, placements, starts, p)
    assert result.ce_seconds == pytest.approx(ce, abs=1e-9)
    if ce > 1e-9:
        assert (result.resource, result.busy_since) == (node, since)
        assert result.contributions == pytest.approx(shares)
        assert sum(result.contributions.values()) == pytest.approx(result.ce_seconds)
        assert sum(result.sources.values()) == pytest.approx(result.ce_seconds)


def test_busy_since_is_the_start_of_the_busy_period() -> None:
    ce = np.array([0.0, 1.0, 0.0, 0.5, 0.7, 0.2])
    assert [busy_since(ce, p) for p in range(6)] == [0, 1, 2, 3, 3, 3]
