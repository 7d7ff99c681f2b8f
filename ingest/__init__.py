"""Spark ingestion: raw telemetry in the landing folder -> per-subinterval statistics in DuckDB.

:func:`ingest.job.ingest_once` makes one pass (extract -> pure transforms in
:mod:`ingest.transforms` -> load); :func:`ingest.scheduler.start_scheduler` runs
it every N seconds in-process. Import pyspark lazily: this package is imported
by the CLI.
"""
