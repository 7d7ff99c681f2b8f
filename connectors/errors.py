"""Errors of the engine connectors."""

from __future__ import annotations

from estimator.errors import MaceError


class ConnectorError(MaceError):
    """A connector cannot read the engine (wrong address, missing job, bad answer)."""
