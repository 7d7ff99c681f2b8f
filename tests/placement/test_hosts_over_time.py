"""Elastic provisioning over time (hosts per window, Mace against FUGU) and query files."""

from __future__ import annotations

import numpy as np
import pytest

from estimator.arrivals import Arrivals
from estimator.errors import ModelError
from estimator.loaders import added_query_from_document
from estimator.model import Topology
from estimator.placement.planning import cluster, fewest_nodes, hosts_over_time
from tests.placement.helpers import constant_instance, reference_mace_wc


def two_level() -> tuple[Topology, Arrivals]:
    """Eight operators of 0.003 CPU-s per event; 100 events/s for 10 s, then 200 for 10 s."""
    topology, _ = constant_instance([0.3] * 8, [1.0], intervals=20)
    counts = np.concatenate([np.full(10, 100.0), np.full(10, 200.0)])[None, :]
    return topology, Arrivals(("src",), counts)


def test_timeline_on_a_two_level_load_gives_the_two_host_counts() -> None:
    topology, arrivals = two_level()
    timeline = hosts_over_time(
        topology, arrivals, 0.5, 10, 1.0, budget=0.2, rng=np.random.default_rng(0), max_nodes=12
    )
    # low level: each operator loads 0.3 CPU-s/s. On nodes of capacity 1, three operators
    # (0.9) never backlog while four (1.2) backlog 0.2 s per second, 2 s over the window:
    # 8 operators need 3 nodes by Mace. FUGU fills nodes to 0.85: two operators each, 4 nodes.
    # high level: 0.6 each; two on a node backlog 2 s, so one per node: 8 both ways.
    assert timeline.window_start.tolist() == [0, 10]
    assert timeline.window_length.tolist() == [10, 10]
    assert timeline.mace_hosts.tolist() == [3, 8]
    assert timeline.fugu_hosts.tolist() == [4, 8]
    assert timeline.mace_feasible.tolist() == [True, True]
    assert timeline.mace_wc.tolist() == [0.0, 0.0]
    assert timeline.objective == 0.5
    assert timeline.fugu_threshold == 0.85
    # host-hours: (3 * 10 + 8 * 10) s against (4 * 10 + 8 * 10) s
    assert timeline.machine_hours() == pytest.approx((110 / 3600, 120 / 3600))
    assert timeline.machine_hours(2.0) == pytest.approx((220 / 3600, 240 / 3600))
    rows = timeline.rows()
    assert rows[1] == {
        "start": 10.0,
        "seconds": 10.0,
        "mace_hosts": 8,
        "mace_feasible": True,
        "mace_wc": 0.0,
        "fugu_hosts": 8,
        "fugu_mace_wc": 0.0,
    }
    # each window's Mace placement meets the objective on that window's load
    for k, placement in enumerate(timeline.mace_placements):
        window = arrivals.window(10 * k, 10 * k + 10)
        hosts = int(timeline.mace_hosts[k])
        assert len(set(placement.values())) <= hosts
        assert reference_mace_wc(cluster(topology, hosts, 1.0), window, placement) <= 0.5


def test_a_short_last_window_and_a_looser_threshold() -> None:
    topology, arrivals = two_level()
    timeline = hosts_over_time(
        topology,
        arrivals,
        0.5,
        15,
        1.0,
        fugu_threshold=0.6,
        budget=0.2,
        rng=np.random.default_rng(1),
        max_nodes=12,
    )
    # windows [0, 15) and [15, 20); the first holds 5 s of the high level, where two
    # operators on a node backlog 1 s: one per node by Mace. FUGU packs mean loads: 0.4
    # per operator over the first window, 0.6 over the second; at 0.6 one fits per node.
    assert timeline.window_start.tolist() == [0, 15]
    assert timeline.window_length.tolist() == [15, 5]
    assert timeline.fugu_hosts.tolist() == [8, 8]
    assert timeline.mace_hosts.tolist() == [8, 8]


