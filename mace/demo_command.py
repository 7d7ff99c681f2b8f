"""``mace demo``: a live engine, scheduled ingestion and the dashboard, with zero configuration.

An engine is a function ``start(landing, run_id, seed) -> stop`` that starts a live
source writing the landing record sets of docs/design.md, "Raw telemetry" into
``landing/run_id`` and returns a function that stops it once the records due
are written. ``sim`` is the built-in simulator; ``flink`` a real PyFlink job on a local
MiniCluster (``connectors.flink``), followed over REST by the collector; ``flink-sql``
a Flink SQL job that writes its own ``outputs/``, its counters scraped by a local
Prometheus server and read back by the Prometheus collector (``connectors.prometheus``).

The control path of the What-if page's "Apply to the running system" (``sim`` only):
the page stores a placement request in the database (one process, one DuckDB
instance: the dashboard, the ingestion and this poll share it); the simulator
polls the pending requests of its run at every flush, applies each one (writing
``topology-<epoch>.yaml``, which the next ingestion stores as a new placement
version) and the request is marked applied or refused.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from estimator.errors import MaceError
from mace.errors import UsageError
from mace.serve_command import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    add_allowed_host,
    check_port,
    open_app,
    sigterm_as_interrupt,
    start_ingestion,
    start_server,
    wait_until_stopped,
)

DEMO_WORKLOAD = "clickstream-5q"
DEMO_INGEST_EVERY = 2.0
DEMO_NODES = 5
DEMO_FLUSH_EVERY = 2.0
DEMO_SPEED = 0.1
"""The demo's machines run at a tenth of the workload's node capacity, and its sources at
a tenth of the rates: the same utilisation and the same backlogs in seconds (CE/C), from
a tenth of the events (about 2,000 a second and 15,000 execution records instead of
21,000 and 145,000). At full rate, local Spark on two cores could not ingest the records
as fast as the simulator wrote them, and the newest data on the Overview fell minutes
behind (docs/speed.md, "Data freshness in mace demo")."""
SOURCE_STOP_TIMEOUT = 60.0

if TYPE_CHECKING:
    from estimator.model import Topology
    from simulator.live import PlacementRequest
    from simulator.workloads import ArrivalModel

Stop = Callable[[], None]
Engine = Callable[[Path, str, int], Stop]


def register(subparsers: argparse._SubParsersAction) -> None:
    demo = subparsers.add_parser(
        "demo",
        help="run an engine live, ingest it every few seconds and serve the dashboard",
        description="Zero-configuration demo: a live engine (the built-in simulator running "
        f"{DEMO_WORKLOAD}) writes telemetry into a landing folder, ingestion runs every "
        f"{DEMO_INGEST_EVERY:g} s into a DuckDB file and the dashboard is served. With "
        "--duration, the demo stops after that many seconds, ingests the rest and prints "
        "the `mace report` summary of the run.",
    )
    demo.add_argument(
        "--engine",
        choices=sorted(ENGINES),
        default="sim",
        help="sim: the built-in simulator (default); flink: a real PyFlink job on a local "
        "MiniCluster (creates .venv-flink on first use); flink-sql: a Flink SQL job with "
        "Flink's Prometheus reporter, a local Prometheus server (Debian package prometheus) "
        "and mace collect prometheus --follow",
    )
    demo.add_argument(
        "--workdir",
        metavar="DIR",
        help="folder for the landing folder and mace.duckdb, kept at exit (default: a new "
        "temporary folder, removed at exit)",
    )
    demo.add_argument(
        "--duration",
        type=float,
        metavar="SECONDS",
        help="stop after SECONDS, ingest the rest and print the report (default: until Ctrl+C)",
    )
    demo.add_argument(
        "--seed", type=int, default=0, help="random seed of the load (same seed, same load)"
    )
    demo.add_argument("--host", default=DEFAULT_HOST, help=argparse.SUPPRESS)
    demo.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"dashboard port (default {DEFAULT_PORT})"
    )
    add_allowed_host(demo)
    demo.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    check_port(args.port)
    if args.duration is not None and not args.duration > 0:
        raise UsageError(f"--duration must be a positive number of seconds, got {args.duration}")
    start_engine = ENGINES[args.engine]
    if start_engine is start_flink_sql:
        from connectors.prometheus.server import prometheus_missing

        problem = prometheus_missing()
        if problem is not None:
            raise UsageError(f"--engine flink-sql needs a Prometheus server: {problem}")
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="mace-demo-"))
    try:
        return _run_in(workdir, start_engine, args)
    finally:
        if not args.workdir:  # a folder of our own: remove it, however the demo ends
            shutil.rmtree(workdir, ignore_errors=True)
            print(f"demo: removed {workdir}", flush=True)


def _run_in(workdir: Path, start_engine: Engine, args: argparse.Namespace) -> int:
    landing = workdir / "landing"
    db = workdir / "mace.duckdb"
    try:
        landing.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--workdir: cannot create {landing}: {exc.strerror or exc}") from exc
    run_id = f"demo-{time.strftime('%Y%m%d-%H%M%S')}"
    kept = "kept" if args.workdir else "removed at exit"
    print(f"demo: working in {workdir} (landing folder and {db.name}; {kept})", flush=True)
    # the simulator takes placement requests from the What-if page; a Flink job cannot
    controlled = start_engine is start_simulator
    if controlled:
        start_engine = functools.partial(start_simulator, requests=placement_inbox(db, run_id))
    with sigterm_as_interrupt(), ExitStack() as running:
        app = open_app(
            db,
            DEMO_INGEST_EVERY,
            workdir / "jobs",
            live_run=run_id if controlled else None,
            bind=(args.host, args.port),
            extra_hosts=args.allowed_host,
        )
        # the server first: when its port is taken, nothing else has started
        running.callback(start_server(app, args.host, args.port))
        start_spark_first()
        running.callback(start_engine(landing, run_id, args.seed))
        # ingested landing files are deleted (the manifest remembers them): the demo's
        # disk use stays bounded however long it runs
        scheduler = start_ingestion(landing, db, DEMO_INGEST_EVERY, prune_ingested=True)
        running.callback(scheduler.shutdown, wait=True)  # a batch in progress completes
        print(f"demo: ingesting every {DEMO_INGEST_EVERY:g} s into {db}", flush=True)
        completed = wait_until_stopped(args.duration)
    if args.duration is not None and completed:
        _final_report(landing, db, run_id)
    return 0


def start_spark_first() -> None:
    """Start Spark before the engine. Otherwise the first pass starts the JVM (a minute
    or more on a busy machine) while the engine writes, and every later pass inherits
    that backlog: the newest data on the Overview stays minutes old (docs/speed.md)."""
    from ingest.session import DEFAULT_MASTER, ready_spark

    print("demo: starting Spark", flush=True)
    try:
        ready_spark(DEFAULT_MASTER)
    except MaceError as exc:  # the scheduled passes retry with back-off and say why
        print(f"demo: Spark is not ready yet: {exc}", file=sys.stderr, flush=True)
    if threading.current_thread() is threading.main_thread():
        # pyspark's own Ctrl+C handler cancels every running Spark job: the pass in
        # progress failed with a Java stack trace instead of completing (the shutdown
        # waits for it). Ctrl+C is Python's again: KeyboardInterrupt, then the cleanup.
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _final_report(landing: Path, db: Path, run_id: str) -> None:
    """Ingest what the scheduler has not yet, then print the ``mace report`` summary."""
    from estimator.auto import DEFAULT
    from ingest.job import ingest_once
    from mace.report_command import DEFAULT_TRAINING_SHARE, format_report, load_report

    print("demo: final ingestion", flush=True)
    print(ingest_once(landing, db).describe(), file=sys.stderr, flush=True)
    print(format_report(load_report(db, run_id, DEFAULT_TRAINING_SHARE, DEFAULT)), flush=True)


def placement_inbox(db: Path, run_id: str) -> Callable[[], list[PlacementRequest]]:
    """The live simulator's poll of the What-if page's placement requests for ``run_id``:
    each pending request, marked applied or refused in the database once settled."""
    from simulator.live import PlacementRequest
    from storage.placement_requests import pending_requests, settle_request

    def settle(request_id: int) -> Callable[[float | None, str | None], None]:
        def record(valid_from: float | None, problem: str | None) -> None:
            outcome = f"valid from {valid_from:.3f}" if problem is None else f"refused: {problem}"
            print(f"demo: placement request #{request_id} {outcome}", flush=True)
            try:
                with _cursor(db) as cur:
                    settle_request(cur, request_id, valid_from, problem)
            except MaceError as exc:
                print(f"demo: cannot record request #{request_id}: {exc}", file=sys.stderr)

        return record

    def poll() -> list[PlacementRequest]:
        try:
            with _cursor(db) as cur:
                pending = pending_requests(cur, run_id)
        except MaceError as exc:  # the simulation goes on; the next poll tries again
            print(f"demo: cannot read placement requests: {exc}", file=sys.stderr, flush=True)
            return []
        return [PlacementRequest(r.placement, settle(r.request_id)) for r in pending]

    return poll


@contextmanager
def _cursor(db: Path) -> Iterator[Any]:
    """A short-lived connection to the demo's database (in this process, the same DuckDB
    instance as the dashboard's and the ingestion's)."""
    from storage.db import connect

    con = connect(db)
    try:
        yield con
    finally:
        con.close()


def start_simulator(
    landing: Path,
    run_id: str,
    seed: int,
    requests: Callable[[], list[PlacementRequest]] | None = None,
) -> Stop:
    """The simulator's live mode for the demo workload, in a daemon thread; ``requests``
    is polled for placement changes (see :func:`placement_inbox`)."""
    from simulator.live import run_live

    topology, model = demo_workload(seed)
    stop = threading.Event()

    def simulate() -> None:
        try:
            run_live(
                topology,
                model,
                landing,
                run_id,
                stop,
                seed=seed,
                flush_every=DEMO_FLUSH_EVERY,
                requests=requests,
            )
        except Exception as exc:  # report and end the thread; the dashboard stays up
            print(f"demo: simulation stopped: {exc}", file=sys.stderr, flush=True)

    thread = threading.Thread(target=simulate, name="mace-demo-simulator", daemon=True)
    thread.start()
    print(f"demo: simulating {DEMO_WORKLOAD} live into {landing / run_id}", flush=True)

    def stop_simulation() -> None:
        stop.set()
        thread.join(timeout=SOURCE_STOP_TIMEOUT)

    return stop_simulation


def demo_workload(seed: int) -> tuple[Topology, ArrivalModel]:
    """The demo's workload: ``DEMO_WORKLOAD`` on ``DEMO_NODES`` nodes, slowed to
    ``DEMO_SPEED`` (capacities and source rates alike)."""
    from estimator.model import replace_capacities
    from simulator.workloads import ArrivalModel, workload_model

    topology, model = workload_model(DEMO_WORKLOAD, nodes=DEMO_NODES, seed=seed)
    slow = replace_capacities(
        topology, {node: c * DEMO_SPEED for node, c in topology.capacity_by_node.items()}
    )
    streams = {
        source: dataclasses.replace(stream, rate=stream.rate * DEMO_SPEED)
        for source, stream in model.streams.items()
    }
    return slow, ArrivalModel(streams)


FLINK_JOB = "clickstream"
FLINK_ENRICH_COST = 0.006  # CPU-s per click in the job's bottleneck operator
FLINK_ON_OFF = {"rate_ratio": 10.0, "duration_ratio": 0.5, "mean_low_duration": 15.0}
FLINK_MEAN_RATE = 100.0  # source events per second: 25/s low, 250/s high
FLINK_HORIZON = 3600.0  # seconds of clicks drawn up front
FLINK_DRAIN = 120.0  # at most this long for the job to work off its backlog at the end


def start_flink(landing: Path, run_id: str, seed: int) -> Stop:
    """A real PyFlink job on a local MiniCluster, fed On-Off clicks, followed by the
    collector; stopping waits until the job has worked off its backlog (at most
    ``FLINK_DRAIN`` s), so that every event's latency is measured, then ends the job."""
    from connectors.flink.collector import FlinkCollector
    from connectors.flink.rest import FlinkRest
    from connectors.flink.runtime import start_demo_job, stop_process

    work = landing.parent / "flink"
    inputs = work / "input"
    inputs.mkdir(parents=True, exist_ok=True)
    log = work / "job.log"
    print(f"demo: starting a Flink job on a local MiniCluster (log: {log})", flush=True)
    process, url = start_demo_job(
        inputs, landing, run_id, log, enrich_cost=FLINK_ENRICH_COST, job_name=FLINK_JOB
    )
    print(f"demo: Flink is running; its web UI and REST API: {url}", flush=True)
    collector = FlinkCollector(FlinkRest(url), landing, run_id=run_id, flush_every=2.0)
    stop_collecting = threading.Event()

    def collect() -> None:
        try:
            collector.run(stop_collecting)
        except MaceError as exc:  # report and end the thread; the dashboard stays up
            print(f"demo: collection stopped: {exc}", file=sys.stderr, flush=True)

    collecting = threading.Thread(target=collect, name="mace-demo-collector", daemon=True)
    collecting.start()
    stop_feeding = _start_feeder(inputs, seed)

    def stop_flink() -> None:
        stop_feeding()
        _drain(collector.drained)  # the collector's samples go on meanwhile
        stop_collecting.set()
        collecting.join(timeout=30)
        stop_process(process)
        print(f"demo: Flink job stopped ({collector.stats.polls} samples)", flush=True)

    return stop_flink


