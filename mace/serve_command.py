"""``mace serve``: the dashboard through waitress, optionally ingesting in the same process.

Also the serving and ingestion helpers ``mace demo`` shares. Dash, waitress,
Spark and APScheduler are imported inside the functions so that ``mace``
starts fast and the ``dashboard`` package never imports ``ingest``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from mace.alerting import AlertSettings
from mace.errors import UsageError
from mace.options import AUTH_ENV, DEFAULT_MASTER, add_alert_options, add_master, alert_settings

if TYPE_CHECKING:
    from apscheduler.schedulers.base import BaseScheduler

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8050
DEFAULT_INGEST_EVERY = 5.0
SERVER_THREADS = 8
CONNECTION_LIMIT = 1000
"""Connections waitress holds open at once (its default, 100, let 100 half-open
connections lock every other client out)."""
CHANNEL_TIMEOUT = 20
"""Seconds a connection may stay silent before waitress closes it (its default is 120)."""
CLEANUP_INTERVAL = 5
"""Seconds between waitress's sweeps for silent connections."""


def register(subparsers: argparse._SubParsersAction) -> None:
    serve = subparsers.add_parser(
        "serve",
        help="serve the dashboard (optionally ingesting a landing folder in-process)",
        description="Serve the Dash dashboard through waitress. With --landing, the "
        "scheduled ingestion runs in the same process (one process owns the database).",
    )
    serve.add_argument("--db", required=True, help="DuckDB file (must exist unless --create)")
    serve.add_argument(
        "--create", action="store_true", help="create --db as an empty database if it is missing"
    )
    serve.add_argument("--landing", help="landing folder to ingest on a schedule")
    serve.add_argument(
        "--every", type=float, default=DEFAULT_INGEST_EVERY, help="ingest period (s)"
    )
    add_master(serve)
    serve.add_argument("--host", default=DEFAULT_HOST, help="bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (default 8050)")
    serve.add_argument(
        "--auth-file",
        help=f"file holding one line USER:PASSWORD: every request then needs HTTP basic "
        f"authentication (or set {AUTH_ENV}=USER:PASSWORD); use TLS in front of it",
    )
    serve.add_argument(
        "--flink-rest",
        metavar="URL",
        help="a Flink JobManager's REST URL (e.g. http://127.0.0.1:8081): the What-if page "
        "may then send a parallelism change of a Flink run's job there when you confirm it "
        "(without it, the page shows the call)",
    )
    add_allowed_host(serve)
    add_alert_options(serve)
    serve.set_defaults(run=run)


def add_allowed_host(parser: argparse.ArgumentParser) -> None:
    """``--allowed-host``, of ``mace serve`` and ``mace demo``: the Host headers the
    dashboard answers besides its own address (see :func:`dashboard.app.create_app`)."""
    parser.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME[:PORT]",
        help="a further Host header to answer (repeatable), e.g. the name a reverse proxy "
        "forwards; besides it only the bind host, localhost, 127.0.0.1 and [::1] on --port "
        "are answered (other hosts get 400, against DNS rebinding)",
    )


def run(args: argparse.Namespace) -> int:
    check_port(args.port)
    alerts = alert_settings(args)
    if args.every <= 0:
        raise UsageError(f"--every must be positive, got {args.every}")
    if args.landing:
        from ingest.extract import landing_folder

        landing_folder(args.landing)  # a folder on this machine, or why not
    if not args.create and not Path(args.db).exists():
        raise UsageError(
            f"--db: {args.db} does not exist; add --create to start an empty database there"
        )
    credentials = read_credentials(args.auth_file, os.environ.get(AUTH_ENV))
    if args.flink_rest and not args.flink_rest.startswith(("http://", "https://")):
        raise UsageError(
            f"--flink-rest: expected an http:// or https:// URL, got {args.flink_rest}"
        )
    with sigterm_as_interrupt(), ExitStack() as running:
        jobs = Path(tempfile.mkdtemp(prefix="mace-dash-jobs-"))
        running.callback(shutil.rmtree, jobs, ignore_errors=True)
        app = open_app(
            Path(args.db),
            max(2.0, args.every),
            jobs,
            credentials,
            bind=(args.host, args.port),
            extra_hosts=args.allowed_host,
            flink_rest=args.flink_rest,
        )
        if args.landing:
            scheduler = start_ingestion(
                Path(args.landing),
                Path(args.db),
                args.every,
                alerts=alerts,
                master=args.master,
            )
            running.callback(scheduler.shutdown, wait=False)
        running.callback(start_server(app, args.host, args.port, authenticated=bool(credentials)))
        wait_until_stopped()
    return 0


def check_port(port: int) -> None:
    if not 0 < port < 65536:
        raise UsageError(f"--port must be between 1 and 65535, got {port}")


def read_credentials(auth_file: str | None, from_env: str | None) -> tuple[str, str] | None:
    """(user, password) for basic authentication from ``--auth-file`` (first line) or
    the environment variable's value; None when neither is given."""
    where = f"--auth-file {auth_file}" if auth_file else AUTH_ENV
    if auth_file:
        try:
            text = Path(auth_file).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"--auth-file: cannot read {auth_file}: {exc}") from exc
        line = text[0].strip() if text else ""
    elif from_env is not None:
        line = from_env.strip()
    else:
        return None
    user, colon, password = line.partition(":")
    if not colon or not user or not password:
        raise UsageError(f"{where}: expected one line USER:PASSWORD with both parts non-empty")
    return user, password


