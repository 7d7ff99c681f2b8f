"""Running ingestion every N seconds with APScheduler (one job, no overlap, coalesced)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from estimator.errors import MaceError
from ingest.errors import IngestError
from ingest.job import BatchSummary, ingest_once
from ingest.session import DEFAULT_MASTER

if TYPE_CHECKING:
    from apscheduler.schedulers.base import BaseScheduler
    from pyspark.sql import SparkSession

JOB_ID = "mace-ingest"
log = logging.getLogger("mace.ingest")


def _job(
    landing: Path,
    db_path: Path,
    spark: SparkSession | None,
    master: str,
    on_batch: Callable[[BatchSummary], None] | None,
) -> None:
    """One scheduled pass; errors are logged so the scheduler (and a server) stays up."""
    try:
        summary = ingest_once(landing, db_path, spark, master=master)
    except MaceError as exc:
        log.error("ingestion failed: %s", exc)
        return
    log.info("%s", summary.describe())
    if on_batch is not None:
        on_batch(summary)


def _add_job(scheduler: BaseScheduler, every: float, args: list[Any]) -> None:
    if every <= 0:
        raise IngestError(f"--every must be a positive number of seconds, got {every:g}")
    scheduler.add_job(
        _job,
        "interval",
        seconds=every,
        args=args,
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
) -> BaseScheduler:
    """Start a BackgroundScheduler that ingests now and then every ``every`` seconds.

    For ``mace serve``: the same process owns the writable DuckDB file. Stop it
    with ``scheduler.shutdown()``.
    """
    from apscheduler.schedulers.background import BackgroundScheduler

    scheduler = BackgroundScheduler()
    _add_job(scheduler, every, [Path(landing), Path(db_path), spark, master, on_batch])
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
    _add_job(scheduler, every, [Path(landing), Path(db_path), None, master, on_batch])
    try:
        scheduler.start()
    except (KeyboardInterrupt, SystemExit):
        scheduler.shutdown(wait=False)
