"""Errors of the simulator, reported by the command line as one line."""

from __future__ import annotations

from estimator.errors import MaceError


class SimulationError(MaceError):
    """A bad simulator option or workload (printed as one line by the CLI)."""
