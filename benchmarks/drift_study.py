"""Drift study: false drift alarms and the delay to flag a cost change.

Runs are those of :mod:`benchmarks.study_runs` (the held-out style of the accuracy
study, docs/accuracy.md, Fig. 5(b)). The predictive model is fitted on the first 10% of
each run (the product's default); the predicted band is [Mace, X + w + eps] of that
model for X = Mace and X = the path-aware estimate (the product's choice,
dashboard/core/monitoring.py), widened by ``tolerance`` on each side (the product's default:
w), compared on settled subintervals only, as the alert pass does.

*No change*: the run as simulated; every drift event is a false alarm.

*Cost change at T* (the run's idle change moment): the arrivals from T on are simulated
again, from an empty system, with every operator's cost scaled by ``factor``; the
measured latency is the run's before T and the new simulation's from T on: what a cost
change at an idle moment T gives. The model and its band stay those fitted on the first
10% of the run. The delay is the first ``flagged_at`` at or after T, minus T (a drift
event flagged earlier and still going on at T does not count).

    python benchmarks/drift_study.py --runs 8 --duration 120
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import replace
from typing import Any

import numpy as np

from benchmarks.study_runs import add_arguments, study_runs
from estimator.drift import drift_events, settled
from estimator.fitting import training_window
from estimator.model import Topology
from estimator.runs import analyse, fitted_operator_dlts, node_loads

KS = (3, 5, 8)
FACTORS = (0.7, 1.1, 1.25, 1.5)
ESTIMATORS = ("mace", "path")


def scaled(topology: Topology, factor: float) -> Topology:
    """Every operator port's cost times ``factor``."""
    ops = tuple(replace(o, cost=tuple(c * factor for c in o.cost)) for o in topology.operators)
    return replace(topology, operators=ops)


def band(
    topology: Topology, stats: Any, counts: np.ndarray, estimator: str
) -> tuple[np.ndarray, np.ndarray]:
    """Predicted [lower, upper] from the model fitted on the first 10% of the run."""
    window = training_window(counts.shape[1], 0.1)
    dlts = fitted_operator_dlts(topology, stats, counts, window)
    loads = node_loads(topology, dlts, [topology.placement], (0,))
    analysis = analyse(topology, loads, [topology.placement], (0,), estimator)
    return analysis.lower, analysis.upper


def first_flag(events: list[Any], t0: int) -> tuple[int | None, str | None]:
    after = [e for e in events if e.flagged_at >= t0]
    return (after[0].flagged_at - t0, after[0].direction) if after else (None, None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    parser.add_argument("--tolerance", type=float, help="band widening in s (default w)")
    args = parser.parse_args(argv)
    clock = time.perf_counter()
    runs: list[dict[str, Any]] = []
    for run in study_runs(args):
        topology, base, t0 = run.topology, run.base, run.change_at
        w = topology.subinterval
        tol = w if args.tolerance is None else args.tolerance
        entry: dict[str, Any] = {"seed": run.seed, "nodes": run.nodes, "T": t0}
        entry["intervals"] = run.intervals
        changed: dict[str, np.ndarray] = {}
        if t0 is not None:
            for factor in FACTORS:
                after = run.simulated_after_change(scaled(topology, factor), run.seed + 1)
                changed[f"{factor:g}"] = run.spliced_latency(after)
        for estimator in ESTIMATORS:
            lower, upper = band(topology, base.stats, base.counts, estimator)
            ok = settled(upper, w)
            measured = np.where(ok, base.latency, np.nan)
            outside = np.isfinite(measured) & ((measured > upper + tol) | (measured < lower - tol))
            result: dict[str, Any] = {
                "compared": int(np.isfinite(measured).sum()),
                "outside_band": int(outside.sum()),
                "false_alarms": {
                    str(k): [
                        (e.start, e.end, e.direction)
                        for e in drift_events(measured, lower, upper, k, tolerance=tol)
                    ]
                    for k in KS
                },
                "changes": {},
            }
            for name, series in changed.items():
                spliced = np.where(ok, series, np.nan)
                result["changes"][name] = {
                    str(k): first_flag(
                        drift_events(spliced, lower, upper, k, tolerance=tol), t0 or 0
                    )
                    for k in KS
                }
            entry[estimator] = result
        runs.append(entry)
    summary: dict[str, Any] = {
        "runs": len(runs),
        "duration_s": args.duration,
        "tolerance": "w" if args.tolerance is None else args.tolerance,
        "seconds": round(time.perf_counter() - clock, 1),
    }
    for estimator in ESTIMATORS:
        part: dict[str, Any] = {
            "subintervals_compared": sum(e[estimator]["compared"] for e in runs),
            "subintervals_outside_band": sum(e[estimator]["outside_band"] for e in runs),
        }
        for k in KS:
            alarms = [len(e[estimator]["false_alarms"][str(k)]) for e in runs]
            part[f"false_alarms_k{k}"] = {"events": sum(alarms), "runs": sum(a > 0 for a in alarms)}
        for name in (f"{f:g}" for f in FACTORS):
            for k in KS:
                flags = [
                    e[estimator]["changes"][name][str(k)]
                    for e in runs
                    if name in e[estimator]["changes"]
                ]
                found = [d for d, _ in flags if d is not None]
                part[f"cost_x{name}_k{k}"] = {
                    "changes": len(flags),
                    "flagged": len(found),
                    "median_delay_s": float(np.median(found)) if found else None,
                    "max_delay_s": max(found) if found else None,
                }
        summary[estimator] = part
    print(json.dumps({"summary": summary, "runs": runs}, default=_plain))
    return 0


def _plain(value: Any) -> Any:
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return None if math.isnan(value) else float(value)
    raise TypeError(type(value))


if __name__ == "__main__":
    raise SystemExit(main())
