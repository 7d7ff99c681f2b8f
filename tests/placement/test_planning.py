"""Plan selection, admission control and provisioning on cases worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from estimator.arrivals import Arrivals
from estimator.errors import ModelError
from estimator.model import topology_from_dict
from estimator.placement.planning import (
    admit_query,
    fewest_nodes,
    least_added_capacity,
    plans_by_query,
    rank_plans,
)
from estimator.whatif import AddedQuery
from tests.placement.helpers import constant_instance


def plan(name: str, first: dict, second: dict):
    """One query, source -> first -> second, on two nodes of capacity 0.5."""
    return topology_from_dict(
        {
            "name": name,
            "nodes": [{"id": "a", "capacity": 0.5}, {"id": "b", "capacity": 0.5}],
            "sources": [{"id": "trades"}],
            "operators": [
                {"id": "first", "query": "q", "inputs": ["trades"], **first},
                {"id": "second", "query": "q", "inputs": ["first"], **second},
            ],
            "placement": {"first": "a", "second": "b"},
        }
    )


def test_plan_selection_ranks_by_mace_wc_on_one_node() -> None:
    cheap_filter = {"cost": 0.001, "selectivity": 0.1}
    costly_udf = {"cost": 0.01, "selectivity": 1.0}
    plans = {
        "filter-first": plan("filter-first", cheap_filter, costly_udf),
        "udf-first": plan("udf-first", costly_udf, cheap_filter),
    }
    arrivals = Arrivals(("trades",), np.array([[100.0, 300.0, 100.0, 100.0]]))
    ranked = rank_plans(plans, arrivals)
    # one node of capacity 1: filter-first loads 0.2 per 100 events (never backlogged);
    # udf-first loads 1.1 per 100 events: DLTS 1.1 3.3 1.1 1.1, CE 0.1 2.4 2.5 2.6
    assert [p.name for p in ranked] == ["filter-first", "udf-first"]
    assert ranked[0].mace_wc == pytest.approx(0.0)
    assert ranked[1].mace_wc == pytest.approx(2.6)
    assert ranked[1].mean == pytest.approx((0.1 + 2.4 + 2.5 + 2.6) / 4)
    # on the plans' own two nodes of 0.5 the udf node is what backlogs
    own = rank_plans(plans, arrivals, on_single_node=False)
    assert own[1].name == "udf-first"
    assert own[1].mace_wc > ranked[1].mace_wc
    with pytest.raises(ModelError, match="unknown criterion 'median'"):
        rank_plans(plans, arrivals, criterion="median")


def test_stock_plans_rank_the_uds_in_the_middle_first() -> None:
    from simulator.workloads import workload_model

    topology, _ = workload_model("stocks")
    plans = plans_by_query(topology)
    assert sorted(plans) == ["plan_middle", "plan_sink", "plan_source"]
    assert all(len(p.operators) == 4 for p in plans.values())
    # per trade: source ~404 us, sink ~176 us, middle ~92 us of CPU; on one node of
    # capacity 3, bursts of 20000 trades/s overload the sink and source plans only
    arrivals = Arrivals(("trades",), np.array([[2000.0, 20000.0, 20000.0, 2000.0, 2000.0]]))
    ranked = rank_plans(plans, arrivals)
    assert [p.name for p in ranked] == ["plan_middle", "plan_sink", "plan_source"]
    assert ranked[0].mace_wc == 0.0
    assert 0.0 < ranked[1].mace_wc < ranked[2].mace_wc


def test_plans_must_not_share_operators() -> None:
    shared = topology_from_dict(
        {
            "nodes": [{"id": "n", "capacity": 1.0}],
            "sources": [{"id": "s"}],
            "operators": [
                {"id": "a", "query": "p1", "inputs": ["s"], "cost": 0.1},
                {"id": "b", "query": "p2", "inputs": ["a"], "cost": 0.1},
            ],
            "placement": {"a": "n", "b": "n"},
        }
    )
    with pytest.raises(ModelError, match="operator 'b' reads 'a' of another query"):
        plans_by_query(shared)


def added_operator(load: float) -> AddedQuery:
    return AddedQuery(
        operators=[{"id": "new", "query": "q2", "inputs": ["src"], "cost": load / 100.0}],
        placement={},
    )


def test_admission_places_the_new_query_where_it_keeps_every_objective() -> None:
    topology, arrivals = constant_instance([0.6], [1.0, 1.0])
    decision = admit_query(
        topology, arrivals, added_operator(0.6), 0.5, budget=0.3, rng=np.random.default_rng(0)
    )
    assert decision.admitted
    assert decision.topology.placement == {"op1": "n1", "new": "n2"}
    assert decision.per_query == {"q1": 0.0, "q2": 0.0}


def test_admission_refuses_a_query_that_breaks_an_objective() -> None:
    topology, arrivals = constant_instance([0.6], [1.0, 1.0], intervals=10)
    beside = AddedQuery(added_operator(0.6).operators, {"new": "n1"})
    decision = admit_query(topology, arrivals, beside, 0.5, algorithm=None)
    # 1.2 CPU-s/s on capacity 1 for 10 s: CE 0.2 per second, 2 s at the end, both queries
    assert not decision.admitted
    assert decision.violations == ("q1", "q2")
    assert decision.per_query["q1"] == pytest.approx(2.0)
    # alone on n2 a 1.5 CPU-s/s query backlogs 5 s itself; q1 stays unaffected
    heavy = admit_query(
        topology,
        arrivals,
        added_operator(1.5),
        {"q1": 0.5, "q2": 1.0},
        budget=0.3,
        rng=np.random.default_rng(0),
    )
    assert heavy.violations == ("q2",)
    assert heavy.per_query == pytest.approx({"q1": 0.0, "q2": 5.0})
    # with a looser objective for q2 it is admitted
    loose = admit_query(
        topology, arrivals, added_operator(1.5), {"q2": 6.0}, rng=np.random.default_rng(0)
    )
    assert loose.admitted


def test_fewest_nodes_meeting_the_objective() -> None:
    topology, arrivals = constant_instance([0.6] * 4, [1.0], intervals=10)
    # two operators on a node backlog 0.2 s per second (2 s after 10 s): four nodes needed
    plan = fewest_nodes(topology, arrivals, 0.5, budget=0.3, rng=np.random.default_rng(0))
    assert plan.feasible
    assert len(plan.topology.nodes) == 4
    assert sorted(plan.topology.placement.values()) == ["n1", "n2", "n3", "n4"]
    # one node holds all four if 15 s of backlog (2.4 - 1 = 1.4 per second) is acceptable
    relaxed = fewest_nodes(topology, arrivals, 15.0, budget=0.3, rng=np.random.default_rng(0))
    assert len(relaxed.topology.nodes) == 1
    assert relaxed.per_query["q1"] == pytest.approx(14.0)
    none = fewest_nodes(topology, arrivals, 0.5, max_nodes=3, budget=0.1)
    assert not none.feasible


def test_least_added_capacity_keeps_the_placement() -> None:
    document = {
        "nodes": [{"id": "n1", "capacity": 1.0}, {"id": "n2", "capacity": 1.0}],
        "sources": [{"id": "s"}],
        "operators": [
            {"id": "burst", "query": "q1", "inputs": ["s"], "cost": 1.0},
            {"id": "calm", "query": "q2", "inputs": ["s"], "cost": 0.25},
        ],
        "placement": {"burst": "n1", "calm": "n2"},
    }
    topology = topology_from_dict(document)
    arrivals = Arrivals(("s",), np.array([[3.0, 0.0, 0.0]]))
    # n1: DLTS 3 0 0, CE/C = (3 - C)/C at the first subinterval <= 0.5 needs C = 2;
    # n2: DLTS 0.75 0 0 never backlogs on capacity 1
    plan = least_added_capacity(topology, arrivals, {"q1": 0.5})
    assert plan.feasible
    assert plan.topology.capacity_by_node["n1"] == pytest.approx(2.0, rel=1e-5)
    assert plan.topology.capacity_by_node["n2"] == 1.0
    assert plan.added_capacity == pytest.approx(1.0, rel=1e-5)
    assert plan.topology.placement == topology.placement
    # zero latency: n1 must serve 3 CPU-s within the first subinterval
    strict = least_added_capacity(topology, arrivals, 0.0)
    assert strict.topology.capacity_by_node["n1"] == pytest.approx(3.0, rel=1e-5)


def test_objectives_are_checked() -> None:
    topology, arrivals = constant_instance([0.6], [1.0, 1.0])
    with pytest.raises(ModelError, match="unknown query 'q9'"):
        least_added_capacity(topology, arrivals, {"q9": 1.0})
    with pytest.raises(ModelError, match="expected seconds >= 0"):
        least_added_capacity(topology, arrivals, -1.0)
