"""Errors of the command line itself (the other layers' errors live in their packages)."""

from __future__ import annotations

from estimator.errors import MaceError


class UsageError(MaceError):
    """A command-line option is out of range or contradicts another (exit 2, one line)."""
