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
from ingest.errors import IngestError
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
