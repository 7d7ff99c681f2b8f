"""Random placement workloads with the parameters of the Mace paper's Fig. 6(b).

Five independent sources follow the On-Off model (exponential high and low
periods; average high/low rate ratio 10, duration ratio 0.25; Poisson counts
per subinterval). Each operator reads one source, chosen with a Zipf(1.0) law;
with probability 0.1 it reads the source's anti-phase companion instead (high
when the source is low), which makes it anti-correlated. The effect of
upstream operators is a selectivity factor on the operator's cost, drawn
uniformly from one of 20 equal ranges of [0.2, 2] chosen with a Zipf(1.5)
law. Costs are scaled so that the average system load is 0.75 of the total
capacity. Scale factor X means 20X nodes and 200X operators.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from estimator.arrivals import Arrivals
from estimator.model import Topology, topology_from_dict


@dataclass(frozen=True)
class WorkloadParameters:
    """Fig. 6(b) of the paper, plus the series length and rates it leaves open."""

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
    load: float = 0.75
    nodes_per_scale: int = 20
    operators_per_scale: int = 200
    subintervals: int = 400
    subinterval: float = 1.0


def zipf_probabilities(count: int, skew: float) -> np.ndarray:
    """Probabilities of ranks 1..count under Zipf(skew) (also used by the simulator)."""
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


def random_workload(
    rng: np.random.Generator, scale: int = 1, params: WorkloadParameters | None = None
) -> tuple[Topology, Arrivals]:
    """A random topology (round-robin placement) and its arrival series at ``scale``."""
    p = params or WorkloadParameters()
    n_nodes = p.nodes_per_scale * scale
    n_ops = p.operators_per_scale * scale
    source_ids: list[str] = []
    rows = []
    for k in range(p.sources):
        rate, anti = on_off_rates(rng, p)
        source_ids += [f"s{k + 1}", f"s{k + 1}_anti"]
        rows += [rng.poisson(rate * p.subinterval), rng.poisson(anti * p.subinterval)]
    counts = np.array(rows, dtype=float)
    home = rng.choice(p.sources, size=n_ops, p=zipf_probabilities(p.sources, p.operator_skew))
    anti_phase = rng.random(n_ops) < p.anti_correlated
    inputs = 2 * home + anti_phase.astype(int)
    width = (p.selectivity_max - p.selectivity_min) / p.selectivity_ranges
    band = rng.choice(
        p.selectivity_ranges,
        size=n_ops,
        p=zipf_probabilities(p.selectivity_ranges, p.selectivity_skew),
    )
    factor = p.selectivity_min + width * (band + rng.random(n_ops))
    mean_rate = counts.mean(axis=1) / p.subinterval
    unit_cost = p.load * n_nodes / float((factor * mean_rate[inputs]).sum())
    operators = [
        {
            "id": f"op{j + 1}",
            "query": f"q{home[j] + 1}",
            "inputs": [source_ids[inputs[j]]],
            "cost": float(unit_cost * factor[j]),
            "selectivity": 1.0,
        }
        for j in range(n_ops)
    ]
    topology = topology_from_dict(
        {
            "name": f"random-x{scale}",
            "subinterval": p.subinterval,
            "nodes": [{"id": f"n{i + 1}", "capacity": 1.0} for i in range(n_nodes)],
            "sources": [{"id": s} for s in source_ids],
            "operators": operators,
            "placement": {f"op{j + 1}": f"n{j % n_nodes + 1}" for j in range(n_ops)},
        }
    )
    return topology, Arrivals(tuple(source_ids), counts)
