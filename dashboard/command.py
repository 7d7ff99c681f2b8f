"""``mace report``, ``mace serve`` and ``mace demo``.

This module is the composition root of the web app: ``serve --landing`` and
``demo`` start ingestion (and the simulator) in the same process, importing
them inside the run functions so that the ``dashboard`` package itself never
imports ``ingest`` or Spark.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from estimator.pathaware import ESTIMATOR_LABELS, ESTIMATORS

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8050
DEMO_WORKLOAD = "clickstream-5q"
DEMO_INGEST_EVERY = 5.0
DEMO_NODES = 5
DEMO_FLUSH_EVERY = 2.0


def register(subparsers: argparse._SubParsersAction) -> None:
    report = subparsers.add_parser(
        "report",
        help="per-query latency report of a run (estimated, predicted, measured, objective)",
        description="Worst case, p99 and mean latency across time per query and for the "
        "whole system: estimated (Mace from the measured DLTS), predicted (model fitted on "
        "a training window) and measured, with the stored latency objectives.",
    )
    report.add_argument("--db", required=True, help="DuckDB file written by mace ingest")
    report.add_argument("--run", dest="run_id", help="run id (default: the last run id)")
    report.add_argument(
        "--training-share",
        type=float,
        default=0.1,
        help="share of the run used to fit the predictive model (default 0.1)",
    )
    report.add_argument(
        "--estimator",
        choices=sorted(ESTIMATORS),
        default="mace",
        help="mace (default): the paper's estimate; path: the path-aware estimate, which "
        "adds up backlogs along machine paths (see docs/accuracy.md)",
    )
    fmt = report.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print one JSON object")
    fmt.add_argument("--csv", action="store_true", help="print a CSV table")
    report.set_defaults(run=run_report)

    serve = subparsers.add_parser(
        "serve",
        help="serve the dashboard (optionally ingesting a landing folder in-process)",
        description="Serve the Dash dashboard through waitress. With --landing, the "
        "scheduled ingestion runs in the same process (one process owns the database).",
    )
    serve.add_argument("--db", required=True, help="DuckDB file")
    serve.add_argument("--landing", help="landing folder to ingest on a schedule")
    serve.add_argument("--every", type=float, default=DEMO_INGEST_EVERY, help="ingest period (s)")
    serve.add_argument("--host", default=DEFAULT_HOST, help="bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (default 8050)")
    serve.set_defaults(run=run_serve)

    demo = subparsers.add_parser(
        "demo",
        help="simulate clickstream-5q live, ingest it every few seconds and serve the dashboard",
        description="Zero-configuration demo: a live simulation writes telemetry into a "
        "local landing folder, ingestion runs every few seconds and the dashboard is served.",
    )
    demo.add_argument("--host", default=DEFAULT_HOST, help=argparse.SUPPRESS)
    demo.add_argument("--port", type=int, default=DEFAULT_PORT, help=argparse.SUPPRESS)
    demo.add_argument("--workdir", help=argparse.SUPPRESS)
    demo.set_defaults(run=run_demo)


def _choose_run(runs: list[Any], wanted: str | None) -> str:
    from storage.db import StorageError

    ids = [r.run_id for r in runs]
    if wanted is not None:
        if wanted not in ids:
            known = ", ".join(ids) or "none"
            raise StorageError(f"unknown run '{wanted}' (runs in the database: {known})")
        return wanted
    if not ids:
        raise StorageError("the database holds no runs yet; ingest a landing folder first")
    return ids[-1]


def run_report(args: argparse.Namespace) -> int:
    from dashboard.data import Database, load_run
    from dashboard.report import build_report, report_csv
    from estimator.errors import ModelError
    from storage import reads
    from storage.db import StorageError
    from storage.scenarios import objectives

    if not 0 < args.training_share <= 1:
        raise ModelError(f"--training-share must be in (0, 1], got {args.training_share}")
    if not Path(args.db).is_file():
        raise StorageError(f"{args.db}: no such database file")
    database = Database(args.db)
    try:
        with database.cursor() as cur:
            run_id = _choose_run(reads.list_runs(cur), args.run_id)
            run = load_run(cur, run_id)
            goals = objectives(cur, run_id)
    finally:
        database.close()
    report = build_report(run, goals, args.training_share, estimator=args.estimator)
    if args.json:
        print(json.dumps(report))
    elif args.csv:
        sys.stdout.write(report_csv(report))
    else:
        print(format_report(report, ESTIMATOR_LABELS[args.estimator]))
    return 0


def format_report(report: dict[str, Any], estimator_label: str = "Mace") -> str:
    """A readable table of the report (estimated/predicted by ``estimator_label``)."""

    def cell(value: Any, percent: bool = False) -> str:
        if value is None:
            return "-"
        return f"{value:.1%}" if percent else f"{value:.4f}"

    lines = [
        f"run {report['run']}: latency across time (seconds); "
        f"estimated and predicted by {estimator_label}"
    ]
    header = f"  {'query':<14}{'':>10}{'worst':>10}{'p99':>10}{'mean':>10}"
    rows = [*report["queries"].items(), ("system", report["system"])]
    for name, entry in rows:
        lines.append(header.replace("query", name if len(name) < 14 else name[:13]))
        for kind in ("estimated", "predicted", "measured"):
            lines.append(
                f"  {'':<14}{kind:>10}"
                + "".join(f"{cell(entry[f'{kind}_{f}']):>10}" for f in ("wc", "p99", "mean"))
            )
        lines.append(
            f"  {'':<14}objective {cell(entry['objective'])} s,"
            f" compliance {cell(entry['compliance'], True)}"
        )
    lines.append(f"  bound coverage {cell(report['system']['bound_coverage'], True)}")
    return "\n".join(lines)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _serve_app(app: Any, host: str, port: int) -> None:
    """Serve through waitress until Ctrl+C or SIGTERM (both end in the callers' cleanup)."""
    from waitress import serve

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupt)
    print(f"dashboard: http://{host}:{port}/  (Ctrl+C to stop)", flush=True)
    serve(app.server, host=host, port=port, threads=8, _quiet=True)