def open_app(
    db: Path,
    refresh_seconds: float,
    jobs: Path,
    credentials: tuple[str, str] | None = None,
    live_run: str | None = None,
    bind: tuple[str, int] | None = None,
    extra_hosts: Sequence[str] = (),
    flink_rest: str | None = None,
) -> Any:
    """The app, with its database connection opened (and the schema migrated) before any
    in-process ingestion starts writing; its background jobs (the optimizer) keep their
    state in the folder ``jobs``, which the caller removes. ``live_run``: the run whose
    live simulator applies the What-if page's placement requests (``mace demo``).
    ``bind`` and ``extra_hosts``: the Host headers answered; ``flink_rest``: where the
    What-if page may rescale a Flink job (see :func:`create_app`)."""
    from dashboard.app import create_app
    from dashboard.context import CONFIG_KEY
    from mace.api import register_cli_api

    app = create_app(
        db,
        refresh_seconds=refresh_seconds,
        jobs=jobs,
        credentials=credentials,
        live_run=live_run,
        flink_rest=flink_rest,
        bind=bind,
        extra_hosts=extra_hosts,
    )
    with app.server.config[CONFIG_KEY].database.cursor():
        pass
    register_cli_api(app.server)
    mount_metrics(app)
    return app


def mount_metrics(app: Any) -> None:
    """``/metrics`` on the app's server, from the app's run cache and database (behind
    the same authentication as the pages)."""
    from dashboard.context import CONFIG_KEY
    from mace.metrics_export import MaceCollector, mount
    from storage.scenarios import objectives

    context = app.server.config[CONFIG_KEY]

    def run_ids() -> list[str]:
        return [r.run_id for r in context.runs.run_ids()]

    def read_objectives(run_id: str) -> dict[str, float]:
        with context.database.cursor() as cur:
            return objectives(cur, run_id)

    mount(app.server, MaceCollector(run_ids, context.runs.get, read_objectives))


def warn_if_exposed(host: str, authenticated: bool = False) -> None:
    """One line on stderr when the dashboard listens beyond loopback: without
    authentication anyone who reaches the address can read the runs and write scenarios
    and objectives; with basic authentication the password crosses the network in clear
    text unless TLS is put in front."""
    import ipaddress

    if host.strip().lower() in ("localhost", "localhost.localdomain"):
        return
    try:
        if ipaddress.ip_address(host.strip("[]")).is_loopback:
            return
    except ValueError:
        pass  # a host name: it may resolve beyond loopback
    if authenticated:
        message = (
            f"warning: --host {host} exposes the dashboard beyond this machine over plain "
            "HTTP: basic authentication sends the password readable by anyone on the path; "
            "put a TLS reverse proxy in front, or keep 127.0.0.1"
        )
    else:
        message = (
            f"warning: --host {host} exposes the dashboard beyond this machine with no "
            "authentication (anyone who reaches it can read runs and write scenarios); "
            f"set --auth-file or {AUTH_ENV} and put a TLS reverse proxy in front, "
            "or keep 127.0.0.1"
        )
    print(message, file=sys.stderr, flush=True)


def start_server(
    app: Any, host: str, port: int, *, authenticated: bool = False
) -> Callable[[], None]:
    """Serve ``app`` through waitress in a thread; the returned function stops it.

    Stopping closes every socket from inside waitress's own loop (through its
    trigger), so the loop ends without racing a ``select`` on a closed socket,
    then lets the requests in progress finish.
    """
    from waitress import create_server
    from waitress.wasyncore import close_all

    warn_if_exposed(host, authenticated)
    sockets: dict[int, Any] = {}
    try:
        server = create_server(
            app.server,
            map=sockets,
            host=host,
            port=port,
            threads=SERVER_THREADS,
            connection_limit=CONNECTION_LIMIT,
            channel_timeout=CHANNEL_TIMEOUT,
            cleanup_interval=CLEANUP_INTERVAL,
        )
    except OSError as exc:  # e.g. the port is taken: a one-line message, not a traceback
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    thread = threading.Thread(target=server.run, name="mace-waitress", daemon=True)
    thread.start()
    print(f"dashboard: http://{host}:{port}/  (Ctrl+C to stop)", flush=True)

    def stop() -> None:
        server.trigger.pull_trigger(lambda: close_all(sockets))
        thread.join(timeout=10)
        server.task_dispatcher.shutdown()

    return stop


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises KeyboardInterrupt like Ctrl+C (main thread only),
    so that both end in the callers' cleanup."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def wait_until_stopped(duration: float | None = None) -> bool:
    """Block for ``duration`` seconds (``None``: forever) or until Ctrl+C (or SIGTERM inside
    :func:`sigterm_as_interrupt`); returns whether the whole duration elapsed."""
    try:
        if duration is None:
            threading.Event().wait()
        else:
            time.sleep(duration)
    except KeyboardInterrupt:
        return False
    return True


def start_ingestion(
    landing: Path,
    db: Path,
    every: float,
    *,
    master: str = DEFAULT_MASTER,
    prune_ingested: bool = False,
    alerts: AlertSettings | None = None,
) -> BaseScheduler:
    """Start the ingestion scheduler in this process, reporting batches on stderr, then
    an alert pass after each batch (:mod:`mace.alerting`; ``alerts`` default settings:
    no webhook).

    ``prune_ingested`` deletes landing files once ingested: only for ``mace demo``'s own
    landing folder, never for a user's (``mace serve --landing``)."""
    import logging

    from ingest.job import BatchSummary
    from ingest.scheduler import start_scheduler
    from mace.alerting import scheduled_pass

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
        alerts_of(summary.runs)

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    alerts_of = scheduled_pass(db, alerts or AlertSettings(), say)
    return start_scheduler(
        landing, db, every, master=master, on_batch=report, prune_ingested=prune_ingested
    )
