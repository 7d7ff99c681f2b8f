"""Entry point of the ``mace`` console script.

Each subcommand is a module of this package with ``register(subparsers)``; the
modules import heavy dependencies (Spark, Dash, DuckDB, the numba engine) only
inside their ``run`` functions, so ``mace estimate`` starts fast.

User mistakes (:class:`estimator.errors.MaceError`) print one line on stderr
and exit 2; nothing prints a traceback for them. A full disk (or a file size limit)
is one line and exit 1. When the reader of stdout goes
away (``mace ... | head``), the command stops quietly with exit status 141
(128 + SIGPIPE), as a command killed by SIGPIPE reports in a shell, so that
``set -o pipefail`` still notices the cut output.
"""

from __future__ import annotations

import argparse
import difflib
import errno
import os
import sys
from collections.abc import Sequence

from estimator.errors import MaceError
from mace import (
    alerts_command,
    collect_command,
    demo_command,
    estimate_command,
    explain_command,
    ingest_command,
    landing_command,
    place_command,
    plan_command,
    prune_command,
    report_command,
    serve_command,
    simulate_command,
    whatif_command,
)

COMMANDS = (
    estimate_command,
    report_command,
    serve_command,
    demo_command,
    simulate_command,
    place_command,
    ingest_command,
    collect_command,
    explain_command,
    plan_command,
    whatif_command,
    alerts_command,
    prune_command,
    landing_command,
)
BROKEN_PIPE_STATUS = 141
DISTRIBUTION = "mace-latency"


def version() -> str:
    """The installed version of the package (``pyproject.toml``'s), or say it is not
    installed (run from a source tree)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed(DISTRIBUTION)
    except PackageNotFoundError:
        return "(not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mace",
        description="Latency monitoring and what-if for distributed event processing (Mace).",
    )
    parser.add_argument("--version", action="version", version=f"mace {version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in COMMANDS:
        command.register(subparsers)
    return parser


def unknown_command(parser: argparse.ArgumentParser, argv: Sequence[str]) -> str | None:
    """One line for a mistyped subcommand, with the closest ones ("did you mean"), or
    ``None`` when the first argument is an option or a known subcommand."""
    if not argv or argv[0].startswith("-"):
        return None
    names = [
        name
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
        for name in action.choices
    ]
    typed = argv[0]
    if typed in names:
        return None
    close = difflib.get_close_matches(typed, names, n=3, cutoff=0.5)
    hint = (
        f"did you mean {' or '.join(repr(c) for c in close)}?"
        if close
        else f"choose from {', '.join(names)}"
    )
    return f"mace: error: unknown command {typed!r}; {hint}"


DISK_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
"""Write errors of a full disk, a quota or a file size limit: one line and exit 1."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    arguments = sys.argv[1:] if argv is None else list(argv)
    mistyped = unknown_command(parser, arguments)
    if mistyped is not None:
        print(mistyped, file=sys.stderr)
        return 2
    args = parser.parse_args(arguments)
    try:
        status = int(args.run(args) or 0)
        sys.stdout.flush()  # inside the try: a closed pipe must not surface at exit
        return status
    except MaceError as exc:
        print(f"mace {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"mace {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # Python's recommendation (signal module docs, "Note on SIGPIPE"): point stdout at
        # devnull so the interpreter's final flush does not fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return BROKEN_PIPE_STATUS
    except OSError as exc:  # after BrokenPipeError, one of its kind
        if exc.errno not in DISK_FULL:
            raise
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"mace {args.command}: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