def test_a_window_the_pool_cannot_serve_is_flagged() -> None:
    topology, arrivals = two_level()
    timeline = hosts_over_time(topology, arrivals, 0.5, 10, 1.0, budget=0.1, max_nodes=2)
    assert timeline.mace_feasible.tolist() == [False, False]
    assert timeline.mace_hosts.tolist() == [2, 2]
    assert (timeline.mace_wc > 0.5).all()
    assert (timeline.fugu_mace_wc > 0.5).all()


def test_hosts_over_time_rejects_bad_windows_and_objectives() -> None:
    topology, arrivals = two_level()
    with pytest.raises(ModelError, match="window must be at least 1"):
        hosts_over_time(topology, arrivals, 0.5, 0, 1.0)
    with pytest.raises(ModelError, match="objective must be positive"):
        hosts_over_time(topology, arrivals, 0.0, 5, 1.0)
    with pytest.raises(ModelError, match="node capacity must be positive"):
        hosts_over_time(topology, arrivals, 0.5, 5, -1.0)


def test_fewest_nodes_reports_each_node_count_it_searches() -> None:
    topology, arrivals = constant_instance([0.6] * 4, [1.0], intervals=10)
    tried: list[int] = []
    plan = fewest_nodes(
        topology, arrivals, 0.5, budget=0.1, rng=np.random.default_rng(0), progress=tried.append
    )
    # 1 and 2 nodes are skipped by the pooled bound (2.4 CPU-s/s on capacity 2 backlogs 4 s);
    # on 3 nodes two operators share one (2 s), on 4 none does
    assert tried == [3, 4]
    assert len(plan.topology.nodes) == 4


def test_fewest_nodes_stops_when_one_operator_alone_misses_the_objective() -> None:
    # op2 alone loads 1.2 CPU-s/s on capacity 1: 0.2 s of backlog per second, 2 s after 10
    topology, arrivals = constant_instance([0.3, 1.2, 0.3], [1.0], intervals=10)
    tried: list[int] = []
    plan = fewest_nodes(topology, arrivals, 1.0, budget=0.1, progress=tried.append)
    assert not plan.feasible
    assert tried == []
    assert (
        plan.reason == "operator 'op2' alone on a node of capacity 1 already misses its objective"
    )
    assert plan.per_query["q1"] == pytest.approx(2.0)
    assert len(plan.topology.nodes) == 3
    # with 2 s allowed it fits on two nodes (1.2 + 0.3 backlogs 5 s; 1.2 alone 2 s)
    assert fewest_nodes(topology, arrivals, 2.0, budget=0.2).feasible


def test_query_file_documents() -> None:
    query, added = added_query_from_document(
        {
            "query": "q9",
            "sources": [{"id": "s9", "arrivals": [1, 2, 3]}],
            "operators": [{"id": "x", "inputs": ["s9"], "cost": 0.1}],
            "placement": {"x": "n1"},
        }
    )
    assert query == "q9"
    assert added.operators == [{"id": "x", "inputs": ["s9"], "cost": 0.1, "query": "q9"}]
    assert dict(added.sources) == {"s9": [1.0, 2.0, 3.0]}
    assert dict(added.placement) == {"x": "n1"}


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"operators": []}, "'query' must name the query"),
        (
            {"query": "q9", "operators": [{"id": "x", "query": "q1", "inputs": ["s"]}]},
            "operator 'x' belongs to query 'q1', not to 'q9'",
        ),
        (
            {"query": "q9", "sources": [{"id": "s9"}], "operators": [{"id": "x"}]},
            "source 's9' has no 'arrivals' list",
        ),
        (
            {
                "query": "q9",
                "sources": [{"id": "s9", "arrivals": [1, -2]}],
                "operators": [{"id": "x"}],
            },
            "q.yaml: add query: source 's9' has a bad count -2",
        ),
        ({"query": "q9", "operators": []}, "it has no operators"),
        ([1, 2], "expected a mapping"),
    ],
)
def test_bad_query_files_are_refused_naming_the_entry(document: object, message: str) -> None:
    with pytest.raises(ModelError, match=message):
        added_query_from_document(document, "q.yaml")
