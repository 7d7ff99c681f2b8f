"""Benchmark the estimator: one full evaluation and one incremental operator move.

Prints one JSON line with ``full_eval_s`` (median time from arrivals to Mace,
bottlenecks and per-query figures, the topology's coefficients compiled once),
``move_eval_s`` (median time to re-evaluate MaceWC after moving one operator),
``apply_move_s`` (median time to commit a move: two rows and the top-3) and,
measured in the same run for reference, ``plain_eval_s``: the plain approach
that builds the operators x subintervals DLTS matrix and sums it by node. Each
time also has a ``*_cpu_s`` twin, the median process CPU time, which a shared
machine's load disturbs less; ``load`` is the 1-minute load average before and
after, and ``faults_per_eval`` the page faults of one full evaluation.

``--scaling`` prints instead one JSON object whose ``rows`` time the full
evaluation and a move over a small grid of operators, nodes and subintervals
around the headline size, with ``ns_per_cell`` (full-evaluation CPU time per
node x subinterval cell) to show whether the time grows linearly.

    python benchmarks/bench_estimator.py --ops 4000 --nodes 400 --intervals 3600 --json
    python benchmarks/bench_estimator.py --intervals 36000 --repeats 5 --json
    python benchmarks/bench_estimator.py --scaling --json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import time
from collections.abc import Callable
from typing import Any

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
    return timed(fn, repeats)[0]


def timed(fn: Callable[[], object], repeats: int) -> tuple[float, float]:
    """Median wall time and median process CPU time of ``repeats`` calls."""
    wall, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        cpu.append(time.process_time() - start_cpu)
        wall.append(time.perf_counter() - start)
    return statistics.median(wall), statistics.median(cpu)


def plain_evaluation(topology: Topology, counts: np.ndarray) -> float:
    """The straightforward way: per-operator series in topological order, then sum by node
    (a series is dropped once its last consumer has read it)."""
    series = {s: counts[k] for k, s in enumerate(topology.source_ids)}
    readers = {k: len(v) for k, v in topology.downstream.items()}
    index = {n: k for k, n in enumerate(topology.node_ids)}
    node_dlts = np.zeros((len(topology.nodes), counts.shape[1]))
    for op_id in topology.topological_order:
        op = topology.operator_by_id[op_id]
        inputs = [series[u] for u in op.inputs]
        load = sum(c * x for c, x in zip(op.cost, inputs, strict=True))
        node_dlts[index[topology.placement[op_id]]] += load
        if readers[op_id]:
            series[op_id] = sum(s * x for s, x in zip(op.selectivity, inputs, strict=True))
        for u in op.inputs:
            readers[u] -= 1
            if not readers[u]:
                del series[u]
    caps = np.array([n.capacity for n in topology.nodes])
    ce = cumulative_excess(node_dlts, caps * topology.subinterval) / caps[:, None]
    return float(ce.max())


def measure(
    ops: int,
    nodes: int,
    intervals: int,
    sources: int,
    repeats: int,
    moves: int,
    seed: int,
    plain: bool,
) -> dict[str, Any]:
    """Time the full evaluation, moves, commits and (with ``plain``) the plain reference."""
    rng = np.random.default_rng(seed)
    topology = random_topology(ops, nodes, sources, rng)
    arrivals = on_off_arrivals(sources, intervals, rng)
    counts = arrivals.for_topology(topology)

    start = time.perf_counter()
    coefficients = compile_topology(topology)
    compile_s = time.perf_counter() - start

    def full() -> object:
        return PlacementEvaluator(topology, bind(coefficients, counts)).estimate()

    full()
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    full_eval_s, full_eval_cpu_s = timed(full, repeats)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    result: dict[str, Any] = {
        "ops": ops,
        "nodes": nodes,
        "intervals": intervals,
        "sources": sources,
        "full_eval_s": full_eval_s,
        "full_eval_cpu_s": full_eval_cpu_s,
        "faults_per_eval": faults / repeats,
    }
    if plain:
        plain_eval_s, plain_eval_cpu_s = timed(
            lambda: plain_evaluation(topology, counts), max(3, repeats // 3)
        )
        result |= {"plain_eval_s": plain_eval_s, "plain_eval_cpu_s": plain_eval_cpu_s}

    evaluator = PlacementEvaluator(topology, bind(coefficients, counts))
    mace_wc = evaluator.mace_wc
    picks = zip(rng.choice(ops, size=moves), rng.integers(nodes, size=moves), strict=True)
    trials = [(topology.operator_ids[o], topology.node_ids[n]) for o, n in picks]
    move_wall, move_cpu, apply_wall, apply_cpu = [], [], [], []
    for op_id, node_id in trials:
        start, start_cpu = time.perf_counter(), time.process_time()
        evaluator.move_mace_wc(op_id, node_id)
        move_cpu.append(time.process_time() - start_cpu)
        move_wall.append(time.perf_counter() - start)
    for op_id, node_id in trials:
        start, start_cpu = time.perf_counter(), time.process_time()
        evaluator.apply_move(op_id, node_id)
        apply_cpu.append(time.process_time() - start_cpu)
        apply_wall.append(time.perf_counter() - start)
    return result | {
        "move_eval_s": statistics.median(move_wall),
        "move_eval_cpu_s": statistics.median(move_cpu),
        "apply_move_s": statistics.median(apply_wall),
        "apply_move_cpu_s": statistics.median(apply_cpu),
        "compile_s": compile_s,
        "mace_wc": mace_wc,
    }


SCALING_OPS = (1000, 2000, 4000, 8000)
SCALING_NODES = (100, 200, 400, 800)
SCALING_INTERVALS = (900, 1800, 3600, 7200, 36000)


def scaling(args: argparse.Namespace) -> dict[str, Any]:
    """Vary one of operators, nodes and subintervals at a time around the headline size."""
    grid = (
        [(o, args.nodes, args.intervals) for o in SCALING_OPS]
        + [(args.ops, n, args.intervals) for n in SCALING_NODES if n != args.nodes]
        + [(args.ops, args.nodes, d) for d in SCALING_INTERVALS if d != args.intervals]
    )
    rows = []
    for ops, nodes, intervals in grid:
        row = measure(
            ops, nodes, intervals, args.sources, args.repeats, args.moves, args.seed, plain=False
        )
        row["ns_per_cell"] = row["full_eval_cpu_s"] / (nodes * intervals) * 1e9
        rows.append(row)
    return {"benchmark": "estimator-scaling", "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=4000)
    parser.add_argument("--nodes", type=int, default=400)
    parser.add_argument("--intervals", type=int, default=3600)
    parser.add_argument("--sources", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--moves", type=int, default=500)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--scaling", action="store_true", help="time a grid of sizes instead")
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args()

    load_before = os.getloadavg()[0]
    if args.scaling:
        result = scaling(args)
    else:
        result = measure(
            args.ops,
            args.nodes,
            args.intervals,
            args.sources,
            args.repeats,
            args.moves,
            args.seed,
            plain=True,
        )
    result["load"] = [load_before, os.getloadavg()[0]]
    if args.json:
        print(json.dumps(result))
    elif args.scaling:
        header = ("ops", 6), ("nodes", 6), ("intervals", 9), ("full ms", 8), ("cpu ms", 7)
        print(" ".join(f"{name:>{width}}" for name, width in header), f"{'ns/cell':>8}")
        for row in result["rows"]:
            print(
                f"{row['ops']:>6} {row['nodes']:>6} {row['intervals']:>9} "
                f"{row['full_eval_s'] * 1e3:>8.2f} {row['full_eval_cpu_s'] * 1e3:>7.2f} "
                f"{row['ns_per_cell']:>8.2f}"
            )
    else:
        for key, value in result.items():
            print(f"{key:>16}: {value}")


if __name__ == "__main__":
    main()
