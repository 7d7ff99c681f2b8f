"""``mace collect flink``: follow a running Flink job into a landing folder."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
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
        "--give-up",
        type=float,
        default=DEFAULT_GIVE_UP,
        help="stop after this many seconds without an answer (default 60)",
    )
    flink.set_defaults(run=run_flink)


def run_flink(args: argparse.Namespace) -> int:
    from connectors.errors import ConnectorError
    from connectors.flink.collector import FlinkCollector
    from connectors.flink.rest import FlinkRest
    from mace.errors import UsageError

    if args.duration is not None and args.duration <= 0:
        raise UsageError(f"--duration must be positive, got {args.duration:g}")
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
    )

    def request_stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    graph = collector.graph
    print(
        f"collecting job {collector.job_id} ({graph.name}, {len(graph.vertices)} vertices) "
        f"into {collector.run_dir} every {args.every:g} s; Ctrl-C to stop",
        flush=True,
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
