"""Fault injection: a writer that produces files slowly, half-written first and
completed later, interleaved with ingestion passes, ends with exactly the totals of one
ingestion of the finished folder."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from ingest.job import ingest_once
from mace.cli import main
from storage.db import connect

pytestmark = [pytest.mark.spark, pytest.mark.slow]

TOTALS = {
    "source_arrivals": "SELECT source, interval, events FROM source_arrivals",
    "operator_stats": "SELECT operator, port, interval, events_in, events_out, cpu_seconds"
    " FROM operator_stats",
    "node_busy": "SELECT node, interval, busy_seconds FROM node_busy",
    "latency_stats": "SELECT query, interval, outputs, lat_max, lat_sum FROM latency_stats",
}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _tables(db: Path) -> dict[str, pd.DataFrame]:
    con = connect(db, read_only=True)
    try:
        frames = {name: con.execute(sql).df() for name, sql in TOTALS.items()}
    finally:
        con.close()
    return {name: f.sort_values(list(f.columns[:3])) for name, f in frames.items()}


def _half(source: Path, target: Path) -> None:
    """The first half of the file's bytes, under its final name (a writer mid-way)."""
    data = source.read_bytes()
    target.write_bytes(data[: len(data) // 2])


def test_half_written_files_end_with_the_one_shot_totals(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    finished = tmp_path / "finished"
    argv = ["simulate", "clickstream", "--out", str(finished), "--run-id", "r",
            "--duration", "8", "--files", "3"]  # fmt: skip
    assert main(argv) == 0
    run = finished / "r"
    # one arrivals file as JSON Lines, so that a half-written last line is exercised too
    parquet = sorted((run / "arrivals").glob("*.parquet"))[0]
    frame = pq.read_table(parquet).to_pandas()
    jsonl = parquet.with_suffix(".jsonl")
    jsonl.write_text(frame.to_json(orient="records", lines=True))
    parquet.unlink()
    reference = tmp_path / "reference.duckdb"
    ingest_once(finished, reference, spark)

    landing = tmp_path / "landing"
    (landing / "r").mkdir(parents=True)
    shutil.copy(run / "topology.yaml", landing / "r" / "topology.yaml")
    files = sorted(p for p in run.rglob("*") if p.is_file() and p.name != "topology.yaml")
    db = tmp_path / "slow.duckdb"
    clock = Clock()
    # the writer goes through the files in three waves; each wave's files are caught
    # half-written by one pass and completed before the next
    for wave in np.array_split(np.arange(len(files)), 3):
        for k in wave:
            target = landing / files[k].relative_to(finished)
            target.parent.mkdir(parents=True, exist_ok=True)
            _half(files[k], target)
        ingest_once(landing, db, spark, clock=clock)
        clock.now += 5.0  # well inside the grace period: nothing is given up
        for k in wave:
            shutil.copy(files[k], landing / files[k].relative_to(finished))
    ingest_once(landing, db, spark, clock=clock)

    expected, got = _tables(reference), _tables(db)
    for name in TOTALS:
        pd.testing.assert_frame_equal(
            got[name].reset_index(drop=True), expected[name].reset_index(drop=True), rtol=1e-9
        )
    con = connect(db, read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM quarantine").fetchall()[0][0] == 0
        ingested = con.execute("SELECT count(*) FROM ingest_files").fetchall()[0][0]
    finally:
        con.close()
    assert ingested == len(files)
