"""``mace simulate``: run the reference EPS on a workload and write raw telemetry."""

from __future__ import annotations

import argparse
import math
import signal
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

import numpy as np

from estimator.errors import MaceError
from mace.errors import UsageError
from simulator.errors import SimulationError
from simulator.plan import COST_DISTRIBUTIONS, DEFAULT_TRAIN, POLICIES
from simulator.workloads import DEFAULT_DURATION, DEFAULT_LOAD, DEFAULT_NODES, WORKLOADS

if TYPE_CHECKING:
    from estimator.model import Topology
    from simulator.workloads import ArrivalModel


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "simulate",
        help="simulate an event processing system and write raw telemetry",
        description="Simulate a workload on the reference event processing system and write "
        "the raw telemetry (topology.yaml and Parquet record sets) into LANDING/RUN_ID. "
        f"Workloads: {', '.join(WORKLOADS)}, or a topology file.",
    )
    parser.add_argument("workload", help=f"{' | '.join(WORKLOADS)} | path to a topology file")
    parser.add_argument("--out", required=True, help="landing folder")
    parser.add_argument(
        "--run-id",
        help="run folder name (default: WORKLOAD-<nodes>n-POLICY-seedSEED, e.g. "
        "clickstream-5q-5n-stimulus-seed0)",
    )
    parser.add_argument(
        "--nodes",
        type=int,
        help="number of nodes (default per workload: "
        + ", ".join(f"{name} {count}" for name, count in DEFAULT_NODES.items())
        + ")",
    )
    parser.add_argument(
        "--duration", type=float, default=DEFAULT_DURATION, help="seconds of arrivals (batch mode)"
    )
    parser.add_argument(
        "--load",
        type=float,
        default=DEFAULT_LOAD,
        help="average utilization of the busiest node (default %(default)s)",
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed (same seed, same files)")
    parser.add_argument("--policy", default="stimulus", choices=POLICIES, help="scheduling policy")
    parser.add_argument(
        "--node-policy",
        action="append",
        default=[],
        metavar="NODE=POLICY",
        help="policy of one node, overriding --policy (repeatable)",
    )
    parser.add_argument("--train", type=int, default=DEFAULT_TRAIN, help="round-robin train size")
    parser.add_argument(
        "--cost-distribution",
        default="exponential",
        choices=COST_DISTRIBUTIONS,
        help="per-event cost around the port's mean",
    )
    parser.add_argument("--files", type=int, default=4, help="Parquet files per record set")
    parser.add_argument("--engine", default="fast", choices=("fast", "reference"))
    parser.add_argument(
        "--change",
        action="append",
        default=[],
        metavar="AT_SECONDS:PLACEMENT",
        help="at AT_SECONDS after the run's start, move operators to the placement in the "
        "YAML/JSON file PLACEMENT (operator: node, or a topology file's placement; operators "
        "not named stay); queued work follows the operator, and topology-<epoch>.yaml "
        "records the change (repeatable)",
    )
    parser.add_argument("--live", action="store_true", help="pace in real time until stopped")
    parser.add_argument(
        "--flush-every", type=float, default=2.0, help="live: seconds between appended files"
    )
    parser.set_defaults(run=run)


def _run_id(args: argparse.Namespace, nodes: int) -> str:
    """--run-id, or a name from the options that differ between runs: the workload, its
    node count (so that ``--nodes 3`` after a default run is a new run), the policy and
    the seed (live: the start second)."""
    if args.run_id:
        return str(args.run_id)
    base = Path(args.workload).stem if args.workload not in WORKLOADS else args.workload
    if args.live:  # a live run is new every time: name it by its start second
        return f"{base}-{nodes}n-{args.policy}-live-{int(time.time())}"
    return f"{base}-{nodes}n-{args.policy}-seed{args.seed}"


def node_policies(
    default: str, overrides: list[str], node_ids: tuple[str, ...]
) -> str | dict[str, str]:
    """--policy for every node, with --node-policy NODE=POLICY overrides (nodes are
    checked against the topology when the plan is compiled)."""
    if not overrides:
        return default
    chosen = dict.fromkeys(node_ids, default)
    for item in overrides:
        node, _, policy = item.partition("=")
        if not node or policy not in POLICIES:
            raise UsageError(
                f"--node-policy '{item}': expected NODE=POLICY with POLICY one of "
                f"{', '.join(POLICIES)}"
            )
        chosen[node] = policy
    return chosen


def placement_changes(items: list[str]) -> list[tuple[float, dict[str, str]]]:
    """--change AT_SECONDS:PLACEMENT options as (seconds after the start, moves), read from
    the files (operators and nodes are checked against the topology by the simulator)."""
    from estimator.loaders import load_placement

    changes = []
    for item in items:
        at, sep, path = item.partition(":")
        try:
            seconds = float(at)
        except ValueError:
            seconds = math.nan
        if not sep or not path or not (math.isfinite(seconds) and seconds > 0):
            raise UsageError(
                f"--change '{item}': expected AT_SECONDS:PLACEMENT, AT_SECONDS a positive "
                "number of seconds after the run's start and PLACEMENT a YAML or JSON file"
            )
        try:
            moves = load_placement(path)
        except MaceError as exc:
            raise UsageError(f"--change '{item}': {exc}") from None
        changes.append((seconds, moves))
    return changes


def run(args: argparse.Namespace) -> int:
    from simulator.workloads import workload, workload_model

    if args.files < 1:
        raise UsageError(f"--files must be at least 1, got {args.files}")
    if args.run_id is not None and ("/" in args.run_id or args.run_id in ("", ".", "..")):
        raise UsageError(f"--run-id must be a plain folder name, got '{args.run_id}'")
    changes = placement_changes(args.change)
    model = workload_model(args.workload, nodes=args.nodes, load=args.load, seed=args.seed)
    run_id = _run_id(args, len(model[0].node_ids))
    if "/" in run_id or run_id in ("", ".", ".."):
        raise UsageError(f"--run-id must be a plain folder name, got '{run_id}'")
    if args.live:
        return _run_live(args, run_id, model, changes)
    run_dir = Path(args.out) / run_id
    if run_dir.exists() and any(run_dir.iterdir()):
        raise SimulationError(f"run folder '{run_dir}' already exists; choose another --run-id")
    from simulator.run import simulate
    from simulator.telemetry import write_run

    topology, arrivals = workload(
        args.workload, nodes=args.nodes, duration=args.duration, load=args.load, seed=args.seed
    )
    result = simulate(
        topology,
        arrivals,
        node_policies(args.policy, args.node_policy, topology.node_ids),
        np.random.default_rng([args.seed, 3]),
        cost_distribution=args.cost_distribution,
        train=args.train,
        engine=args.engine,
        changes=[(topology.origin + at, moves) for at, moves in changes],
    )
    write_run(
        result.telemetry,
        topology,
        args.out,
        run_id,
        files=args.files,
        progress=True,
        versions=result.versions,
    )
    latency = result.trace.out_egress - result.trace.out_stimulus
    worst = float(latency.max()) if latency.size else 0.0
    print(
        f"{run_dir}: {result.events.count} source events, {result.trace.executions} executions, "
        f"{latency.size} outputs; worst latency {worst:.3f} s "
        f"({worst / topology.subinterval:.1f} subintervals)"
        + (f"; {len(result.versions)} placement change(s)" if result.versions else "")
    )
    return 0


def _run_live(
    args: argparse.Namespace,
    run_id: str,
    workload: tuple[Topology, ArrivalModel],
    changes: list[tuple[float, dict[str, str]]],
) -> int:
    from simulator.live import run_live

    topology, model = workload
    stop = threading.Event()

    def request_stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}

    def report(index: int, written: dict[str, int]) -> None:
        rows = ", ".join(f"{name} {count}" for name, count in written.items())
        print(f"flush {index}: {rows or 'nothing due'}", file=sys.stderr, flush=True)

    try:
        run_dir = run_live(
            topology,
            model,
            args.out,
            run_id,
            stop,
            policy=node_policies(args.policy, args.node_policy, topology.node_ids),
            seed=args.seed,
            cost_distribution=args.cost_distribution,
            train=args.train,
            flush_every=args.flush_every,
            on_flush=report,
            changes=changes,
        )
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print(f"{run_dir}: live run stopped")
    return 0
