"""Operator executions simulated per second on ``clickstream``, end to end.

End to end means: compile the topology, run the engine, build the Arrow
telemetry tables and write the Parquet landing folder. The CPU seconds of the
simulation alone (``simulate``: plan, engine, tables) are reported too: on a
shared machine they vary less than wall time. The numba engine's
compile time (cold, in a subprocess with an empty cache) and its cache load
time are measured first and reported apart.
The reference heapq engine is measured in the same run on a shorter slice of
the same workload. Prints JSON with ``--json``.

    .venv/bin/python benchmarks/bench_simulator.py --json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from simulator.fast import warm_up
from simulator.run import simulate
from simulator.telemetry import write_run
from simulator.workloads import workload


def end_to_end(
    duration: float, engine: str, seed: int, landing: Path, tag: str
) -> dict[str, float]:
    topology, arrivals = workload("clickstream", duration=duration, seed=seed)
    started = time.perf_counter()
    cpu_started = time.process_time()
    result = simulate(topology, arrivals, "stimulus", np.random.default_rng(seed), engine=engine)
    cpu = time.process_time() - cpu_started
    simulated = time.perf_counter()
    write_run(result.telemetry, topology, landing, tag)
    finished = time.perf_counter()
    return {
        "executions": result.trace.executions,
        "seconds": finished - started,
        "simulate_seconds": simulated - started,
        "simulate_cpu_seconds": cpu,
        "write_seconds": finished - simulated,
    }


def cold_compile_seconds() -> float:
    """Compile time without the on-disk cache (a fresh cache folder, in a subprocess)."""
    with tempfile.TemporaryDirectory() as cache:
        done = subprocess.run(
            [sys.executable, "-c", "from simulator.fast import warm_up; print(warm_up())"],
            env={**os.environ, "NUMBA_CACHE_DIR": cache},
            capture_output=True,
            text=True,
            check=True,
        )
    return float(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of arrivals (fast)")
    parser.add_argument("--reference-duration", type=float, default=20.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    cold = cold_compile_seconds()
    compile_seconds = warm_up()
    with tempfile.TemporaryDirectory() as folder:
        landing = Path(folder)
        fast = [
            end_to_end(args.duration, "fast", k, landing, f"fast{k}") for k in range(args.repeat)
        ]
        reference = [end_to_end(args.reference_duration, "reference", 1, landing, "reference")]
    rate = [r["executions"] / r["seconds"] for r in fast]
    engine_rate = [r["executions"] / r["simulate_seconds"] for r in fast]
    ref_rate = reference[0]["executions"] / reference[0]["seconds"]
    out: dict[str, Any] = {
        "benchmark": "simulator",
        "workload": "clickstream",
        "policy": "stimulus",
        "python": platform.python_version(),
        "load_average_1min": os.getloadavg()[0],
        "numba_compile_seconds_cold": cold,
        "numba_cache_load_seconds": compile_seconds,
        "fast": {
            "duration": args.duration,
            "executions": [r["executions"] for r in fast],
            "executions_per_second_median": statistics.median(rate),
            "engine_and_tables_per_second_median": statistics.median(engine_rate),
            "write_seconds_median": statistics.median(r["write_seconds"] for r in fast),
            "simulate_cpu_seconds": [r["simulate_cpu_seconds"] for r in fast],
            "simulate_cpu_seconds_median": statistics.median(
                r["simulate_cpu_seconds"] for r in fast
            ),
            "seconds": [r["seconds"] for r in fast],
        },
        "reference_heapq": {
            "duration": args.reference_duration,
            "executions": reference[0]["executions"],
            "executions_per_second": ref_rate,
            "simulate_cpu_seconds": reference[0]["simulate_cpu_seconds"],
        },
        "speedup_over_reference": statistics.median(rate) / ref_rate,
        "target_executions_per_second": 1_000_000,
    }
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(
            f"fast: {out['fast']['executions_per_second_median']:,.0f} executions/s end to end, "
            f"simulation {out['fast']['simulate_cpu_seconds_median']:.2f} s CPU "
            f"({args.duration:g} s of arrivals); "
            f"reference heapq: {ref_rate:,.0f}/s; compile {cold:.1f} s cold, "
            f"{compile_seconds:.2f} s from the cache"
        )


if __name__ == "__main__":
    main()
