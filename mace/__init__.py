"""The ``mace`` command line: one console script whose subcommands compose the layers."""

from __future__ import annotations

from typing import Any

__all__ = ["main"]


def __getattr__(name: str) -> Any:
    """``mace.main``, imported on first use so that ``python -m mace.cli`` runs cleanly."""
    if name == "main":
        from mace.cli import main

        return main
    raise AttributeError(f"module 'mace' has no attribute {name!r}")
