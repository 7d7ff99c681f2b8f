"""Per-origin backlog tracking (estimator.origins, a prototype): against plain loops.

With every operator fed by a source it is the burst-aware peak backlog (Lindley at
sub-bucket resolution); on a two-node tandem it stays within one step (w / k, scaled
by the share of the upstream's rate the downstream receives) of a fluid replay at a
50 times finer time step."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from estimator.model import Topology, topology_from_dict
from estimator.origins import (
    operator_fine_work,
    operator_latency,
    per_origin_latency,
    sink_latency,
)
from tests.estimator.test_burst import loop_peaks


def _topology(nodes: int, tandem: bool, capacities: list[float], k_width: float) -> Topology:
    ops = (
        [
            {"id": "a", "query": "q", "inputs": ["s0"], "cost": 0.01},
            {"id": "b", "query": "q", "inputs": ["a"], "cost": 0.01},
        ]
        if tandem
        else [
            {"id": f"o{i}", "query": "q", "inputs": [f"s{i}"], "cost": 0.01} for i in range(nodes)
        ]
    )
    return topology_from_dict(
        {
            "subinterval": k_width,
            "nodes": [{"id": f"n{i}", "capacity": capacities[i]} for i in range(nodes)],
            "sources": [{"id": f"s{i}"} for i in range(nodes)],
            "operators": ops,
            "placement": {o["id"]: f"n{i}" for i, o in enumerate(ops)},
        }
    )


@st.composite
def cases(draw: st.DrawFn, nodes: int) -> tuple[np.ndarray, list[float]]:
    intervals, k = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    size = nodes * intervals * k
    work = draw(st.lists(st.floats(0.01, 2.0), min_size=size, max_size=size))
    caps = draw(st.lists(st.floats(0.5, 2.0), min_size=nodes, max_size=nodes))
    return np.array(work).reshape(nodes, intervals, k), caps


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 3).flatmap(lambda n: cases(n)))
def test_operators_fed_by_sources_give_the_burst_peak(case: tuple[np.ndarray, list[float]]) -> None:
    fine, caps = case
    nodes = fine.shape[0]
    topology = _topology(nodes, False, caps, 1.0)
    latency = per_origin_latency(topology, fine[:, None], topology.placement)
    c = np.array(caps)
    np.testing.assert_allclose(latency, loop_peaks(fine, c) / c[:, None], atol=1e-9)


def fluid_tandem(work: np.ndarray, caps: list[float], width: float, fine_steps: int) -> np.ndarray:
    """Plain loop: node 0 serves its work (sources) oldest bucket first in steps of
    width / k / fine_steps, node 1 gets its work of a bucket in proportion to what
    node 0 served of it; the latency of each subinterval (per node)."""
    _, intervals, k = work.shape
    x = work.reshape(2, -1)
    buckets = intervals * k
    dt = width / k / fine_steps
    pending = np.zeros((2, buckets))
    finish = np.full((2, buckets), -np.inf)
    step = 0
    while step < buckets * fine_steps or pending.sum() > 1e-12:
        if step % fine_steps == 0 and step // fine_steps < buckets:
            pending[0, step // fine_steps] += x[0, step // fine_steps]
        for node in (0, 1):
            budget = caps[node] * dt
            for s in range(buckets):
                if pending[node, s] > 1e-15 and budget > 0:
                    served = min(pending[node, s], budget)
                    pending[node, s] -= served
                    budget -= served
                    finish[node, s] = step * dt + (caps[node] * dt - budget) / caps[node]
                    if node == 0:
                        pending[1, s] += served * x[1, s] / x[0, s]
        step += 1
    ends = (np.arange(buckets) + 1) * width / k
    return np.maximum(finish - ends, 0.0).reshape(2, intervals, k).max(axis=2)


@settings(max_examples=30, deadline=None)
@given(cases(2))
def test_a_tandem_is_within_one_step_of_a_finer_fluid_replay(
    case: tuple[np.ndarray, list[float]],
) -> None:
    fine, caps = case
    topology = _topology(2, True, caps, 1.0)
    port_fine = fine[:, None]
    latency = per_origin_latency(topology, port_fine, topology.placement)
    reference = fluid_tandem(fine, caps, 1.0, 50)
    step = 1.0 / fine.shape[2]
    ratio = (fine[1] / fine[0]).max() * caps[0] / caps[1]
    assert np.all(np.abs(latency - reference) <= step * max(1.0, ratio) + 1e-6)


def test_operator_work_splits_a_node_by_its_ports_cpu() -> None:
    topology = _topology(2, True, [1.0, 1.0], 1.0)
    node_fine = np.array([[[1.0, 3.0]], [[2.0, 2.0]]])
    cpu = pd.DataFrame(
        {"operator": ["a", "b"], "port": [0, 0], "interval": [0, 0], "cpu_seconds": [4.0, 4.0]}
    )
    work = operator_fine_work(topology, node_fine, cpu, topology.placement)
    np.testing.assert_allclose(work[:, 0], node_fine)  # one operator per node: all of it


def test_a_query_is_as_late_as_its_sinks_and_a_node_as_its_latest_operator() -> None:
    topology = _topology(2, True, [1.0, 1.0], 1.0)
    per_op = np.array([[3.0, 0.0], [1.0, 2.0]])  # a (n0) feeds b (n1), the sink
    assert sink_latency(topology, per_op)["q"].tolist() == [1.0, 2.0]
    port_fine = np.array([[[[2.0]]], [[[1.0]]]])  # a: 2 s of work in one 1 s bucket, b: 1 s
    latency = per_origin_latency(topology, port_fine, topology.placement)
    # a ends at 2 (1 s late); b gets half of a's work each step and serves it from the
    # step's start, ending at 1.5: half a step before a fluid b (keeping up, ends at 2)
    np.testing.assert_allclose(latency, [[1.0], [0.5]])
    np.testing.assert_allclose(operator_latency(topology, port_fine, topology.placement), latency)