def _start_feeder(inputs: Path, seed: int) -> Stop:
    """Write On-Off clicks (``FLINK_ON_OFF`` at ``FLINK_MEAN_RATE``) into ``inputs`` as
    they fall due, from a daemon thread; returns the function that stops it."""
    import numpy as np

    from connectors.flink.feeder import feed
    from simulator.workloads import OnOff, on_off_times

    stop = threading.Event()
    rng = np.random.default_rng(seed)
    start = time.time() + 1.0
    times = start + on_off_times(OnOff(**FLINK_ON_OFF), FLINK_MEAN_RATE, FLINK_HORIZON, rng)
    feeder = threading.Thread(
        target=feed, args=(times, inputs, stop, rng), name="mace-demo-feeder", daemon=True
    )
    feeder.start()

    def stop_feeding() -> None:
        stop.set()
        feeder.join(timeout=10)

    return stop_feeding


def _drain(drained: Callable[[], bool], every: float = 1.0) -> None:
    """Wait until ``drained()`` (the job has read everything its inputs sent), at most
    ``FLINK_DRAIN`` seconds."""
    deadline = time.monotonic() + FLINK_DRAIN
    while not drained() and time.monotonic() < deadline:
        time.sleep(every)


FLINK_SQL_JOB = "clickstream-sql"
FLINK_SQL_HASH_REPEAT = 100_000
"""Copies of the label and user the SQL job's join condition hashes per click: about
6 ms of CPU (measured: 5 ms at 80,000), the PyFlink demo's enrich cost, so the join
runs at about 45% on average and slightly over its capacity in bursts."""
FLINK_SQL_CATEGORIES = ("news", "sport", "shop", "video")
FLINK_SQL_EVERY = 2.0  # seconds between the Prometheus collector's range queries
FLINK_SQL_DELAY = 3.0  # it reads up to now - this (Prometheus scrapes every second)


