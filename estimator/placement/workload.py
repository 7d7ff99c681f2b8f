"""The random workload of the Mace paper's Fig. 6(b): its parameters and operator graph.

This module is the one home of Fig. 6(b). Five independent sources follow the
On-Off model (exponential high and low periods; average high/low rate ratio
10, duration ratio 0.25). Each operator belongs to one source, chosen with a
Zipf(1.0) law; with probability 0.1 it reads the source's anti-phase
companion (high when the source is low), which makes it anti-correlated;
otherwise it reads the source or an earlier operator of the same source, so
the operators form a DAG. Selectivities are uniform within one of 20 equal
ranges of [0.2, 2] chosen with a Zipf(1.5) law. Scale factor X means 20X nodes
and 200X operators.

:func:`random_operators` draws the graph; :func:`random_workload` completes it
for placement (Poisson counts per subinterval, costs scaled to an average
system load of 0.75 of the total capacity, round-robin placement) and the
simulator's ``random`` workload completes it with event times, links and a
random placement.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from estimator.arrivals import Arrivals
from estimator.model import Topology, topology_from_dict
from estimator.propagation import build_load_model


@dataclass(frozen=True)
class WorkloadParameters:
    """Fig. 6(b) of the paper, plus what it leaves open: the series length, rates,
    period lengths (``low_duration`` in subintervals), the DAG's shape and raw costs."""

    sources: int = 5
    anti_correlated: float = 0.1
    rate_ratio: float = 10.0
    duration_ratio: float = 0.25
    low_duration: float = 40.0
    mean_rate: float = 1000.0
    operator_skew: float = 1.0
    selectivity_min: float = 0.2
    selectivity_max: float = 2.0
    selectivity_skew: float = 1.5
    selectivity_ranges: int = 20
    chain_probability: float = 0.7  # not in the paper: reading an earlier operator
    cost_min: float = 20e-6  # CPU-s per event, before any scaling to a load
    cost_max: float = 200e-6
    load: float = 0.75
    nodes_per_scale: int = 20
    operators_per_scale: int = 200
    subintervals: int = 400
    subinterval: float = 1.0


def zipf_probabilities(count: int, skew: float) -> np.ndarray:
    """Probabilities of ranks 1..count under Zipf(skew)."""
    weights = 1.0 / np.arange(1, count + 1) ** skew
    return weights / weights.sum()


def on_off_rates(
    rng: np.random.Generator, params: WorkloadParameters
) -> tuple[np.ndarray, np.ndarray]:
    """Average rate per subinterval of an On-Off source and of its anti-phase companion."""
    d, w = params.subintervals, params.subinterval
    high_duration = params.low_duration * params.duration_ratio
    high_share = high_duration / (high_duration + params.low_duration)
    low_rate = params.mean_rate / (params.rate_ratio * high_share + 1 - high_share)
    high_rate = params.rate_ratio * low_rate
    high_time = np.zeros(d)
    clock = 0.0
    high = bool(rng.random() < high_share)
    while clock < d * w:
        length = rng.exponential((high_duration if high else params.low_duration) * w)
        if high:
            _add_interval(high_time, clock, min(clock + length, d * w), w)
        clock += length
        high = not high
    fraction = high_time / w
    rate = low_rate + (high_rate - low_rate) * fraction
    anti = high_rate - (high_rate - low_rate) * fraction
    return rate, anti


def _add_interval(high_time: np.ndarray, start: float, stop: float, w: float) -> None:
    """Add the time of [start, stop) to every subinterval it overlaps."""
    first, last = int(start // w), min(int(np.ceil(stop / w)), high_time.size)
    for p in range(first, last):
        high_time[p] += max(0.0, min(stop, (p + 1) * w) - max(start, p * w))


def anti_phase(source: str) -> str:
    """The id of a source's anti-phase companion."""
    return f"{source}_anti"


@dataclass(frozen=True)
class RandomOperators:
    """The operators of a Fig. 6(b) workload (topology entries, unplaced).

    ``sources`` are the On-Off sources ``s1 ..``; ``twins`` maps each anti-phase
    companion that an operator reads to its source (in source order).
    """

    sources: tuple[str, ...]
    twins: Mapping[str, str]
    operators: tuple[dict[str, Any], ...]


def random_operators(
    rng: np.random.Generator, count: int, params: WorkloadParameters | None = None
) -> RandomOperators:
    """``count`` operators: source by Zipf, selectivity range by Zipf, 10% anti-correlated,
    the others reading their source or (``chain_probability``) an earlier operator of it."""
    p = params or WorkloadParameters()
    owner = rng.choice(p.sources, size=count, p=zipf_probabilities(p.sources, p.operator_skew))
    edges = np.linspace(p.selectivity_min, p.selectivity_max, p.selectivity_ranges + 1)
    ranges = rng.choice(
        p.selectivity_ranges,
        size=count,
        p=zipf_probabilities(p.selectivity_ranges, p.selectivity_skew),
    )
    anti = rng.random(count) < p.anti_correlated
    sources = tuple(f"s{k + 1}" for k in range(p.sources))
    members: list[list[str]] = [[] for _ in sources]
    used_anti = set()
    operators = []
    for j in range(count):
        s = int(owner[j])
        op_id = f"op{j + 1}"
        if anti[j]:
            upstream = anti_phase(sources[s])
            used_anti.add(s)
        elif members[s] and rng.random() < p.chain_probability:
            upstream = members[s][int(rng.integers(len(members[s])))]
        else:
            upstream = sources[s]
        operators.append(
            {
                "id": op_id,
                "query": f"q{s + 1}",
                "inputs": [upstream],
                "cost": float(rng.uniform(p.cost_min, p.cost_max)),
                "selectivity": float(rng.uniform(edges[ranges[j]], edges[ranges[j] + 1])),
            }
        )
        if not anti[j]:
            members[s].append(op_id)
    twins = {anti_phase(sources[k]): sources[k] for k in sorted(used_anti)}
    return RandomOperators(sources, twins, tuple(operators))


def random_workload(
    rng: np.random.Generator, scale: int = 1, params: WorkloadParameters | None = None
) -> tuple[Topology, Arrivals]:
    """A random topology (round-robin placement) and its arrival series at ``scale``:
    :func:`random_operators` with costs scaled so that the mean arrivals load the
    nodes to ``load`` of their total capacity on average."""
    p = params or WorkloadParameters()
    n_nodes = p.nodes_per_scale * scale
    graph = random_operators(rng, p.operators_per_scale * scale, p)
    source_ids: list[str] = []
    rows = []
    for source in graph.sources:
        rate, anti = on_off_rates(rng, p)
        source_ids += [source, anti_phase(source)]
        rows += [rng.poisson(rate * p.subinterval), rng.poisson(anti * p.subinterval)]
    arrivals = Arrivals(tuple(source_ids), np.array(rows, dtype=float))
    document: dict[str, Any] = {
        "name": f"random-x{scale}",
        "subinterval": p.subinterval,
        "nodes": [{"id": f"n{i + 1}", "capacity": 1.0} for i in range(n_nodes)],
        "sources": [{"id": s} for s in source_ids],
        "operators": [dict(op) for op in graph.operators],
        "placement": {op["id"]: f"n{j % n_nodes + 1}" for j, op in enumerate(graph.operators)},
    }
    topology = topology_from_dict(document)
    mean = arrivals.for_topology(topology).mean(axis=1, keepdims=True)
    work = float(build_load_model(topology, mean).operator_dlts().sum()) / p.subinterval
    for op in document["operators"]:
        op["cost"] *= p.load * n_nodes / work
    return topology_from_dict(document), arrivals
