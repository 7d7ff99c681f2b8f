"""Running ingestion every N seconds with APScheduler (one job, no overlap, coalesced)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from estimator.errors import MaceError
from ingest.errors import IngestError
from ingest.job import BatchSummary, ingest_once, prune_ingested
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
    prune: bool = False,
) -> None:
    """One scheduled pass; errors are logged so the scheduler (and a server) stays up.
    With ``prune``, the landing files now in the manifest are deleted after the pass."""
    try:
        summary = ingest_once(landing, db_path, spark, master=master)
    except MaceError as exc:
        log.error("ingestion failed: %s", exc)
        return
    if prune:
        try:
            prune_ingested(landing, db_path)
        except (MaceError, OSError) as exc:  # what is left is pruned on the next pass
            log.error("deleting ingested landing files failed: %s", exc)
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
    args = [Path(landing), Path(db_path), spark, master, on_batch, prune_ingested]
    _add_job(scheduler, every, args)
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
