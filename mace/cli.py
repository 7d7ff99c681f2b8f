"""Entry point of the ``mace`` console script.

Each layer registers its subcommands from a ``command`` module that imports
heavy dependencies (Spark, Dash) only when its subcommand runs, so ``mace
estimate`` starts fast. User mistakes (:class:`estimator.errors.MaceError`)
print one line on stderr and exit 2; nothing prints a traceback for them.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from estimator.errors import MaceError

COMMAND_MODULES = (
    "mace.estimate_command",
    "dashboard.command",
    "simulator.command",
    "mace.place_command",
    "ingest.command",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mace",
        description="Latency monitoring and what-if for distributed event processing (Mace).",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except MaceError as exc:
        print(f"mace {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"mace {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
