"""The demo's live simulator against Mace, its lower bound, without Spark.

Runs ``simulator.live.run_live`` on the demo's workload for SECONDS on a fake clock
(a flush every 2 s of simulated time), then compares each query's measured max latency
per subinterval (from the written outputs) with the query's Mace (from the written
executions' CPU per node and stimulus subinterval), leaving out the last 40 s (their
events may still be in flight). Prints one line.

    .venv/bin/python benchmarks/live_lower_bound.py [SECONDS]
"""

from __future__ import annotations

import sys
import tempfile
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from mace.demo_command import demo_workload
from simulator.live import run_live

ORIGIN = 1_700_000_000.0
IN_FLIGHT = 40  # subintervals at the end left out
BELOW = 0.05  # seconds: a shortfall larger than this counts


def live_run(seconds: float, folder: Path) -> Path:
    topology, model = demo_workload(0)
    now = [ORIGIN]
    stop = threading.Event()

    def tick(index: int, written: dict[str, int]) -> None:
        now[0] += 2.0
        if now[0] > ORIGIN + seconds:
            stop.set()

    return run_live(
        topology, model, folder, "r", stop, seed=0, flush_every=0.001,
        clock=lambda: now[0], on_flush=tick,
    )  # fmt: skip


def mace_per_node(executions: pd.DataFrame, capacity: dict[str, float], n: int) -> dict:
    """CE/C per node and stimulus subinterval (Lindley's recursion, w = 1 s)."""
    out = {}
    for node, rows in executions.groupby("node"):
        load = np.bincount(rows.p.clip(0), weights=rows.cpu_seconds, minlength=n)[:n]
        backlog, series = 0.0, np.zeros(n)
        for k, work in enumerate(load):
            backlog = max(0.0, backlog + work - capacity[str(node)])
            series[k] = backlog / capacity[str(node)]
        out[node] = series
    return out


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 300.0
    topology, _ = demo_workload(0)
    run_dir = live_run(seconds, Path(tempfile.mkdtemp()))
    executions = pq.read_table(run_dir / "executions").to_pandas()
    outputs = pq.read_table(run_dir / "outputs").to_pandas()
    n = int(seconds) - IN_FLIGHT
    for frame in (executions, outputs):
        frame["p"] = np.floor(frame.stimulus_time - ORIGIN).astype(int)
    outputs["latency"] = outputs.egress_time - outputs.stimulus_time
    ce = mace_per_node(executions, dict(topology.capacity_by_node), n + IN_FLIGHT)
    below, worst, checked = 0, 0.0, 0
    for query in topology.queries:
        nodes = {topology.placement[o.id] for o in topology.operators if o.query == query}
        mace = np.max([ce[node] for node in nodes], axis=0)
        measured = outputs[outputs["query"] == query].groupby("p").latency.max()
        measured = measured[(measured.index >= 0) & (measured.index < n)]
        shortfall = mace[measured.index.to_numpy()] - measured.to_numpy()
        checked += len(measured)
        below += int((shortfall > BELOW).sum())
        worst = max(worst, float(shortfall.max()))
    print(
        f"{seconds:.0f} s live, {checked} (query, subinterval) pairs with outputs: measured "
        f"below the query's Mace by > {BELOW * 1000:.0f} ms in {below}, worst by {worst:.3f} s; "
        f"max latency {outputs.latency.max():.2f} s"
    )


if __name__ == "__main__":
    main()
