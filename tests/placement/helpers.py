"""Small placement instances and a plain reference MaceWC for placement tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from estimator.arrivals import Arrivals
from estimator.model import Topology, topology_from_dict
from estimator.placement.workload import WorkloadParameters, random_workload


def small_instance(seed: int, operators: int = 6, nodes: int = 3) -> tuple[Topology, Arrivals]:
    """A bursty Fig. 6(b)-style instance small enough for exhaustive search."""
    params = WorkloadParameters(
        nodes_per_scale=nodes, operators_per_scale=operators, subintervals=60, low_duration=8.0
    )
    return random_workload(np.random.default_rng(seed), 1, params)


def constant_instance(
    loads: Sequence[float],
    capacities: Sequence[float],
    *,
    intervals: int = 10,
    queries: Sequence[str] | None = None,
) -> tuple[Topology, Arrivals]:
    """Operators with constant loads (CPU-s per second) reading one source of 100 events/s."""
    rate = 100.0
    document = {
        "name": "constant",
        "subinterval": 1.0,
        "nodes": [{"id": f"n{k + 1}", "capacity": c} for k, c in enumerate(capacities)],
        "sources": [{"id": "src"}],
        "operators": [
            {
                "id": f"op{j + 1}",
                "query": queries[j] if queries else "q1",
                "inputs": ["src"],
                "cost": load / rate,
            }
            for j, load in enumerate(loads)
        ],
        "placement": {f"op{j + 1}": "n1" for j in range(len(loads))},
    }
    return topology_from_dict(document), Arrivals(("src",), np.full((1, intervals), rate))


def reference_mace_wc(
    topology: Topology, arrivals: Arrivals, placement: Mapping[str, str]
) -> float:
    """MaceWC by the definitions (linear operators): loads summed per node, Lindley loop, max."""
    counts = arrivals.for_topology(topology)
    series: dict[str, np.ndarray] = {s: counts[k] for k, s in enumerate(topology.source_ids)}
    node_load = {n.id: np.zeros(counts.shape[1]) for n in topology.nodes}
    for op_id in topology.topological_order:
        op = topology.operator_by_id[op_id]
        inputs = np.stack([series[i] for i in op.inputs])
        node_load[placement[op_id]] += np.asarray(op.cost) @ inputs
        series[op_id] = np.asarray(op.selectivity) @ inputs
    worst = 0.0
    for node in topology.nodes:
        backlog = 0.0
        for load in node_load[node.id]:
            backlog = max(0.0, backlog + load - node.capacity * topology.subinterval)
            worst = max(worst, backlog / node.capacity)
    return worst
