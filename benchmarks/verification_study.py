"""Verification study: for placement changes in simulated runs, what
the model fitted before each change predicted against what was then measured.

Runs are those of :mod:`benchmarks.study_runs`. The change happens at the run's idle
change moment T: the arrivals from T on are simulated again, from an empty system, under
the new placement, and the measured figures are the run's before T and the new
simulation's from T on. Two changes per run: the placement Mace-HC finds (2 s budget)
for the model fitted on [0, T) and the arrivals of [0, T), and a uniformly random
placement. :func:`estimator.verification.check_changes` then gives the figures ``mace
report --json`` prints under ``changes``, for each estimator of ``--estimators``; the
ones that read a node profile (burst, origin) predict with the run's arrivals per
sub-bucket (the stored source_profile), and again without them as ``NAME-even`` (the
verification before it read the profile: Mace's series for burst-aware, an even spread
inside each subinterval for per-origin).

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
from estimator.burst import SUB_BUCKETS
from estimator.fitting import fit_operator_stats
from estimator.pathaware import ESTIMATORS, NODE_FINE
from estimator.placement import place
from estimator.verification import check_changes


def variants(names: list[str]) -> list[tuple[str, str, bool]]:
    """(label, estimator, with the arrival profile) of each estimator of ``names``, and
    the profile-less ``NAME-even`` of those that read a node profile."""
    out = []
    for name in names:
        out.append((name, name, True))
        if NODE_FINE in ESTIMATORS[name].uses:
            out.append((f"{name}-even", name, False))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    parser.add_argument(
        "--estimators",
        default="mace,path",
        help=f"comma-separated, of {', '.join(ESTIMATORS)} (default: mace,path)",
    )
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.estimators.split(",") if n.strip()]
    if not names:
        parser.error("--estimators: name at least one estimator")
    unknown = [n for n in names if n not in ESTIMATORS]
    if unknown:
        parser.error(f"--estimators: unknown estimator '{unknown[0]}'")
    labels = variants(names)
    clock = time.perf_counter()
    rows: list[dict[str, Any]] = []
    for run in study_runs(args):
        topology, base, t0, n = run.topology, run.base, run.change_at, run.intervals
        if t0 is None:
            continue
        fitted = fit_operator_stats(topology, base.stats, (0, t0)).topology
        profile = run.arrival_profile(SUB_BUCKETS)
        rng = np.random.default_rng(run.seed + 2)
        # the random placement has a generator of its own: Mace-HC's search stops on a
        # time budget, so how many numbers it draws depends on the machine's speed
        pick = np.random.default_rng(run.seed + 3)
        moves = {
            "mace-hc": place(fitted, base.counts[:, :t0], "mace-hc", budget=2.0, rng=rng).placement,
            "random": {
                op: topology.node_ids[int(pick.integers(run.nodes))] for op in topology.operator_ids
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
            for label, estimator, with_profile in labels:
                (check,) = check_changes(
                    topology,
                    stats,
                    base.counts,
                    [topology.placement, placement],
                    (0, t0),
                    latency,
                    estimator=estimator,
                    profile=profile if with_profile else None,
                )
                rows.append(
                    {
                        "seed": run.seed,
                        "nodes": run.nodes,
                        "move": name,
                        "estimator": label,
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
    for label, _, _ in labels:
        mine = [x for x in rows if x["estimator"] == label]
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
        summary[label] = {
            "changes": len(mine),
            **{
                f"median_abs_error_{period}_pct": _median_abs_error(mine, period)
                for period in ("before", "after")
            },
            "median_abs_gap_points": float(np.median(np.abs(gaps)) * 100) if gaps else None,
            "max_abs_gap_points": float(np.max(np.abs(gaps)) * 100) if gaps else None,
            "direction_right": f"{sum(same_sign)}/{len(same_sign)}",
        }
    print(json.dumps({"summary": summary, "changes": rows}))
    return 0


def _median_abs_error(rows: list[dict[str, Any]], period: str) -> float | None:
    """Median |predicted / measured - 1| of the worst case of ``period``, in percent."""
    errors = [
        abs(x[f"predicted_wc_{period}"] / x[f"measured_wc_{period}"] - 1) * 100
        for x in rows
        if math.isfinite(x[f"predicted_wc_{period}"])
        and math.isfinite(x[f"measured_wc_{period}"])
        and x[f"measured_wc_{period}"] > 0
    ]
    return float(np.median(errors)) if errors else None


if __name__ == "__main__":
    raise SystemExit(main())
