"""Benchmark: page load and interaction times, measured server-side, idle and while ingesting.

A store holds two runs of ``clickstream-5q`` with 3600 subintervals, 70 operators and 13
nodes (``fill_store.fill``). The dashboard is served as ``mace serve`` serves it
(waitress, ``SERVER_THREADS`` threads, this process), and headless Chromium uses it:
every interaction goes through Dash's renderer (``dash_clientside.set_props``, as a click
or a choice does), so the callbacks and their bodies are exactly the browser's. A wrapper
around the callback endpoint records each callback's start and end. An interaction's
time is from the first callback it fired starting to the last one ending, once the page
is quiet again (``median_s``: what the user waits for, with the browser's drawing between
the callbacks of a chain), and the time in which at least one of its callbacks ran on the
server (``median_busy_s``: the server's own share).

Measured: Overview first paint (every callback fired on load), estimator switch, run
switch, node switch on Nodes, capacity change and capacity validation (a refused value)
on What-if. Each ``--repeats`` times, idle, then again while a live ingestion runs in the
same process: ``mace demo``'s live simulator writing a landing folder and the ingestion
scheduler passing it through local Spark every 2 s, into the same store. Each busy
interaction says which share of its time a Spark pass was running. The reference timed
in the same run is the idle phase. Prints JSON (medians and maxima), with each
interaction's time per callback function (``by_callback``: calls, wall and CPU).
``--estimator`` opens every page with that estimator (default Mace, or ``auto``; the
estimator switch goes to path-aware and back to it); ``--idle-only`` leaves out the phase
while ingesting.

    .venv/bin/python benchmarks/bench_interactions.py --json [--repeats 5] [--estimator origin]
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import functools
import json
import os
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import ingest.job
from benchmarks.fill_store import fill
from dashboard.app import create_app
from dashboard.nodes import ids as nodes_ids
from dashboard.shell import ids as shell_ids
from dashboard.shell.security import CALLBACK_PATH
from dashboard.whatif import ids as whatif_ids
from estimator.auto import AUTO
from estimator.pathaware import ESTIMATORS
from storage.db import connect
from storage.reads import list_runs

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
QUIET = 1.5  # seconds without a callback: the interaction is over


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Call(NamedTuple):
    """One callback request the server answered."""

    start: float  # perf_counter
    end: float
    output: str  # the request's output id (Dash's callback key)
    cpu: float  # the request thread's CPU time
    name: str  # the callback function's name
    profile: cProfile.Profile | None  # its CPU profile (``Recorder(profile=True)``)


class Recorder:
    """Start, end and CPU time of every callback request the server answers, and with
    ``profile`` a CPU profile of each (``cProfile`` on the request thread's CPU clock,
    so that other processes' load does not show in it)."""

    def __init__(self, profile: bool = False) -> None:
        self.calls: list[Call] = []
        self.in_flight = 0
        self.last = time.perf_counter()
        self.profile = profile
        self._lock = threading.Lock()

    def wrap(self, app: Any) -> None:
        server = app.server
        endpoint = next(
            rule.endpoint
            for rule in server.url_map.iter_rules()
            if rule.rule.endswith(CALLBACK_PATH)
        )
        dispatch = server.view_functions[endpoint]

        def name_of(output: str) -> str:
            function = app.callback_map.get(output, {}).get("callback")
            return getattr(function, "__name__", output[:40])

        @functools.wraps(dispatch)
        def timed(*args: Any, **kwargs: Any) -> Any:
            import flask

            output = str((flask.request.get_json(silent=True) or {}).get("output", "?"))
            if "cacheKey" in flask.request.args:
                # a poll of a background job started earlier (the Nodes page's hosts
                # chart): not caused by the interaction being timed
                return dispatch(*args, **kwargs)
            with self._lock:
                self.in_flight += 1
            profile = cProfile.Profile(time.thread_time) if self.profile else None
            start, cpu = time.perf_counter(), time.thread_time()
            try:
                if profile is None:
                    return dispatch(*args, **kwargs)
                return profile.runcall(dispatch, *args, **kwargs)
            finally:
                end = time.perf_counter()
                call = Call(start, end, output, time.thread_time() - cpu, name_of(output), profile)
                with self._lock:
                    self.in_flight -= 1
                    self.last = end
                    self.calls.append(call)

        server.view_functions[endpoint] = timed

    def measure(self, act: Callable[[], None], timeout: float = 120.0) -> dict[str, Any]:
        """Do ``act`` and wait until the page is quiet; the callbacks it caused."""
        mark = len(self.calls)
        begun = time.perf_counter()
        act()
        deadline = begun + timeout
        while time.perf_counter() < deadline:
            time.sleep(0.1)
            with self._lock:
                quiet = self.in_flight == 0 and time.perf_counter() - self.last > QUIET
                fired = len(self.calls) > mark
            if quiet and (fired or time.perf_counter() - begun > 5):
                break  # over (or it fired nothing at all)
        calls = self.calls[mark:]
        if not calls:
            return {"callbacks": 0, "server_s": None, "calls": []}
        slowest = max(calls, key=lambda c: c.end - c.start)
        return {
            "callbacks": len(calls),
            "server_s": max(c.end for c in calls) - min(c.start for c in calls),
            "busy_s": busy_time([(c.start, c.end) for c in calls]),
            "cpu_s": sum(c.cpu for c in calls),  # the request threads' own CPU time
            "slowest_callback_s": slowest.end - slowest.start,
            "slowest": slowest.name,
            "window": (min(c.start for c in calls), max(c.end for c in calls)),
            "calls": calls,
        }


def busy_time(spans: list[tuple[float, float]]) -> float:
    """How long at least one of ``spans`` was running: the server's own time in an
    interaction, without the gaps in which the browser drew an answer and sent the next
    request of a chain."""
    total, reach = 0.0, -float("inf")
    for start, end in sorted(spans):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


class Lateness:
    """How late a thread that sleeps 10 ms at a time wakes up: seconds-long lateness
    means something held the GIL that long (CPU contention alone costs milliseconds)."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            start = time.perf_counter()
            time.sleep(0.01)
            self.samples.append(time.perf_counter() - start - 0.01)

    def take(self) -> dict[str, float]:
        """Median, p99 and maximum since the last take."""
        samples, self.samples = sorted(self.samples), []
        if not samples:
            return {}
        return {
            "median_s": statistics.median(samples),
            "p99_s": samples[int(0.99 * (len(samples) - 1))],
            "max_s": samples[-1],
        }


class SparkWatch:
    """When local Spark computed an ingestion pass (wraps ``ingest.job.compute_run``)."""

    def __init__(self) -> None:
        self.spans: list[tuple[float, float]] = []
        self.running_since: float | None = None
        self.passes_done = 0

    def install(self) -> None:
        compute = ingest.job.compute_run

        @functools.wraps(compute)
        def compute_run(*args: Any, **kwargs: Any) -> Any:
            self.running_since = time.perf_counter()
            try:
                return compute(*args, **kwargs)
            finally:
                self.spans.append((self.running_since, time.perf_counter()))
                self.running_since = None
                self.passes_done += 1

        ingest.job.compute_run = compute_run

    def share(self, window: tuple[float, float]) -> float:
        """The share of ``window`` during which a pass was computing."""
        start, end = window
        spans = [*self.spans]
        if self.running_since is not None:
            spans.append((self.running_since, time.perf_counter()))
        covered = sum(max(0.0, min(end, b) - max(start, a)) for a, b in spans)
        return covered / (end - start) if end > start else 1.0


@contextmanager
def browser() -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1500,1000"):
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    try:
        yield driver
    finally:
        driver.quit()


def set_props(driver: Any, component: str, props: dict[str, Any]) -> Callable[[], None]:
    return lambda: driver.execute_script(
        "window.dash_clientside.set_props(arguments[0], arguments[1]);", component, props
    )


def fill_in(driver: Any, component: str, value: str) -> None:
    """Set a form field that only the next click reads (it fires no callback)."""
    set_props(driver, component, {"value": value})()
    time.sleep(0.2)


def suite(
    driver: Any,
    base: str,
    recorder: Recorder,
    runs: tuple[str, str],
    nodes: list[str],
    repeats: int,
    estimator: str = "mace",
) -> dict[str, list[dict[str, Any]]]:
    """Every measured interaction, ``repeats`` times each, the pages showing ``estimator``
    (the estimator switch goes to path-aware and back)."""
    first, second = runs
    out: dict[str, list[dict[str, Any]]] = {}

    def record(name: str, act: Callable[[], None]) -> None:
        out.setdefault(name, []).append(recorder.measure(act))

    def visit(path: str) -> Callable[[], None]:
        return lambda: driver.get(f"{base}{path}?run={first}&estimator={estimator}")

    for k in range(repeats):
        record("overview_first_paint", visit("/"))
        record("estimator_switch", set_props(driver, shell_ids.ESTIMATOR, {"value": "path"}))
        record("estimator_switch", set_props(driver, shell_ids.ESTIMATOR, {"value": estimator}))
        record("run_switch", set_props(driver, shell_ids.RUN, {"value": second}))
        record("run_switch", set_props(driver, shell_ids.RUN, {"value": first}))
        record("nodes_first_paint", visit("/nodes"))
        record(
            "node_switch",
            set_props(driver, nodes_ids.ND_NODE, {"value": nodes[(2 * k) % len(nodes)]}),
        )
        record(
            "node_switch",
            set_props(driver, nodes_ids.ND_NODE, {"value": nodes[(2 * k + 1) % len(nodes)]}),
        )
        record("whatif_first_paint", visit("/whatif"))
        fill_in(driver, whatif_ids.WI_CAP_NODE, nodes[k % len(nodes)])
        fill_in(driver, whatif_ids.WI_CAP_VALUE, f"{1.2 + 0.1 * k:.1f}")
        record("capacity_change", set_props(driver, whatif_ids.WI_SET_CAP, {"n_clicks": 2 * k + 1}))
        fill_in(driver, whatif_ids.WI_CAP_VALUE, "-1")
        record(
            "capacity_validation", set_props(driver, whatif_ids.WI_SET_CAP, {"n_clicks": 2 * k + 2})
        )
    return out


def by_callback(runs: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Where an interaction's time goes: per callback function, over the repeats, the
    median number of calls and the medians of their summed wall and CPU time (s),
    slowest first."""
    names = dict.fromkeys(c.name for r in runs for c in r["calls"])
    out = {}
    for name in names:
        mine = [[c for c in r["calls"] if c.name == name] for r in runs]
        out[name] = {
            "calls": statistics.median(len(m) for m in mine),
            "wall_s": statistics.median(sum(c.end - c.start for c in m) for m in mine),
            "cpu_s": statistics.median(sum(c.cpu for c in m) for m in mine),
        }
    return dict(sorted(out.items(), key=lambda item: -item[1]["wall_s"]))


def summary(samples: dict[str, list[dict[str, Any]]], spark: SparkWatch | None) -> dict[str, Any]:
    result = {}
    for name, runs in samples.items():
        times = [r["server_s"] for r in runs if r["server_s"] is not None]
        entry: dict[str, Any] = {
            "n": len(times),
            "median_s": statistics.median(times) if times else None,
            "median_busy_s": statistics.median(r["busy_s"] for r in runs if "busy_s" in r),
            "median_cpu_s": statistics.median(r["cpu_s"] for r in runs if "cpu_s" in r),
            "max_s": max(times) if times else None,
            "callbacks": statistics.median(r["callbacks"] for r in runs),
            "slowest_callback": max(runs, key=lambda r: r.get("slowest_callback_s") or 0).get(
                "slowest"
            ),
            "by_callback": by_callback(runs),
        }
        if spark is not None:
            shares = [spark.share(r["window"]) for r in runs if "window" in r]
            entry["spark_running_share"] = statistics.median(shares) if shares else None
        result[name] = entry
    return result


def main(argv: list[str] | None = None) -> int:
    from mace.demo_command import start_simulator
    from mace.serve_command import SERVER_THREADS, start_ingestion, start_server

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--intervals", type=int, default=3600)
    parser.add_argument("--nodes", type=int, default=13)
    parser.add_argument(
        "--estimator",
        default="mace",
        choices=[AUTO, *sorted(ESTIMATORS)],
        help="the top bar's estimator every page opens with (auto: the one the run's size allows)",
    )
    parser.add_argument(
        "--idle-only", action="store_true", help="skip the phase while ingesting (no Spark)"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if not (1 <= args.repeats <= 50):
        parser.error("--repeats must be in 1..50")
    recorder, spark, lateness = Recorder(), SparkWatch(), Lateness()
    spark.install()
    threading.Thread(target=lateness.run, name="lateness", daemon=True).start()
    load = [os.getloadavg()[0]]
    with (
        tempfile.TemporaryDirectory(prefix="mace-bench-ui-") as tmp,
        ExitStack() as stack,
        contextlib.redirect_stdout(sys.stderr),  # the server's and the demo's own lines
    ):
        work = Path(tmp)
        db = work / "store.duckdb"
        filled = fill(
            db, 2, args.intervals, args.nodes, 0, now=datetime.now(UTC).replace(tzinfo=None)
        )
        con = connect(db)
        runs = tuple(r.run_id for r in list_runs(con))
        con.close()
        app = create_app(db, refresh_seconds=3600)  # no periodic refresh in the way
        recorder.wrap(app)
        port = free_port()
        stack.callback(start_server(app, "127.0.0.1", port))
        base = f"http://127.0.0.1:{port}"
        driver = stack.enter_context(browser())
        nodes = [f"n{k + 1}" for k in range(args.nodes)]
        pair = (runs[0], runs[1])
        suite(driver, base, recorder, pair, nodes, 1, args.estimator)  # warm: compiled kernels
        lateness.take()
        idle = suite(driver, base, recorder, pair, nodes, args.repeats, args.estimator)
        late_idle = lateness.take()
        load.append(os.getloadavg()[0])
        result: dict[str, Any] = {
            "store": {k: filled[k] for k in ("intervals", "operators", "nodes", "runs")},
            "estimator": args.estimator,
            "server_threads": SERVER_THREADS,
            "repeats": args.repeats,
            "idle": summary(idle, None),
            "wake_up_lateness": {"idle": late_idle},
            "load_average": load,
            "cpus": os.cpu_count(),
        }
        if not args.idle_only:
            landing = work / "landing"
            landing.mkdir()
            stack.callback(start_simulator(landing, "live", 0))
            scheduler = start_ingestion(landing, db, 2.0, prune_ingested=True)
            stack.callback(scheduler.shutdown, wait=True)
            deadline = time.monotonic() + 600
            while spark.passes_done < 1 and time.monotonic() < deadline:  # Spark's start-up
                time.sleep(1)
            lateness.take()
            busy = suite(driver, base, recorder, pair, nodes, args.repeats, args.estimator)
            result["wake_up_lateness"]["ingesting"] = lateness.take()
            load.append(os.getloadavg()[0])
            result["ingesting"] = summary(busy, spark)
            result["spark_passes"] = spark.passes_done
    print(json.dumps(result, indent=None if args.json else 2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