def start_flink_sql(landing: Path, run_id: str, seed: int) -> Stop:
    """The Flink SQL job (:mod:`connectors.flink.sql_demo_job`) on a local MiniCluster
    with its Prometheus reporter on, a real Prometheus scraping it, ``mace collect
    prometheus --follow`` writing the run's samples; the job writes the run's
    ``outputs/`` itself through its filesystem sink. Stopping waits until the job has
    worked off its backlog (read over REST, at most ``FLINK_DRAIN`` s) and Prometheus
    has the last counters, then ends the job and Prometheus."""
    from connectors.flink.collector import FlinkCollector
    from connectors.flink.rest import FlinkRest, FlinkRestError
    from connectors.flink.runtime import free_port, start_sql_demo_job, stop_process
    from connectors.prometheus.client import PrometheusClient
    from connectors.prometheus.collector import PrometheusCollector
    from connectors.prometheus.server import run_prometheus

    work = landing.parent / "flink-sql"
    inputs, categories = work / "input", work / "categories"
    for folder in (inputs, categories):
        folder.mkdir(parents=True, exist_ok=True)
    rows = "".join(f"c{k},{label}\n" for k, label in enumerate(FLINK_SQL_CATEGORIES))
    (categories / ".categories.csv.inprogress").write_text(rows)
    (categories / ".categories.csv.inprogress").rename(categories / "categories.csv")
    log = work / "job.log"
    reporter = free_port()
    running = ExitStack()
    try:
        print(f"demo: starting a Flink SQL job on a local MiniCluster (log: {log})", flush=True)
        process, url = start_sql_demo_job(
            inputs, categories, landing / run_id / "outputs", log,
            hash_repeat=FLINK_SQL_HASH_REPEAT, job_name=FLINK_SQL_JOB, prometheus_port=reporter,
        )  # fmt: skip
        running.callback(stop_process, process)
        print(f"demo: Flink is running; its web UI and REST API: {url}", flush=True)
        prometheus = running.enter_context(
            run_prometheus(work / "prometheus", (f"127.0.0.1:{reporter}",))
        )
        print(f"demo: Prometheus scrapes the job's reporter: {prometheus}", flush=True)
        collector = PrometheusCollector(
            PrometheusClient(prometheus), landing, FLINK_SQL_JOB, run_id=run_id, rest=FlinkRest(url)
        )
        collector.start()  # the topology before the job's first outputs
        probe = FlinkCollector(FlinkRest(url), landing, run_id=run_id)
    except BaseException:
        running.close()
        raise
    stop_collecting = threading.Event()

    def collect() -> None:
        try:
            collector.follow(stop_collecting, every=FLINK_SQL_EVERY, delay=FLINK_SQL_DELAY)
        except MaceError as exc:  # report and end the thread; the dashboard stays up
            print(f"demo: collection stopped: {exc}", file=sys.stderr, flush=True)

    collecting = threading.Thread(target=collect, name="mace-demo-collector", daemon=True)
    collecting.start()
    print(f"demo: mace collect prometheus --follow into {landing / run_id}", flush=True)
    stop_feeding = _start_feeder(inputs, seed)

    def drained() -> bool:
        try:
            probe.sample()
        except FlinkRestError:
            return False
        return probe.drained()

    def stop_flink_sql() -> None:
        stop_feeding()
        _drain(drained)
        # Prometheus scrapes the last counters, the collector reads them, the sink commits
        time.sleep(FLINK_SQL_DELAY + FLINK_SQL_EVERY + 1.0)
        stop_collecting.set()
        collecting.join(timeout=30)
        running.close()
        stats = collector.stats
        print(
            f"demo: Flink SQL job and Prometheus stopped ({stats.queries} range queries, "
            f"{stats.rows} sample rows)",
            flush=True,
        )
        for warning in stats.report.warnings():
            print(f"demo: collect prometheus: {warning}", file=sys.stderr, flush=True)

    return stop_flink_sql


ENGINES: dict[str, Engine] = {
    "sim": start_simulator,
    "flink": start_flink,
    "flink-sql": start_flink_sql,
}
