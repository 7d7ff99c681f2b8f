"""The Fig. 6(b) random workload: sizes, load level, On-Off shape and the operator DAG."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from estimator.placement.workload import (
    WorkloadParameters,
    anti_phase,
    on_off_rates,
    random_operators,
    random_workload,
)


def test_scale_sets_nodes_operators_and_the_average_load() -> None:
    topology, arrivals = random_workload(np.random.default_rng(0), scale=2)
    assert len(topology.nodes) == 40
    assert len(topology.operators) == 400
    assert len(topology.sources) == 10  # five On-Off sources and their anti-phase twins
    # mean events per second (w = 1 s) through the DAG, operator by operator
    means = arrivals.for_topology(topology).mean(axis=1)
    rate = dict(zip(topology.source_ids, means, strict=True))
    load = 0.0
    for op_id in topology.topological_order:
        op = topology.operator_by_id[op_id]
        inputs = [rate[i] for i in op.inputs]
        load += sum(c * r for c, r in zip(op.cost, inputs, strict=True))
        rate[op_id] = sum(s * r for s, r in zip(op.selectivity, inputs, strict=True))
    capacity = sum(n.capacity for n in topology.nodes)
    assert load / capacity == pytest.approx(0.75)


def test_same_seed_same_workload() -> None:
    first = random_workload(np.random.default_rng(4))
    second = random_workload(np.random.default_rng(4))
    assert first[0] == second[0]
    np.testing.assert_array_equal(first[1].counts, second[1].counts)


def test_on_off_rates_have_the_paper_ratios() -> None:
    params = replace(WorkloadParameters(), subintervals=200_000)
    rate, anti = on_off_rates(np.random.default_rng(1), params)
    assert rate.max() / rate.min() == pytest.approx(10.0)
    # high periods last 0.25 of low ones on average: high 1/5 of the time
    high_share = (rate - rate.min()) / (rate.max() - rate.min())
    assert high_share.mean() == pytest.approx(0.2, abs=0.01)
    assert rate.mean() == pytest.approx(params.mean_rate, rel=0.02)
    assert np.corrcoef(rate, anti)[0, 1] == pytest.approx(-1.0)


def test_operators_skew_towards_the_first_source() -> None:
    topology, _ = random_workload(np.random.default_rng(2), scale=5)
    homes = [op.query for op in topology.operators]
    shares = [homes.count(f"q{k}") / len(homes) for k in range(1, 6)]
    zipf = 1 / np.arange(1, 6)
    np.testing.assert_allclose(shares, zipf / zipf.sum(), atol=0.03)
    anti = sum(op.inputs[0].endswith("_anti") for op in topology.operators) / len(homes)
    assert anti == pytest.approx(0.1, abs=0.03)


@pytest.mark.parametrize("seed", range(5))
def test_operators_read_their_source_its_twin_or_an_earlier_operator_of_it(seed: int) -> None:
    params = WorkloadParameters()
    graph = random_operators(np.random.default_rng(seed), 300, params)
    assert graph.sources == ("s1", "s2", "s3", "s4", "s5")
    query = {f"s{k}": f"q{k}" for k in range(1, 6)}
    query |= {twin: query[source] for twin, source in graph.twins.items()}
    assert all(twin == anti_phase(source) for twin, source in graph.twins.items())
    chained = 0
    for op in graph.operators:
        (upstream,) = op["inputs"]
        if upstream.startswith("op"):  # an earlier operator that reads no twin, or its chain
            assert upstream in query and not upstream.endswith("_anti")
            chained += 1
        assert query[upstream] == op["query"]
        assert params.cost_min <= op["cost"] <= params.cost_max
        assert params.selectivity_min <= op["selectivity"] <= params.selectivity_max
        if upstream not in graph.twins:
            query[op["id"]] = op["query"]
    assert chained > 0  # a DAG, not one layer
