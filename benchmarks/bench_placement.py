"""Placement quality at scale (the Mace paper's Fig. 6(c)).

For each scale factor X (20X nodes, 200X operators, the random workload of
Fig. 6(b)), every algorithm gets the same time budget; we report the MaceWC of
the best placement each finds and the time it took to reach it. As a
reference measured in the same run, ``baseline_median`` is the median MaceWC
of uniform random placements (the paper's Baseline distribution).

    .venv/bin/python benchmarks/bench_placement.py --json [--budget 15] [--scales 1,5,20]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import numpy as np

from estimator.placement import ALGORITHMS, PlacementProblem
from estimator.placement.workload import WorkloadParameters, random_workload

REFERENCE_DRAWS = 25


def run_scale(
    scale: int, budget: float, seed: int, subintervals: int, show: bool
) -> dict[str, Any]:
    params = WorkloadParameters(subintervals=subintervals)
    topology, arrivals = random_workload(np.random.default_rng(seed), scale, params)
    problem = PlacementProblem.from_arrivals(topology, arrivals)
    reference_rng = np.random.default_rng(seed + 1)
    draws = [
        problem.score(problem.random_assignment(reference_rng)) for _ in range(REFERENCE_DRAWS)
    ]
    rows = {}
    for name, algorithm in ALGORITHMS.items():
        bar = _bar(f"x{scale} {name}", show)
        result = algorithm(
            problem,
            budget=budget,
            rng=np.random.default_rng(seed + 2),
            progress=bar.update if bar else None,
        )
        if bar:
            bar.close()
        rows[name] = {
            "mace_wc": result.mace_wc,
            "time_to_best": result.time_to_best,
            "seconds": result.seconds,
            "evaluations": result.evaluations,
            "nodes_used": result.nodes_used,
        }
    best_other = min(r["mace_wc"] for n, r in rows.items() if n != "mace-hc")
    return {
        "scale": scale,
        "nodes": len(topology.nodes),
        "operators": len(topology.operators),
        "subintervals": subintervals,
        "baseline_median": float(np.median(draws)),
        "algorithms": rows,
        "mace_hc_lowest": rows["mace-hc"]["mace_wc"] <= best_other,
    }


class _Bar:
    def __init__(self, label: str):
        from tqdm import tqdm

        self.bar = tqdm(total=100, desc=label, unit="%", leave=False, file=sys.stderr)

    def update(self, fraction: float, best: float) -> None:
        self.bar.n = round(100 * fraction)
        self.bar.set_postfix_str(f"best {best:.3f} s", refresh=True)

    def close(self) -> None:
        self.bar.close()


def _bar(label: str, show: bool) -> _Bar | None:
    return _Bar(label) if show else None


def table(results: list[dict[str, Any]]) -> str:
    lines = [f"{'scale':>5} {'algorithm':<10} {'MaceWC (s)':>11} {'to best (s)':>11} {'evals':>9}"]
    for entry in results:
        for name, row in entry["algorithms"].items():
            lines.append(
                f"{entry['scale']:>5} {name:<10} {row['mace_wc']:>11.3f} "
                f"{row['time_to_best']:>11.2f} {row['evaluations']:>9}"
            )
        lines.append(
            f"{entry['scale']:>5} {'(random median)':<10} {entry['baseline_median']:>7.3f}"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--budget", type=float, default=15.0, help="seconds per algorithm")
    parser.add_argument("--scales", default="1,5,20", help="comma-separated scale factors")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--subintervals", type=int, default=400)
    args = parser.parse_args()
    scales = [int(s) for s in args.scales.split(",") if s.strip()]
    started = time.perf_counter()
    show = sys.stderr.isatty()
    results = [run_scale(s, args.budget, args.seed, args.subintervals, show) for s in scales]
    report = {
        "benchmark": "placement",
        "budget_seconds": args.budget,
        "seed": args.seed,
        "results": results,
        "mace_hc_lowest_everywhere": all(r["mace_hc_lowest"] for r in results),
        "total_seconds": time.perf_counter() - started,
    }
    print(json.dumps(report, indent=2) if args.json else table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
