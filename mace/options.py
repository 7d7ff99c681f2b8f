"""Options several subcommands share, defined and checked once."""

from __future__ import annotations

import argparse

from estimator.arrivals import MAX_INTERVALS
from mace.errors import UsageError

AUTH_ENV = "MACE_DASHBOARD_AUTH"
"""USER:PASSWORD for the dashboard's basic authentication (mace serve sets it up,
mace report --url sends it)."""


def add_max_intervals(parser: argparse.ArgumentParser) -> None:
    """``--max-intervals``: the longest arrival series read (refused before allocating)."""
    parser.add_argument(
        "--max-intervals",
        type=int,
        default=MAX_INTERVALS,
        help=f"refuse arrival series longer than this many subintervals (default "
        f"{MAX_INTERVALS:,}; each costs memory per source, operator and node)",
    )


def max_intervals(args: argparse.Namespace) -> int:
    """The checked ``--max-intervals`` value."""
    if args.max_intervals < 1:
        raise UsageError(f"--max-intervals: must be at least 1, got {args.max_intervals}")
    return int(args.max_intervals)
