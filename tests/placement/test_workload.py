"""The Fig. 6(b) random workload: sizes, load level and On-Off shape."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from estimator.placement.workload import WorkloadParameters, on_off_rates, random_workload


def test_scale_sets_nodes_operators_and_the_average_load() -> None:
    topology, arrivals = random_workload(np.random.default_rng(0), scale=2)
    assert len(topology.nodes) == 40
    assert len(topology.operators) == 400
    assert len(topology.sources) == 10  # five On-Off sources and their anti-phase twins
    counts = arrivals.for_topology(topology)
    position = {s: k for k, s in enumerate(topology.source_ids)}
    load = sum(op.cost[0] * counts[position[op.inputs[0]]].mean() for op in topology.operators)
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
