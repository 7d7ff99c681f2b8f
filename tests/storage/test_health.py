"""Reads behind the Data health page, on a real DuckDB file."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pandas as pd

from storage import health, writes
from storage.db import connect


def _batch(con, batch_id: int, start: datetime, kept: int, bad: int) -> None:  # type: ignore[no-untyped-def]
    entry = writes.ManifestEntry(
        f"r/executions/{batch_id}.parquet", "r", "executions", 10, 1.0, kept + bad, bad
    )
    writes.record_batch(
        con,
        batch_id,
        [entry],
        rows_kept=kept,
        started_at=start,
        finished_at=start + timedelta(seconds=batch_id),
    )


def test_batches_newest_first_and_bounded(tmp_path: Path) -> None:
    con = connect(tmp_path / "h.duckdb")
    start = datetime(2026, 11, 22, 3, 0, 0)
    for batch_id in range(1, 8):
        _batch(
            con,
            batch_id,
            start + timedelta(minutes=batch_id),
            kept=100 * batch_id,
            bad=batch_id % 2,
        )
    batches = health.recent_batches(con, limit=3)
    assert [b.batch_id for b in batches] == [7, 6, 5]
    assert batches[0].rows_kept == 700 and batches[0].rows_quarantined == 1
    assert batches[1].seconds == 6.0
    con.close()


def test_quarantine_grouped_by_reason_with_an_example(tmp_path: Path) -> None:
    con = connect(tmp_path / "h.duckdb")
    bad = pd.DataFrame(
        {
            "run_id": ["r", "r", "r", "other", "r"],
            "record_set": ["executions", "executions", "outputs", "executions", "executions"],
            "file": [
                "r/executions/a.parquet",
                "r/executions/b.parquet",
                "r/outputs/o.jsonl",
                "x",
                "r/executions/a.parquet",
            ],
            "row_number": [3, 1, None, 1, 9],
            "reason": [
                "negative stimulus_time",
                "negative stimulus_time",
                "unreadable file",
                "nope",
                "negative stimulus_time",
            ],
            "raw": ["{...}", "{...}", None, None, "{...}"],
        }
    )
    writes.add_quarantine(con, 1, bad.iloc[:4])
    writes.add_quarantine(con, 2, bad.iloc[4:])
    reasons = health.quarantine_reasons(con, "r")
    assert reasons[["record_set", "reason", "rows", "files"]].values.tolist() == [
        ["executions", "negative stimulus_time", 3, 2],
        ["outputs", "unreadable file", 1, 1],
    ]
    assert reasons["example"].tolist() == [
        "r/executions/a.parquet row 3",
        "r/outputs/o.jsonl (whole file)",
    ]
    rows = health.quarantined_rows(con, "r", limit=2)
    assert rows["batch_id"].tolist() == [2, 1]  # newest batch first
    assert rows["row_number"].tolist()[0] == 9
    assert health.quarantine_reasons(con, "unknown").empty
    con.close()
