"""Options several subcommands share, defined and checked once."""

from __future__ import annotations

import argparse

from estimator.arrivals import MAX_INTERVALS
from estimator.drift import DEFAULT_K
from mace.alerting import AlertSettings, check_webhook
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


def add_alert_options(parser: argparse.ArgumentParser) -> None:
    """``--webhook URL`` and ``--drift-k K``: the alert pass after each ingestion pass."""
    parser.add_argument(
        "--webhook",
        metavar="URL",
        help="POST each new alert as JSON to this http(s) URL (failed deliveries are "
        "retried on the next pass)",
    )
    parser.add_argument(
        "--drift-k",
        type=int,
        default=DEFAULT_K,
        metavar="K",
        help=f"raise a drift alert when the measured latency leaves the predicted band for "
        f"K consecutive subintervals (default {DEFAULT_K})",
    )


def alert_settings(args: argparse.Namespace) -> AlertSettings:
    """The checked alert options."""
    if args.drift_k < 1:
        raise UsageError(f"--drift-k: must be at least 1, got {args.drift_k}")
    webhook = None if args.webhook is None else check_webhook(args.webhook)
    return AlertSettings(webhook=webhook, k=args.drift_k)


DEFAULT_MASTER = "local[*]"
"""ingest.session.DEFAULT_MASTER, not imported from there: importing ``ingest`` loads
pandas, DuckDB and Arrow, too slow for ``mace --help``."""


def add_master(parser: argparse.ArgumentParser) -> None:
    """``--master``: where ingestion's Spark jobs run (docs/cluster.md)."""
    parser.add_argument(
        "--master",
        default=DEFAULT_MASTER,
        help=f"Spark master URL: {DEFAULT_MASTER} (default), local[N], spark://HOST:PORT of a "
        "standalone cluster whose workers see the landing folder at the same path",
    )
