"""Options several subcommands share, defined and checked once."""

from __future__ import annotations

import argparse

from estimator.arrivals import MAX_INTERVALS
from mace.errors import UsageError


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


DEFAULT_MASTER = "local[*]"
"""ingest.session.DEFAULT_MASTER, not imported from there: importing ``ingest`` loads
pandas, DuckDB and Arrow, too slow for ``mace --help``."""


def add_master(parser: argparse.ArgumentParser) -> None:
    """``--master``: where ingestion's Spark jobs run (README "Ingestion on a cluster")."""
    parser.add_argument(
        "--master",
        default=DEFAULT_MASTER,
        help=f"Spark master URL: {DEFAULT_MASTER} (default), local[N], spark://HOST:PORT of a "
        "standalone cluster whose workers see the landing folder at the same path",
    )
