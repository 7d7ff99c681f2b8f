"""The ingestion scheduler's error handling: a failing pass is logged and the schedule goes on.

``ingest_once`` is replaced by a stub (no Spark): the first pass raises a user-facing
error (logged by ``mace.ingest``, ``on_batch`` not called), the second an unexpected
error (logged by APScheduler with its traceback), the third succeeds.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

import pytest

from ingest import scheduler
from ingest.errors import IngestError, SparkUnavailable
from ingest.job import BatchSummary


def test_failing_passes_are_logged_and_the_next_pass_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    outcomes: list[Exception | BatchSummary] = [
        IngestError("landing folder vanished"),
        RuntimeError("disk on fire"),
        BatchSummary(batch_id=7, files=2),
    ]
    calls: list[tuple[Path, Path]] = []

    def fake_ingest_once(landing: Path, db: Path, spark: Any, *, master: str) -> BatchSummary:
        calls.append((landing, db))
        outcome = outcomes[min(len(calls), len(outcomes)) - 1]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    monkeypatch.setattr(scheduler, "ingest_once", fake_ingest_once)
    batches: list[BatchSummary] = []
    done = threading.Event()

    def on_batch(summary: BatchSummary) -> None:
        batches.append(summary)
        done.set()

    caplog.set_level(logging.INFO)
    running = scheduler.start_scheduler(tmp_path, tmp_path / "db.duckdb", 0.2, on_batch=on_batch)
    try:
        assert done.wait(timeout=20), "the pass after two failures did not run"
    finally:
        running.shutdown(wait=True)
    assert calls[:3] == [(tmp_path, tmp_path / "db.duckdb")] * 3
    assert batches[0].batch_id == 7  # on_batch saw only the successful pass
    assert len(batches) == len(calls) - 2
    ours = [r for r in caplog.records if r.name == "mace.ingest" and r.levelno == logging.ERROR]
    assert [r.getMessage() for r in ours] == ["ingestion failed: landing folder vanished"]
    theirs = [r for r in caplog.records if r.name.startswith("apscheduler") and r.exc_info]
    assert len(theirs) == 1 and isinstance(theirs[0].exc_info[1], RuntimeError)


def test_non_positive_period_is_an_ingest_error(tmp_path: Path) -> None:
    with pytest.raises(IngestError, match="--every must be a positive number"):
        scheduler.start_scheduler(tmp_path, tmp_path / "db.duckdb", 0)


def test_spark_unavailable_backs_off_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Passes fail while Spark is away: one line each, then 1, 2, 4 periods apart (the cap
    here: 4 periods), the session dropped each time; the first pass that works says so."""
    failing = 4
    calls: list[int] = []
    tick = [0]

    def fake_ingest_once(landing: Path, db: Path, spark: Any, *, master: str) -> BatchSummary:
        calls.append(tick[0])
        if len(calls) <= failing:
            raise SparkUnavailable("Spark master spark://h:7077 is unreachable (refused)")
        return BatchSummary(batch_id=1, files=1)

    stopped: list[bool] = []
    monkeypatch.setattr(scheduler, "ingest_once", fake_ingest_once)
    monkeypatch.setattr(scheduler, "stop_spark", lambda: stopped.append(True))
    monkeypatch.setattr(scheduler, "BACKOFF_CAP", 40.0)
    job = scheduler._Ingestion(tmp_path, tmp_path / "db.duckdb", 10.0, master="spark://h:7077")
    caplog.set_level(logging.INFO)
    for tick[0] in range(20):  # what APScheduler does every 10 s
        job()
    # attempts at ticks 0, 1 (after 1 period), 3 (2), 7 (4), 11 (4: capped), then each tick
    assert calls[:6] == [0, 1, 3, 7, 11, 12]
    assert len(stopped) == failing
    lines = [r.getMessage() for r in caplog.records if r.name == "mace.ingest"]
    assert lines[:4] == [
        "ingestion paused: Spark master spark://h:7077 is unreachable (refused); "
        f"retrying in {delay} s (attempt {n} failed)"
        for n, delay in enumerate([10, 20, 40, 40], start=1)
    ]
    assert lines[4] == "ingestion resumed: Spark is back after 4 failed attempt(s)"
