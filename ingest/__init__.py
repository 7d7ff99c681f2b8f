"""Spark ingestion: raw telemetry in the landing folder -> per-subinterval statistics in DuckDB.

:func:`ingest.job.ingest_once` makes one pass (extract -> pure transforms in
:mod:`ingest.transforms` -> load); :func:`ingest.scheduler.start_scheduler` runs
it every N seconds in-process. pyspark is imported lazily (only when a pass
has files to read), so importing this package is cheap.
"""

from __future__ import annotations

from ingest.errors import IngestError
from ingest.job import BatchSummary, ingest_once
from ingest.scheduler import run_every, start_scheduler

__all__ = ["BatchSummary", "IngestError", "ingest_once", "run_every", "start_scheduler"]
