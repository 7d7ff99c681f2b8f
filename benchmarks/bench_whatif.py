"""Benchmark a What-if change end to end, as the page's callbacks run it.

Workload: ``clickstream-5q`` on 13 nodes (70 operators, network links) with an
hour of arrivals (3600 subintervals of 1 s). One timed step is what the server
does for one form action: validate the edit (:func:`apply_edit`), evaluate the
scenario and build every figure (:func:`render`), and serialize the response as
Dash does (``to_json_plotly``). Reported as medians in ms for a move (with Mace,
and with the path-aware estimator), a capacity change and a rate-scale change
(which rebuilds the cached load model), next to a reference measured in the same
run: the estimator's plain ``evaluate_scenario`` (no cache, no figures).

    .venv/bin/python benchmarks/bench_whatif.py --json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from plotly.io.json import to_json_plotly

from dashboard.whatif.scenario import apply_edit, render
from estimator.arrivals import Arrivals
from estimator.whatif import RunInputs, WhatIfEngine, evaluate_scenario, scenario_from_json
from simulator.workloads import workload

TARGET_MS = 300.0


def build_inputs(nodes: int, intervals: int, seed: int) -> RunInputs:
    topology, times = workload("clickstream-5q", nodes=nodes, duration=float(intervals), seed=seed)
    counts = np.zeros((len(topology.source_ids), intervals))
    for row, source in enumerate(topology.source_ids):
        bins = np.floor(np.asarray(times[source]) / topology.subinterval).astype(np.int64)
        bins = bins[(bins >= 0) & (bins < intervals)]
        counts[row] = np.bincount(bins, minlength=intervals)
    return RunInputs("bench", topology, Arrivals(topology.source_ids, counts))


def step(
    engine: WhatIfEngine,
    inputs: RunInputs,
    action: str,
    values: dict[str, Any],
    estimator: str = "mace",
) -> float:
    """One form action end to end; returns the resulting scenario worst case."""
    data = apply_edit(inputs, {}, action, values)
    view = render(engine, inputs, data, values.get("operator"), estimator)
    payload = to_json_plotly(
        [view.latency_figure, view.query_figure, view.graph.elements, view.table_rows, view.summary]
    )
    assert payload
    return view.scenario_wc


def median_ms(runs: list[Callable[[], object]]) -> float:
    samples = []
    for run in runs:
        start = time.perf_counter()
        run()
        samples.append((time.perf_counter() - start) * 1000.0)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=13)
    parser.add_argument("--intervals", type=int, default=3600)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()

    inputs = build_inputs(args.nodes, args.intervals, args.seed)
    topology = inputs.topology
    engine = WhatIfEngine()
    step(engine, inputs, "reset", {})  # warm: baseline evaluation and load model
    rng = np.random.default_rng(args.seed)
    ops = list(topology.operator_ids)
    nodes = list(topology.node_ids)

    def move() -> Callable[[], object]:
        op, node = ops[rng.integers(len(ops))], nodes[rng.integers(len(nodes))]
        return lambda: step(engine, inputs, "move", {"operator": op, "node": node})

    def move_path() -> Callable[[], object]:
        op, node = ops[rng.integers(len(ops))], nodes[rng.integers(len(nodes))]
        return lambda: step(engine, inputs, "move", {"operator": op, "node": node}, "path")

    def capacity() -> Callable[[], object]:
        node, value = nodes[rng.integers(len(nodes))], float(rng.uniform(0.5, 3.0))
        return lambda: step(engine, inputs, "capacity", {"node": node, "capacity": value})

    def rate() -> Callable[[], object]:
        scale = float(rng.uniform(0.5, 2.0))
        return lambda: step(engine, inputs, "load", {"rate_scale": scale, "factor": 1})

    def reference() -> Callable[[], object]:
        op, node = ops[rng.integers(len(ops))], nodes[rng.integers(len(nodes))]
        scenario = scenario_from_json({"placement": {op: node}})
        return lambda: evaluate_scenario(topology, inputs.arrivals, scenario)

    result = {
        "workload": "clickstream-5q",
        "operators": len(ops),
        "nodes": len(nodes),
        "intervals": args.intervals,
        "repeat": args.repeat,
        "move_ms": median_ms([move() for _ in range(args.repeat)]),
        "move_path_aware_ms": median_ms([move_path() for _ in range(args.repeat)]),
        "capacity_ms": median_ms([capacity() for _ in range(args.repeat)]),
        "rate_scale_ms": median_ms([rate() for _ in range(args.repeat)]),
        "reference_evaluate_scenario_ms": median_ms([reference() for _ in range(args.repeat)]),
        "target_ms": TARGET_MS,
    }
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:>32}: {value:.1f}" if isinstance(value, float) else f"{key:>32}: {value}")


if __name__ == "__main__":
    main()
