"""Verification study (issue 15, Measure): for placement changes in simulated runs, what
the model fitted before each change predicted against what was then measured.

Runs are those of :mod:`benchmarks.study_runs`. The change happens at the run's idle
change moment T: the arrivals from T on are simulated again, from an empty system, under
the new placement, and the measured figures are the run's before T and the new
simulation's from T on. Two changes per run: the placement Mace-HC finds (2 s budget)
for the model fitted on [0, T) and the arrivals of [0, T), and a uniformly random
placement. :func:`estimator.verification.check_changes` then gives the figures ``mace
report --json`` prints under ``changes``.

    python benchmarks/verification_study.py --runs 8 --duration 120
"""

from __future__ import annotations

import argparse
import json
import math
import time
from typing import Any

import numpy as np
import pandas as pd

from benchmarks.study_runs import add_arguments, study_runs
from estimator.fitting import fit_operator_stats
from estimator.placement import place
from estimator.verification import check_changes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    clock = time.perf_counter()
    rows: list[dict[str, Any]] = []
    for run in study_runs(args):
        topology, base, t0, n = run.topology, run.base, run.change_at, run.intervals
        if t0 is None:
            continue
        fitted = fit_operator_stats(topology, base.stats, (0, t0)).topology
        rng = np.random.default_rng(run.seed + 2)
        moves = {
            "mace-hc": place(fitted, base.counts[:, :t0], "mace-hc", budget=2.0, rng=rng).placement,
            "random": {
                op: topology.node_ids[int(rng.integers(run.nodes))] for op in topology.operator_ids
            },
        }
        for name, placement in moves.items():
            after = run.simulated_after_change(topology.with_placement(placement), run.seed)
            stats = pd.concat(
                [
                    base.stats[base.stats["interval"] < t0],
                    after.stats[(after.stats["interval"] >= t0) & (after.stats["interval"] < n)],
                ]
            )
            latency = run.spliced_latency(after)
            for estimator in ("mace", "path"):
                (check,) = check_changes(
                    topology,
                    stats,
                    base.counts,
                    [topology.placement, placement],
                    (0, t0),
                    latency,
                    estimator=estimator,
                )
                rows.append(
                    {
                        "seed": run.seed,
                        "nodes": run.nodes,
                        "move": name,
                        "estimator": estimator,
                        "interval": check.interval,
                        "moved": len(check.moved),
                        "predicted_wc_before": check.predicted_wc_before,
                        "predicted_wc_after": check.predicted_wc_after,
                        "measured_wc_before": check.measured_wc_before,
                        "measured_wc_after": check.measured_wc_after,
                        "predicted_change": check.predicted_change,
                        "measured_change": check.measured_change,
                    }
                )
    summary: dict[str, Any] = {"seconds": round(time.perf_counter() - clock, 1)}
    for estimator in ("mace", "path"):
        mine = [x for x in rows if x["estimator"] == estimator]
        gaps = [
            x["predicted_change"] - x["measured_change"]
            for x in mine
            if math.isfinite(x["predicted_change"]) and math.isfinite(x["measured_change"])
        ]
        same_sign = [
            (x["predicted_change"] > 0) == (x["measured_change"] > 0)
            for x in mine
            if math.isfinite(x["predicted_change"]) and math.isfinite(x["measured_change"])
        ]
        summary[estimator] = {
            "changes": len(mine),
            "median_abs_gap_points": float(np.median(np.abs(gaps)) * 100) if gaps else None,
            "max_abs_gap_points": float(np.max(np.abs(gaps)) * 100) if gaps else None,
            "direction_right": f"{sum(same_sign)}/{len(same_sign)}",
        }
    print(json.dumps({"summary": summary, "changes": rows}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
