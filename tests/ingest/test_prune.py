"""Pruning ingested landing files (``mace demo`` only): the demo's
landing folder grew by about 150 MB a minute because every file stayed after ingestion.

The manifest is written directly (no Spark): files it lists are deleted, others (new
files, files being written, the topology) stay; the scheduler prunes only when asked.
"""

from __future__ import annotations

import threading
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from ingest import scheduler
from ingest.job import BatchSummary, prune_ingested
from storage import writes
from storage.db import connect
from storage.reads import ingested_paths


def _landing(tmp_path: Path) -> tuple[Path, Path]:
    landing = tmp_path / "landing"
    run = landing / "r1"
    for record_set in ("arrivals", "executions", "outputs"):
        (run / record_set).mkdir(parents=True)
        for k in range(2):
            (run / record_set / f"part-{k}.parquet").write_bytes(b"x")
    (run / "outputs" / ".part-9.parquet.tmp").write_bytes(b"in progress")
    (run / "topology.yaml").write_text("name: r1\n")
    db = tmp_path / "db.duckdb"
    con = connect(db)
    entries = [
        writes.ManifestEntry(f"r1/{rs}/part-0.parquet", "r1", rs, 1, 0.0, 1, 0)
        for rs in ("arrivals", "executions", "outputs")
    ]
    now = datetime.now()
    writes.record_batch(con, 1, entries, rows_kept=3, started_at=now, finished_at=now)
    con.close()
    return landing, db


def _left(landing: Path) -> list[str]:
    return sorted(p.relative_to(landing).as_posix() for p in landing.rglob("*") if p.is_file())


def test_prune_deletes_only_files_in_the_manifest(tmp_path: Path) -> None:
    landing, db = _landing(tmp_path)
    assert prune_ingested(landing, db) == 3
    assert _left(landing) == [
        "r1/arrivals/part-1.parquet",
        "r1/executions/part-1.parquet",
        "r1/outputs/.part-9.parquet.tmp",
        "r1/outputs/part-1.parquet",
        "r1/topology.yaml",
    ]
    con = connect(db)
    try:  # the manifest keeps them: they are never looked for again
        assert len(ingested_paths(con)) == 3
    finally:
        con.close()
    assert prune_ingested(landing, db) == 0  # nothing more to do


@pytest.mark.parametrize("prune", [False, True])
def test_scheduler_prunes_only_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, prune: bool
) -> None:
    landing, db = _landing(tmp_path)
    before = _left(landing)
    monkeypatch.setattr(scheduler, "ingest_once", lambda *a, **k: BatchSummary(batch_id=1, files=3))
    done = threading.Event()

    def on_batch(summary: Any) -> None:
        done.set()

    running = scheduler.start_scheduler(landing, db, 60, on_batch=on_batch, prune_ingested=prune)
    try:
        assert done.wait(timeout=20)
    finally:
        running.shutdown(wait=True)
    left = _left(landing)
    assert (len(left) == len(before) - 3) if prune else (left == before)
