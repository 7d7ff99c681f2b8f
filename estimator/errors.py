"""Errors raised for user mistakes; the command line prints them as one line."""

from __future__ import annotations


class MaceError(Exception):
    """Base class of every error the project reports to a user without a traceback."""


class ModelError(MaceError, ValueError):
    """A topology, placement or arrival series is invalid; the message names the entry."""


class ScenarioError(MaceError, ValueError):
    """A what-if scenario edit is invalid; the message names the offending value."""
