"""Errors of the ingestion, reported by the command line as one line."""

from __future__ import annotations

from estimator.errors import MaceError


class IngestError(MaceError):
    """Ingestion cannot run (e.g. the landing folder does not exist)."""
