"""Errors of the ingestion, reported by the command line as one line."""

from __future__ import annotations

from estimator.errors import MaceError


class IngestError(MaceError):
    """Ingestion cannot run (e.g. the landing folder does not exist)."""


class SparkUnavailable(IngestError):
    """The Spark cluster cannot run jobs now (master unreachable, no executors, session
    stopped): nothing is wrong with the files, so nothing is quarantined; a scheduled
    ingestion retries later with a new session."""
