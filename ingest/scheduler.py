"""Running ingestion every N seconds with APScheduler (one job, no overlap, coalesced),
one SparkSession across passes, and a capped back-off while Spark is unavailable."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from estimator.errors import MaceError
from ingest.errors import IngestError, SparkUnavailable
from ingest.job import BatchSummary, ingest_once, prune_ingested
from ingest.session import DEFAULT_MASTER, spark_problem, stop_spark

if TYPE_CHECKING:
    from apscheduler.schedulers.base import BaseScheduler
    from pyspark.sql import SparkSession

JOB_ID = "mace-ingest"
log = logging.getLogger("mace.ingest")


BACKOFF_CAP = 60.0
"""Longest wait, in seconds, between attempts while Spark is unavailable (or the period,
if longer)."""


@dataclass
class _Ingestion:
    """The scheduled pass, with what must outlive one pass: the retry state.

    The SparkSession outlives passes too: each pass reuses the process's session
    (:func:`ingest.session.ready_spark`), against a cluster as well. When Spark cannot run
    jobs (:class:`SparkUnavailable`: master unreachable, no executors, session ended),
    one line is logged, the session is dropped and the pass retried after 1, 2, 4...
    periods, at most :data:`BACKOFF_CAP` seconds; the first pass that succeeds again
    says so. Other user-facing errors are logged and the next pass runs as usual."""

    landing: Path
    db_path: Path
    every: float
    spark: SparkSession | None = None
    master: str = DEFAULT_MASTER
    on_batch: Callable[[BatchSummary], None] | None = None
    prune: bool = False
    failures: int = 0
    skip: int = 0

    def __call__(self) -> None:
        """One scheduled pass; errors are logged so the scheduler (and a server) stays
        up. With ``prune``, the landing files now in the manifest are deleted after it."""
        if self.skip > 0:
            self.skip -= 1
            return
        try:
            summary = ingest_once(self.landing, self.db_path, self.spark, master=self.master)
        except SparkUnavailable as exc:
            self._back_off(str(exc))
            return
        except MaceError as exc:
            log.error("ingestion failed: %s", exc)
            return
        except Exception:
            problem = spark_problem()
            if problem is None:
                raise  # APScheduler logs it with its traceback; the schedule goes on
            self._back_off(problem)
            return
        if self.failures:
            log.warning(
                "ingestion resumed: Spark is back after %d failed attempt(s)", self.failures
            )
            self.failures = 0
        if self.prune:
            try:
                prune_ingested(self.landing, self.db_path)
            except (MaceError, OSError) as exc:  # what is left is pruned on the next pass
                log.error("deleting ingested landing files failed: %s", exc)
        log.info("%s", summary.describe())
        if self.on_batch is not None:
            self.on_batch(summary)

    def _back_off(self, reason: str) -> None:
        self.failures += 1
        periods = min(2 ** (self.failures - 1), max(1, int(BACKOFF_CAP // self.every)))
        self.skip = periods - 1
        log.error(
            "ingestion paused: %s; retrying in %g s (attempt %d failed)",
            reason,
            periods * self.every,
            self.failures,
        )
        if self.spark is None:  # a session of our own: the next attempt starts a new one
            try:
                stop_spark()
            except Exception as exc:  # a half-dead gateway: the next attempt says more
                log.debug("stopping the Spark session failed: %s", exc)


def _add_job(scheduler: BaseScheduler, job: _Ingestion) -> None:
    if job.every <= 0:
        raise IngestError(f"--every must be a positive number of seconds, got {job.every:g}")
    scheduler.add_job(
        job,
        "interval",
        seconds=job.every,
        id=JOB_ID,
        replace_existing=True,
        max_instances=1,
        coalesce=True,
        misfire_grace_time=None,
        next_run_time=_now(),
    )


def _now() -> Any:
    from datetime import datetime

    return datetime.now().astimezone()


def start_scheduler(
    landing: str | Path,
    db_path: str | Path,
    every: float,
    *,
    spark: SparkSession | None = None,
    master: str = DEFAULT_MASTER,
    on_batch: Callable[[BatchSummary], None] | None = None,
    prune_ingested: bool = False,
) -> BaseScheduler:
    """Start a BackgroundScheduler that ingests now and then every ``every`` seconds.

    For ``mace serve``: the same process owns the writable DuckDB file. Stop it
    with ``scheduler.shutdown()``. ``prune_ingested`` deletes each landing file once it
    is in the manifest (:func:`ingest.job.prune_ingested`): for ``mace demo``'s own
    landing folder only, never a user's.
    """
    from apscheduler.schedulers.background import BackgroundScheduler

    scheduler = BackgroundScheduler()
    job = _Ingestion(Path(landing), Path(db_path), every, spark, master, on_batch, prune_ingested)
    _add_job(scheduler, job)
    scheduler.start()
    return scheduler


def run_every(
    landing: str | Path,
    db_path: str | Path,
    every: float,
    *,
    master: str = DEFAULT_MASTER,
    on_batch: Callable[[BatchSummary], None] | None = None,
) -> None:
    """Ingest now and every ``every`` seconds in the foreground until Ctrl-C."""
    from apscheduler.schedulers.blocking import BlockingScheduler

    scheduler = BlockingScheduler()
    _add_job(scheduler, _Ingestion(Path(landing), Path(db_path), every, None, master, on_batch))
    try:
        scheduler.start()
    except (KeyboardInterrupt, SystemExit):
        scheduler.shutdown(wait=False)
