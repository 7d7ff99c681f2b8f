"""``mace collect flink``: follow a running Flink job into a landing folder."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

from connectors.flink.collector import DEFAULT_EVERY, DEFAULT_FLUSH_EVERY, DEFAULT_GIVE_UP
from connectors.flink.graph import NODE_MODES


def register(subparsers: argparse._SubParsersAction) -> None:
    collect = subparsers.add_parser(
        "collect",
        help="collect telemetry from a real engine (Apache Flink) into a landing folder",
        description="Read a real engine's job graph and counters and write them as a run "
        "folder (topology.yaml and samples/) that mace ingest turns into statistics.",
    )
    engines = collect.add_subparsers(dest="engine", metavar="ENGINE", required=True)
    flink = engines.add_parser(
        "flink",
        help="follow a Flink job through its REST API",
        description="Discover a running Flink job (or the one named by --job) through the "
        "JobManager's REST API, write its topology into LANDING/RUN_ID/topology.yaml and "
        "append its counters to LANDING/RUN_ID/samples/ every --every seconds, until the job "
        "ends, Ctrl-C or SIGTERM. Latency at the sinks comes from the job itself: see "
        "connectors.flink.probe and docs/commands/collect.md, 'Monitor your own Flink job'.",
    )
    flink.add_argument("--rest", required=True, help="REST URL, e.g. http://127.0.0.1:8081")
    flink.add_argument("--out", required=True, help="landing folder")
    flink.add_argument("--run-id", help="run folder name (default: flink-<job name>-<job id>)")
    flink.add_argument("--job", help="job id (default: the newest running job)")
    flink.add_argument(
        "--every", type=float, default=DEFAULT_EVERY, help="seconds between samples (default 1)"
    )
    flink.add_argument(
        "--flush-every",
        type=float,
        default=DEFAULT_FLUSH_EVERY,
        help="seconds between appended samples/ files (default 5)",
    )
    flink.add_argument(
        "--nodes",
        choices=NODE_MODES,
        default="subtask",
        help="subtask (default): each vertex's subtask threads are its resource, inside "
        "its TaskManager's cores; taskmanager: operators share their TaskManager's cores",
    )
    flink.add_argument("--duration", type=float, help="stop after this many seconds")
    flink.add_argument(
        "--offered",
        action="append",
        default=[],
        metavar="SOURCE=FOLDER",
        help="a file-fed source reads FOLDER, visible from here: count the lines of its files "
        "as the records offered to SOURCE (a topology source id), so that files not read "
        "yet count as a queue (repeat for several sources)",
    )
    flink.add_argument(
        "--give-up",
        type=float,
        default=DEFAULT_GIVE_UP,
        help="stop after this many seconds without an answer (default 60)",
    )
    flink.set_defaults(run=run_flink)
    _register_prometheus(engines)


def _register_prometheus(engines: argparse._SubParsersAction) -> None:
    from connectors.prometheus.collector import DEFAULT_DELAY, DEFAULT_EVERY, DEFAULT_GIVE_UP

    prom = engines.add_parser(
        "prometheus",
        help="read a Flink job's counters from Prometheus (a past window, or live)",
        description="Read a Flink job's counters (numRecordsIn, numRecordsOut, "
        "accumulateBusyTimeMs, exported by Flink's Prometheus reporter) with range queries "
        "and write them as LANDING/RUN_ID/samples/, the record set mace collect flink writes. "
        "The job's graph comes from Flink's REST API or HistoryServer (--rest) or from a "
        "topology file (--topology). With --start/--end it reads a past window and stops; "
        "with --follow it keeps up with the job until Ctrl-C or SIGTERM.",
    )
    prom.add_argument("--url", required=True, help="Prometheus URL, e.g. http://127.0.0.1:9090")
    prom.add_argument(
        "--job", required=True, help="the job's job_name label (or its 32-hex job id)"
    )
    prom.add_argument("--out", required=True, help="landing folder")
    prom.add_argument("--run-id", help="run folder name (default: prom-<job>)")
    graph = prom.add_mutually_exclusive_group(required=True)
    graph.add_argument("--rest", help="Flink REST or HistoryServer URL that knows the job")
    graph.add_argument("--topology", help="topology file of the job (ids = vertex names)")
    prom.add_argument("--start", help="history: first time (epoch s, ISO 8601, now-2h)")
    prom.add_argument("--end", help="history: last time (default: now)")
    prom.add_argument("--follow", action="store_true", help="keep up with the job live")
    prom.add_argument("--step", default="1s", help="evaluation step (default 1s)")
    prom.add_argument(
        "--nodes",
        choices=NODE_MODES,
        default="subtask",
        help="with --rest: subtask threads (default) or TaskManager cores as resources",
    )
    prom.add_argument(
        "--every",
        type=float,
        default=DEFAULT_EVERY,
        help=f"follow: seconds between queries (default {DEFAULT_EVERY:g})",
    )
    prom.add_argument(
        "--delay",
        type=float,
        default=DEFAULT_DELAY,
        help=f"follow: stay this many seconds behind now, for the scrapes (default "
        f"{DEFAULT_DELAY:g})",
    )
    prom.add_argument(
        "--give-up",
        type=float,
        default=DEFAULT_GIVE_UP,
        help=f"follow: stop after this many seconds of failed queries (default "
        f"{DEFAULT_GIVE_UP:g})",
    )
    prom.add_argument("--duration", type=float, help="follow: stop after this many seconds")
    prom.add_argument(
        "--timeout", type=float, default=10.0, help="seconds to wait for one answer (default 10)"
    )
    prom.set_defaults(run=run_prometheus)


def run_prometheus(args: argparse.Namespace) -> int:
    import time

    from connectors.flink.rest import FlinkRest
    from connectors.prometheus.client import PrometheusClient
    from connectors.prometheus.collector import (
        PrometheusCollector,
        parse_duration,
        parse_time,
    )
    from mace.errors import UsageError

    if args.follow == (args.start is not None):
        raise UsageError("give either --start [--end] (a past window) or --follow (live)")
    if args.follow and args.end is not None:
        raise UsageError("--end goes with --start, not with --follow")
    for option in ("every", "delay", "give_up", "duration", "timeout"):
        value = getattr(args, option)
        if value is not None and (value < 0 or (value == 0 and option != "delay")):
            raise UsageError(f"--{option.replace('_', '-')} must be positive, got {value:g}")
    collector = PrometheusCollector(
        PrometheusClient(args.url, timeout=args.timeout),
        args.out,
        args.job,
        run_id=args.run_id,
        rest=FlinkRest(args.rest) if args.rest else None,
        topology=args.topology,
        step=parse_duration(args.step),
        mode=args.nodes,
    )
    if args.follow:
        stop = threading.Event()

        def request_stop(signum: int, frame: FrameType | None) -> None:
            stop.set()

        signals = (signal.SIGINT, signal.SIGTERM)
        previous = {sig: signal.signal(sig, request_stop) for sig in signals}
        print(
            f"following job {args.job} in {collector.client.url} into {collector.run_dir} "
            f"every {args.every:g} s; Ctrl-C to stop",
            flush=True,
        )
        try:
            stats = collector.follow(
                stop,
                every=args.every,
                delay=args.delay,
                give_up=args.give_up,
                duration=args.duration,
            )
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    else:
        now = time.time()
        start = parse_time(args.start, now)
        end = parse_time(args.end, now) if args.end is not None else now
        stats = collector.history(start, end)
    for line in stats.warnings + stats.report.warnings():
        print(f"warning: {line}", file=sys.stderr)
    print(
        f"{collector.run_dir}: {stats.rows} sample rows in {stats.files} file(s) from "
        f"{stats.queries} queries ({stats.failed_queries} failed); stopped: {stats.ended_because}"
    )
    return 0


def run_flink(args: argparse.Namespace) -> int:
    from connectors.errors import ConnectorError
    from connectors.flink.collector import FlinkCollector
    from connectors.flink.rest import FlinkRest
    from mace.errors import UsageError

    if args.duration is not None and args.duration <= 0:
        raise UsageError(f"--duration must be positive, got {args.duration:g}")
    offered: dict[str, Path] = {}
    for item in args.offered:
        source, sep, folder = item.partition("=")
        if not sep or not source or not folder:
            raise UsageError(f"--offered {item!r}: expected SOURCE=FOLDER")
        if not Path(folder).is_dir():
            raise UsageError(f"--offered {item!r}: {folder} is not a folder")
        offered[source] = Path(folder)
    stop = threading.Event()  # set by Ctrl-C or SIGTERM; also cuts a GET in progress
    collector = FlinkCollector(
        FlinkRest(args.rest, stop=stop),
        args.out,
        run_id=args.run_id,
        job_id=args.job,
        every=args.every,
        flush_every=args.flush_every,
        give_up=args.give_up,
        mode=args.nodes,
        offered=offered,
    )

    def request_stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    graph = collector.graph
    print(
        f"collecting job {collector.job_id} ({graph.name}, {len(graph.vertices)} vertices) "
        f"into {collector.run_dir} every {collector.every:g} s; Ctrl-C to stop",
        flush=True,
    )
    if collector.every > args.every:
        print(
            f"note: Flink refreshes its REST metrics every {collector.every:g} s "
            "(metrics.fetcher.update-interval), so the collector polls at that pace; set it "
            f"to {round(args.every * 1000)} ms or less on the cluster to sample every "
            f"{args.every:g} s",
            file=sys.stderr,
        )
    try:
        stats = collector.run(stop, duration=args.duration)
    except OSError as exc:  # the last write failed too: say so in one line
        raise ConnectorError(
            f"{collector.run_dir}: cannot write samples: {exc.strerror or exc}; "
            f"{collector.pending_rows} row(s) not written"
        ) from None
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if stats.failed_writes:
        print(
            f"warning: {stats.failed_writes} samples file write(s) failed and were retried "
            f"({stats.last_write_error})",
            file=sys.stderr,
        )
    print(
        f"{collector.run_dir}: {stats.polls} samples ({stats.rows} rows in {stats.files} "
        f"file(s), {stats.failed_polls} failed polls); stopped: {stats.ended_because}",
        file=sys.stderr if stats.failed_polls and not stats.polls else sys.stdout,
    )
    return 0
