"""Errors of the dashboard's forms and views; the pages show them as one-line messages."""

from __future__ import annotations

from estimator.errors import MaceError


class OptimizeError(MaceError, ValueError):
    """An optimization request is invalid (unknown algorithm, budget out of range)."""


class ViewError(MaceError, ValueError):
    """A page cannot show what was asked (unknown time range or node, no statistics yet)."""