def _open_app(db: Path, refresh_seconds: float) -> Any:
    """The app, with its database connection opened (and the schema migrated) before any
    in-process ingestion starts writing."""
    from dashboard.app import create_app
    from dashboard.context import CONFIG_KEY

    app = create_app(db, refresh_seconds=refresh_seconds)
    with app.server.config[CONFIG_KEY].database.cursor():
        pass
    return app


def run_serve(args: argparse.Namespace) -> int:
    from estimator.errors import ModelError

    if not 0 < args.port < 65536:
        raise ModelError(f"--port must be between 1 and 65535, got {args.port}")
    if args.every <= 0:
        raise ModelError(f"--every must be positive, got {args.every}")
    if args.landing and not Path(args.landing).is_dir():
        raise ModelError(f"--landing: {args.landing} is not a folder")
    app = _open_app(Path(args.db), max(2.0, args.every))
    stop = _start_ingestion(Path(args.landing), Path(args.db), args.every) if args.landing else None
    try:
        _serve_app(app, args.host, args.port)
    finally:
        if stop is not None:
            stop()
    return 0


def _start_ingestion(landing: Path, db: Path, every: float) -> Callable[[], None]:
    """Start the ingestion scheduler in this process; return a function stopping it."""
    import logging

    from ingest.job import BatchSummary
    from ingest.scheduler import start_scheduler

    # a batch longer than the period skips a tick; that is expected, not worth a warning
    logging.getLogger("apscheduler").setLevel(logging.ERROR)

    def report(summary: BatchSummary) -> None:
        if summary.files:
            print(
                f"ingest: batch {summary.batch_id}: {summary.files} file(s), "
                f"{summary.rows_kept} rows kept, {summary.rows_quarantined} quarantined "
                f"in {summary.seconds:.1f} s",
                file=sys.stderr,
                flush=True,
            )

    scheduler = start_scheduler(landing, db, every, on_batch=report)

    def stop() -> None:
        scheduler.shutdown(wait=False)

    return stop


def run_demo(args: argparse.Namespace) -> int:
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="mace-demo-"))
    landing = workdir / "landing"
    landing.mkdir(parents=True, exist_ok=True)
    db = workdir / "mace.duckdb"
    app = _open_app(db, DEMO_INGEST_EVERY)
    stop_simulation = threading.Event()
    simulation = _start_live_simulation(landing, stop_simulation)
    stop_ingestion = _start_ingestion(landing, db, DEMO_INGEST_EVERY)
    print(f"demo: simulating {DEMO_WORKLOAD} live into {landing}", flush=True)
    print(f"demo: ingesting every {DEMO_INGEST_EVERY:g} s into {db}", flush=True)
    try:
        _serve_app(app, args.host, args.port)
    finally:
        stop_simulation.set()
        stop_ingestion()
        simulation.join(timeout=10)
    return 0


def _start_live_simulation(landing: Path, stop: threading.Event) -> threading.Thread:
    """Run the simulator's live mode for the demo workload in a daemon thread."""
    from simulator.live import run_live
    from simulator.workloads import workload_model

    topology, model = workload_model(DEMO_WORKLOAD, nodes=DEMO_NODES, seed=0)
    run_id = f"demo-{time.strftime('%Y%m%d-%H%M%S')}"

    def simulate() -> None:
        try:
            run_live(topology, model, landing, run_id, stop, flush_every=DEMO_FLUSH_EVERY)
        except Exception as exc:  # report and end the thread; the dashboard stays up
            print(f"demo: simulation stopped: {exc}", file=sys.stderr, flush=True)

    thread = threading.Thread(target=simulate, name="mace-demo-simulator", daemon=True)
    thread.start()
    return thread
