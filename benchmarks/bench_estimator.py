"""Benchmark the estimator: one full evaluation and one incremental operator move.

Prints one JSON line with ``full_eval_s`` (median time from arrivals to Mace,
bottlenecks and per-query figures, the topology's coefficients compiled once),
``move_eval_s`` (median time to re-evaluate MaceWC after moving one operator)
and, measured in the same run for reference, ``plain_eval_s``: the plain
approach that builds the operators x subintervals DLTS matrix and sums it by node.

    python benchmarks/bench_estimator.py --ops 4000 --nodes 400 --intervals 3600 --json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable

import numpy as np

from estimator.arrivals import Arrivals
from estimator.evaluator import PlacementEvaluator
from estimator.mace import cumulative_excess
from estimator.model import Topology, topology_from_dict
from estimator.propagation import bind, compile_topology


def random_topology(ops: int, nodes: int, sources: int, rng: np.random.Generator) -> Topology:
    """Zipf(1) operators per source, each extending its source's chain or a random earlier
    operator of the same source; one query per source; uniform random placement."""
    weights = 1.0 / np.arange(1, sources + 1)
    owner = rng.choice(sources, size=ops, p=weights / weights.sum())
    by_source: list[list[str]] = [[] for _ in range(sources)]
    operators = []
    for k in range(ops):
        s = int(owner[k])
        parents = by_source[s]
        upstream = (
            f"s{s}" if not parents or rng.random() < 0.2 else parents[rng.integers(len(parents))]
        )
        operators.append(
            {
                "id": f"o{k}",
                "query": f"q{s}",
                "inputs": [upstream],
                "cost": float(rng.uniform(1e-5, 1e-4)),
                "selectivity": float(rng.uniform(0.2, 2.0)),
            }
        )
        parents.append(f"o{k}")
    return topology_from_dict(
        {
            "name": "bench",
            "nodes": [{"id": f"n{i}", "capacity": 1.0} for i in range(nodes)],
            "sources": [{"id": f"s{s}"} for s in range(sources)],
            "operators": operators,
            "placement": {f"o{k}": f"n{rng.integers(nodes)}" for k in range(ops)},
        }
    )


def on_off_arrivals(sources: int, intervals: int, rng: np.random.Generator) -> Arrivals:
    """On-Off arrivals: high/low rate ratio 10, exponential period lengths."""
    counts = np.empty((sources, intervals))
    for s in range(sources):
        p, high = 0, False
        while p < intervals:
            length = max(1, int(rng.exponential(20 if high else 80)))
            rate = 2000.0 if high else 200.0
            counts[s, p : p + length] = rng.poisson(rate, size=min(length, intervals - p))
            p += length
            high = not high
    return Arrivals(tuple(f"s{s}" for s in range(sources)), counts)


def median_seconds(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def plain_evaluation(topology: Topology, counts: np.ndarray) -> float:
    """The straightforward way: per-operator series in topological order, then sum by node."""
    series = {s: counts[k] for k, s in enumerate(topology.source_ids)}
    index = {n: k for k, n in enumerate(topology.node_ids)}
    node_dlts = np.zeros((len(topology.nodes), counts.shape[1]))
    for op_id in topology.topological_order:
        op = topology.operator_by_id[op_id]
        inputs = [series[u] for u in op.inputs]
        load = sum(c * x for c, x in zip(op.cost, inputs, strict=True))
        node_dlts[index[topology.placement[op_id]]] += load
        series[op_id] = sum(s * x for s, x in zip(op.selectivity, inputs, strict=True))
    caps = np.array([n.capacity for n in topology.nodes])
    ce = cumulative_excess(node_dlts, caps * topology.subinterval) / caps[:, None]
    return float(ce.max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=4000)
    parser.add_argument("--nodes", type=int, default=400)
    parser.add_argument("--intervals", type=int, default=3600)
    parser.add_argument("--sources", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--moves", type=int, default=500)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    topology = random_topology(args.ops, args.nodes, args.sources, rng)
    arrivals = on_off_arrivals(args.sources, args.intervals, rng)
    counts = arrivals.for_topology(topology)

    start = time.perf_counter()
    coefficients = compile_topology(topology)
    compile_s = time.perf_counter() - start

    def full() -> object:
        return PlacementEvaluator(topology, bind(coefficients, counts)).estimate()

    full()
    full_eval_s = median_seconds(full, args.repeats)
    plain_eval_s = median_seconds(
        lambda: plain_evaluation(topology, counts), max(3, args.repeats // 3)
    )

    evaluator = PlacementEvaluator(topology, bind(coefficients, counts))
    ops = rng.choice(len(topology.operators), size=args.moves)
    targets = rng.integers(args.nodes, size=args.moves)
    move_times = []
    for op_k, node_k in zip(ops, targets, strict=True):
        op_id, node_id = topology.operator_ids[op_k], topology.node_ids[node_k]
        start = time.perf_counter()
        evaluator.move_mace_wc(op_id, node_id)
        move_times.append(time.perf_counter() - start)
    result = {
        "ops": args.ops,
        "nodes": args.nodes,
        "intervals": args.intervals,
        "sources": args.sources,
        "full_eval_s": full_eval_s,
        "move_eval_s": statistics.median(move_times),
        "plain_eval_s": plain_eval_s,
        "compile_s": compile_s,
        "mace_wc": evaluator.mace_wc,
    }
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:>14}: {value}")


if __name__ == "__main__":
    main()
