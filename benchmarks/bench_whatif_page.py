"""Benchmark: the What-if page callback by callback, server-side.

A store holds one run of ``clickstream-5q`` (3600 subintervals, 70 operators, 13 nodes;
``fill_store.fill``). It is served as ``mace serve`` serves it and headless Chromium
drives it, exactly as :mod:`benchmarks.bench_interactions` does (same recorder), idle.
Each repeat opens the page (first paint: every callback fired on load, with the session's
scenario of the previous repeats), sets a node's capacity (capacity change) and tries a
refused capacity (validation).

For each interaction it prints the number of callbacks fired, the server time (first
callback starting to the last one ending) and the request threads' CPU time (medians
over ``--repeats``), then per callback function: calls, wall and CPU (``by_callback``),
and the order the callbacks ran in on each repeat (``chains``: name, start offset,
wall and CPU in ms). With ``--profile`` each callback runs under ``cProfile`` on its
thread's CPU clock (robust to other processes' load) and the functions with the most
cumulative CPU time of each interaction are listed (``profile``; profiling slows the
callbacks, so the times of such a run are not comparable with an unprofiled one). The
reference timed in the same run is the capacity validation (a refused value: one
callback, no evaluation).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_whatif_page.py [--repeats 3] [--profile]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import pstats
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.bench_interactions import (
    Recorder,
    browser,
    by_callback,
    fill_in,
    free_port,
    set_props,
)
from benchmarks.fill_store import fill
from dashboard.app import create_app
from dashboard.whatif import ids as whatif_ids
from storage.db import connect
from storage.reads import list_runs


def chain(run: dict[str, Any]) -> list[list[Any]]:
    """The callbacks of one interaction in the order they started: name, start offset,
    wall and CPU (ms)."""
    if not run["calls"]:
        return []
    begun = min(c.start for c in run["calls"])
    return [
        [
            c.name,
            round(1000 * (c.start - begun)),
            round(1000 * (c.end - c.start)),
            round(1000 * c.cpu),
        ]
        for c in sorted(run["calls"], key=lambda c: c.start)
    ]


def top_functions(runs: list[dict[str, Any]], limit: int) -> list[str]:
    """The functions with the most cumulative CPU time over ``runs``' profiled callbacks."""
    profiles = [c.profile for r in runs for c in r["calls"] if c.profile is not None]
    if not profiles:
        return []
    stats = pstats.Stats(profiles[0], stream=io.StringIO())
    for profile in profiles[1:]:
        stats.add(profile)
    stream = io.StringIO()
    stats.stream = stream  # type: ignore[attr-defined]
    stats.sort_stats("cumulative").print_stats(limit)
    rows = stream.getvalue().splitlines()
    start = next((k for k, line in enumerate(rows) if line.lstrip().startswith("ncalls")), 0)
    return [line.rstrip() for line in rows[start:] if line.strip()]


def summary(runs: list[dict[str, Any]], profile_lines: int) -> dict[str, Any]:
    times = [r["server_s"] for r in runs if r["server_s"] is not None]
    entry: dict[str, Any] = {
        "n": len(times),
        "callbacks": statistics.median(r["callbacks"] for r in runs),
        "median_s": statistics.median(times) if times else None,
        "max_s": max(times) if times else None,
        "median_cpu_s": statistics.median(r.get("cpu_s", 0.0) for r in runs),
        "by_callback": by_callback(runs),
        "chains": [chain(r) for r in runs],
    }
    if profile_lines:
        entry["profile"] = top_functions(runs, profile_lines)
    return entry


def main(argv: list[str] | None = None) -> int:
    from mace.serve_command import start_server

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--intervals", type=int, default=3600)
    parser.add_argument("--nodes", type=int, default=13)
    parser.add_argument("--profile", action="store_true", help="cProfile every callback")
    parser.add_argument("--top", type=int, default=25, help="profile lines per interaction")
    parser.add_argument("--json", action="store_true", help="one line of JSON")
    args = parser.parse_args(argv)
    if not (1 <= args.repeats <= 50):
        parser.error("--repeats must be in 1..50")
    recorder = Recorder(profile=args.profile)
    with (
        tempfile.TemporaryDirectory(prefix="mace-bench-whatif-") as tmp,
        ExitStack() as stack,
        contextlib.redirect_stdout(sys.stderr),  # the server's own lines
    ):
        db = Path(tmp) / "store.duckdb"
        fill(db, 1, args.intervals, args.nodes, 0, now=datetime.now(UTC).replace(tzinfo=None))
        con = connect(db)
        run_id = list_runs(con)[0].run_id
        con.close()
        app = create_app(db, refresh_seconds=3600)  # no periodic refresh in the way
        recorder.wrap(app)
        port = free_port()
        stack.callback(start_server(app, "127.0.0.1", port))
        driver = stack.enter_context(browser())
        url = f"http://127.0.0.1:{port}/whatif?run={run_id}&estimator=mace"
        nodes = [f"n{k + 1}" for k in range(args.nodes)]
        samples: dict[str, list[dict[str, Any]]] = {}
        clicks = 0
        for k in range(args.repeats + 1):  # the first pass warms caches and kernels
            results = {}
            results["whatif_first_paint"] = recorder.measure(lambda: driver.get(url))
            fill_in(driver, whatif_ids.WI_CAP_NODE, nodes[k % len(nodes)])
            fill_in(driver, whatif_ids.WI_CAP_VALUE, f"{1.2 + 0.1 * k:.1f}")
            clicks += 1
            results["capacity_change"] = recorder.measure(
                set_props(driver, whatif_ids.WI_SET_CAP, {"n_clicks": clicks})
            )
            fill_in(driver, whatif_ids.WI_CAP_VALUE, "-1")
            clicks += 1
            results["capacity_validation"] = recorder.measure(
                set_props(driver, whatif_ids.WI_SET_CAP, {"n_clicks": clicks})
            )
            if k:
                for name, run in results.items():
                    samples.setdefault(name, []).append(run)
            time.sleep(0.5)
        lines = args.top if args.profile else 0
        result = {
            "store": {"intervals": args.intervals, "nodes": args.nodes, "run": run_id},
            "repeats": args.repeats,
            "profiled": args.profile,
            **{name: summary(runs, lines) for name, runs in samples.items()},
        }
    print(json.dumps(result, indent=None if args.json else 2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
