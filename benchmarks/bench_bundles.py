"""Benchmark the bundle cycle of a Python thread (``estimator.bundles.cycle_excess``).

Workload: one thread's work per subinterval over ``--intervals`` subintervals of 1 s
(default an hour), On-Off: 30% of the subintervals at 0.9 s of work, the rest at
0.1 s, each scaled by a factor in [0.5, 1.5]; Flink's default bundles (1 s, 1000 records
of 2.9 ms), with and without checkpoints every 10 s. Prints one JSON object with the
median seconds of ``--repeat`` plays of each, next to a reference timed in the same run:
the cumulative excess (Mace's CE) of the same work on one node
(``estimator.mace.cumulative_excess``), which every analysis computes anyway.

    python -m benchmarks.bench_bundles --json
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

import numpy as np

from benchmarks.bench_estimator import median_seconds
from estimator.bundles import cycle_excess
from estimator.mace import cumulative_excess

RECORD_WORK = 0.0029
BUNDLE_SIZE = 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--intervals", type=int, default=3600)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    work = np.where(rng.random(args.intervals) < 0.3, 0.9, 0.1)
    work = work * rng.uniform(0.5, 1.5, args.intervals)
    full = BUNDLE_SIZE * RECORD_WORK
    load_before = os.getloadavg()[0]
    result: dict[str, Any] = {
        "intervals": args.intervals,
        "repeat": args.repeat,
        "bundle_play_s": median_seconds(
            lambda: cycle_excess(work, 1.0, 1.0, bundle_work=full), args.repeat
        ),
        "bundle_play_checkpoints_s": median_seconds(
            lambda: cycle_excess(work, 1.0, 1.0, bundle_work=full, checkpoint=10.0), args.repeat
        ),
        "reference_mace_ce_s": median_seconds(
            lambda: cumulative_excess(work[None, :], np.array([1.0])), args.repeat
        ),
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
    }
    print(json.dumps(result) if args.json else json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
