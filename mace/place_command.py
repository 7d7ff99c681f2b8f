"""``mace place``: search an operator placement that minimizes MaceWC (paper section IX-B)."""

from __future__ import annotations

import argparse
import json
import math
import sys

from mace.errors import UsageError
from mace.options import add_max_intervals, max_intervals

DEFAULT_SEED = 0


def register(subparsers: argparse._SubParsersAction) -> None:
    from estimator.placement import ALGORITHMS, DEFAULT_BUDGET

    parser = subparsers.add_parser(
        "place",
        help="find an operator placement with low worst-case latency (MaceWC)",
        description="Place the topology's operators on its nodes with one of the placement "
        "algorithms and report the placement and its MaceWC. Algorithms: "
        + ", ".join(ALGORITHMS)
        + ".",
    )
    parser.add_argument("topology", help="topology file (YAML or JSON)")
    parser.add_argument("--arrivals", required=True, help="arrival series: source,interval,events")
    parser.add_argument(
        "--algorithm", default="mace-hc", help=f"one of {', '.join(ALGORITHMS)} (default mace-hc)"
    )
    parser.add_argument(
        "--budget",
        type=float,
        default=DEFAULT_BUDGET,
        help=f"time budget in seconds (default {DEFAULT_BUDGET:g})",
    )
    parser.add_argument(
        "--seed", type=int, default=DEFAULT_SEED, help=f"random seed (default {DEFAULT_SEED})"
    )
    parser.add_argument(
        "--max-moves",
        type=int,
        default=None,
        metavar="N",
        help="move at most N operators from the topology's placement (default: no cap); "
        "the moves whose undoing costs least are undone first",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print {placement, mace_wc, seconds, evaluations} as one JSON object",
    )
    add_max_intervals(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from estimator.evaluator import estimate
    from estimator.loaders import load_arrivals, load_topology
    from estimator.placement import ALGORITHMS, place

    if args.algorithm not in ALGORITHMS:
        raise UsageError(
            f"--algorithm: unknown algorithm '{args.algorithm}' "
            f"(expected one of {', '.join(ALGORITHMS)})"
        )
    if not math.isfinite(args.budget) or args.budget <= 0:
        raise UsageError(f"--budget: must be a positive number of seconds, got {args.budget}")
    if args.seed < 0:
        raise UsageError(f"--seed: must not be negative, got {args.seed}")
    if args.max_moves is not None and args.max_moves < 0:
        raise UsageError(f"--max-moves: must not be negative, got {args.max_moves}")
    limit = max_intervals(args)
    topology = load_topology(args.topology)
    arrivals = load_arrivals(args.arrivals, topology, max_intervals=limit)
    progress = _ProgressBar() if not args.json and sys.stderr.isatty() else None
    try:
        result = place(
            topology,
            arrivals,
            args.algorithm,
            budget=args.budget,
            rng=np.random.default_rng(args.seed),
            progress=progress.update if progress else None,
            max_moves=args.max_moves,
        )
    finally:
        if progress:
            progress.close()
    if args.json:
        print(json.dumps(result.to_json()))
        return 0
    current = estimate(topology, arrivals).worst_case
    print(f"{topology.name}: {args.algorithm} placement of {len(result.placement)} operators")
    print(f"  MaceWC          {result.mace_wc:.4f} s (current placement {current:.4f} s)")
    print(
        f"  search          {result.seconds:.2f} s, {result.evaluations} evaluations, "
        f"best after {result.time_to_best:.2f} s"
    )
    print(f"  nodes used      {result.nodes_used} of {len(topology.nodes)}")
    count = sum(topology.placement[op] != node for op, node in result.placement.items())
    cap = "" if args.max_moves is None else f" (at most {args.max_moves})"
    print(f"  moves           {count} of {len(result.placement)} operators{cap}")
    for key, value in result.details.items():
        if key == "max_moves":  # on the moves line
            continue
        shown = f"{value:.4f}" if isinstance(value, float) else str(value)
        print(f"  {key.replace('_', ' '):<15} {shown}")
    print("  placement:")
    for op_id, node in result.placement.items():
        moved = "" if topology.placement[op_id] == node else f"  (was {topology.placement[op_id]})"
        print(f"    {op_id:<16} {node}{moved}")
    return 0


class _ProgressBar:
    """A tqdm bar over the budget showing the best MaceWC so far."""

    def __init__(self) -> None:
        from tqdm import tqdm

        self.bar = tqdm(total=100, desc="placing", unit="%", leave=False, file=sys.stderr)

    def update(self, fraction: float, best: float) -> None:
        self.bar.n = round(100 * fraction)
        self.bar.set_postfix_str(f"best MaceWC {best:.4f} s", refresh=True)

    def close(self) -> None:
        self.bar.close()
