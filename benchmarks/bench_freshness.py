"""Benchmark: data freshness in ``mace demo`` (simulator engine), from an event to the Overview.

Runs ``mace demo --duration D`` in this process (the simulator, the scheduled Spark
ingestion and the dashboard, exactly as the command does) and, from a thread, reads the
store the way the Overview does every ``--poll`` seconds: each subinterval's source
arrival count. A subinterval is *visible* once the store holds its final count; its
freshness is that moment minus the wall-clock end of the subinterval (the time of its
last possible event; an earlier event of it waited up to one subinterval longer).

To say where the time goes, the simulator's flushes and each ingestion pass (its Spark
part: ``compute_run``; the rest: discovery and the store write) are timed through thin
wrappers. For each subinterval: flush wait (end -> the flush that wrote its last
records), schedule wait (that flush -> the start of the pass that read it), Spark, store
write and polling, for the subintervals that ended after the first pass (which
includes Spark's start-up). Prints JSON (medians, p50/p95).

    .venv/bin/python benchmarks/bench_freshness.py --json [--duration 300]
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import functools
import itertools
import json
import math
import os
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import ingest.job
import ingest.scheduler
import simulator.live
import simulator.run
from mace import cli
from storage.db import connect
from storage.reads import list_runs, source_arrivals_frame


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Timeline:
    """Wall-clock times of flushes and ingestion passes, recorded by wrappers."""

    def __init__(self) -> None:
        self.flushes: list[float] = []
        self.passes: list[dict[str, float]] = []  # start, spark seconds, end, rows
        self.segments: list[float] = []  # seconds to simulate each segment
        self.final_start = math.inf  # when the demo's final ingestion (after the stop) began
        self._spark = threading.local()

    def instrument(self) -> None:
        live, segment, once, compute = (
            simulator.live.run_live,
            simulator.run.Simulation.advance,
            ingest.job.ingest_once,
            ingest.job.compute_run,
        )

        @functools.wraps(segment)
        def advance(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return segment(*args, **kwargs)
            finally:
                self.segments.append(time.perf_counter() - start)

        @functools.wraps(live)
        def run_live(*args: Any, **kwargs: Any) -> Any:
            kwargs["on_flush"] = lambda *_: self.flushes.append(time.time())
            return live(*args, **kwargs)

        @functools.wraps(compute)
        def compute_run(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return compute(*args, **kwargs)
            finally:
                self._spark.seconds = getattr(self._spark, "seconds", 0.0) + (
                    time.perf_counter() - start
                )

        @functools.wraps(once)
        def ingest_once(*args: Any, **kwargs: Any) -> Any:
            self._spark.seconds = 0.0
            start = time.time()
            summary = once(*args, **kwargs)
            end = time.time()
            if summary.files:
                self.passes.append(
                    {
                        "start": start,
                        "spark": self._spark.seconds,
                        "end": end,
                        "rows": summary.rows_read,
                    }
                )
            return summary

        @functools.wraps(once)
        def final_ingestion(*args: Any, **kwargs: Any) -> Any:
            self.final_start = min(self.final_start, time.time())
            return once(*args, **kwargs)

        simulator.live.run_live = run_live
        ingest.job.ingest_once = final_ingestion  # the demo's final pass imports it late
        simulator.run.Simulation.advance = advance  # type: ignore[method-assign]
        ingest.job.compute_run = compute_run
        ingest.scheduler.ingest_once = ingest_once  # the scheduler's own reference


def poll_store(db: Path, every: float, stop: threading.Event, seen: dict[int, list]) -> dict:
    """Until ``stop``: each subinterval's arrival count and when it last changed."""
    while not db.exists() and not stop.is_set():
        time.sleep(every)
    run: dict[str, Any] = {}
    con = None
    while not stop.is_set():
        try:
            con = con or connect(db)
            if not run:
                runs = list_runs(con)
                if runs:
                    info = runs[0]
                    run.update(id=info.run_id, origin=info.origin, w=info.subinterval)
            if run:
                low = max((k for k in seen), default=0) - 30
                frame = source_arrivals_frame(con, run["id"], start=max(low, 0))
                now = time.time()
                totals = frame.groupby("interval")["events"].sum()
                for interval, events in zip(totals.index.tolist(), totals.tolist(), strict=True):
                    if seen.get(interval, [None])[0] != events:
                        seen[interval] = [events, now]
        except Exception as exc:  # the store is being created or migrated: try again
            print(f"freshness: poll failed: {exc}", file=sys.stderr)
        stop.wait(every)
    if con is not None:
        con.close()
    return run


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summarise(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    return {
        "p50_s": statistics.median(values),
        "p95_s": percentile(values, 0.95),
        "max_s": max(values),
    }


def analyse(
    seen: dict[int, list], run: dict[str, Any], timeline: Timeline, stopped_at: float
) -> dict[str, Any]:
    passes = sorted(timeline.passes, key=lambda p: p["end"])
    ends = [p["end"] for p in passes]
    flushes = sorted(timeline.flushes)
    steady: dict[str, list[float]] = {
        k: [] for k in ("freshness", "flush_wait", "schedule_wait", "spark", "store", "poll")
    }
    if not ends:
        return {"passes": 0}
    every: list[float] = []  # every subinterval that ended before the stop
    late = 0  # of which not visible by the stop: their age then (a lower bound) counts
    last = int((stopped_at - run["origin"]) // run["w"])
    for interval in range(last):
        end = run["origin"] + (interval + 1) * run["w"]
        visible = seen.get(interval, [None, math.inf])[1]
        if visible >= timeline.final_start:  # only the final ingestion, after the stop
            late += 1
            every.append(stopped_at - end)
            continue
        every.append(visible - end)
        if end < ends[0]:  # waited for Spark's start-up in the first pass
            continue
        steady["freshness"].append(visible - end)
        at = bisect.bisect_right(ends, visible) - 1  # the pass that made it visible
        flush_at = bisect.bisect_left(flushes, end)
        if at < 0 or flush_at >= len(flushes):
            continue
        made = passes[at]
        flush = min(flushes[flush_at], made["start"])
        steady["flush_wait"].append(flush - end)
        steady["schedule_wait"].append(made["start"] - flush)
        steady["spark"].append(made["spark"])
        steady["store"].append(made["end"] - made["start"] - made["spark"])
        steady["poll"].append(visible - made["end"])
    durations = [p["end"] - p["start"] for p in passes]
    return {
        "subinterval_s": run["w"],
        "freshness_all": {"subintervals": len(every), "not_visible_at_stop": late}
        | summarise(every),
        "first_pass_done_after_s": ends[0] - run["origin"],
        "freshness_after_first_pass": {"subintervals": len(steady["freshness"])}
        | summarise(steady["freshness"]),
        "where_the_time_goes_median_s": {
            k: statistics.median(v) for k, v in steady.items() if k != "freshness" and v
        },
        "where_the_time_goes_p95_s": {
            k: percentile(v, 0.95) for k, v in steady.items() if k != "freshness" and v
        },
        "passes": len(passes),
        "pass_seconds": summarise(durations),
        "pass_spark_seconds": summarise([p["spark"] for p in passes]),
        "pass_rows_per_s": summarise([p["rows"] / (p["end"] - p["start"]) for p in passes]),
        "flushes": len(flushes),
        "flush_gap_s": summarise([b - a for a, b in itertools.pairwise(flushes)]),
        "segment_simulation_s": summarise(timeline.segments),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=300.0)
    parser.add_argument("--poll", type=float, default=0.25, help="store poll interval (s)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--raw", type=Path, help="also write the raw timeline here (JSON)")
    args = parser.parse_args(argv)
    if not (10 <= args.duration <= 3600 and 0.05 <= args.poll <= 5):
        parser.error("--duration must be in 10..3600 s and --poll in 0.05..5 s")
    timeline = Timeline()
    timeline.instrument()
    seen: dict[int, list] = {}
    stop = threading.Event()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="mace-bench-fresh-") as tmp:
        work = Path(tmp)
        result: dict[str, Any] = {}
        db = work / "mace.duckdb"
        poller = threading.Thread(
            target=lambda: result.update(run=poll_store(db, args.poll, stop, seen)), daemon=True
        )
        poller.start()
        argv_demo = ["demo", "--duration", str(args.duration), "--workdir", str(work)]
        argv_demo += ["--port", str(free_port()), "--seed", str(args.seed)]
        command_start = time.time()
        with contextlib.redirect_stdout(sys.stderr):  # the demo's own lines
            status = cli.main(argv_demo)
        stopped_at = max(timeline.flushes, default=time.time())  # the last flush: the stop
        stop.set()
        poller.join(timeout=30)
    if status != 0 or not result.get("run"):
        print(f"freshness: the demo failed (status {status})", file=sys.stderr)
        return 1
    report = analyse(seen, result["run"], timeline, stopped_at)
    # what a newcomer waits for after typing the command: the first figures
    visible = [at for _, at in seen.values() if math.isfinite(at)]
    report["after_the_command_s"] = {
        "run_origin": result["run"]["origin"] - command_start,
        "first_pass_done": min((p["end"] for p in timeline.passes), default=math.nan)
        - command_start,
        "first_subinterval_visible": min(visible, default=math.nan) - command_start,
    }
    if args.raw is not None:  # to analyse again without another five-minute run
        raw = {
            "run": result["run"],
            "stopped_at": stopped_at,
            "seen": seen,
            "flushes": timeline.flushes,
            "passes": timeline.passes,
            "final_start": timeline.final_start,
        }
        args.raw.write_text(json.dumps(raw))
    report.update(
        duration_s=args.duration,
        poll_s=args.poll,
        cpus=os.cpu_count(),
        load_before=load_before,
        load_after=os.getloadavg()[0],
    )
    print(json.dumps(report, indent=None if args.json else 2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
