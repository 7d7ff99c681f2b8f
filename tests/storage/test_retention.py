"""Retention (mace prune): exactly the chosen runs' rows go, from every per-run table, in
one transaction; a dry run changes nothing; a run being ingested is never pruned."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest

from storage import retention, scenarios, writes
from storage.db import connect
from storage.errors import StorageError
from storage.pending import PendingFile, replace_pending
from tests.dashboard.builders import write_small_run

NOW = datetime(2026, 1, 31, 12, 0)


def _store(tmp_path: Path) -> Path:
    """Runs old (40 days), mid (10 days), new (1 hour) and busy (40 days, a pending file),
    each with a second version that rescales n1 after a restart."""
    db = tmp_path / "store.duckdb"
    rescaled = (2.0, {"a": "n2", "b": "n2", "c": "n1"}, {"n1": 2.0}, 1.5)
    for run_id in ("old", "mid", "new", "busy"):
        write_small_run(db, run_id, [rescaled])
    con = connect(db)
    try:
        for run_id in ("old", "mid", "new", "busy"):
            writes.merge_node_profile(
                con,
                pd.DataFrame(
                    {"run_id": run_id, "node": "n1", "interval": [0, 0, 1],
                     "sub_bucket": [0, 3, 7], "cpu_seconds": [0.5, 0.25, 1.0]}
                ),
            )  # fmt: skip
            writes.merge_source_profile(
                con,
                pd.DataFrame(
                    {"run_id": run_id, "source": "s", "interval": [0, 1],
                     "sub_bucket": [2, 5], "events": [3, 1]}
                ),
            )  # fmt: skip
        for batch, (run_id, age) in enumerate(
            [("old", timedelta(days=40)), ("mid", timedelta(days=10)),
             ("new", timedelta(hours=1)), ("busy", timedelta(days=40))], start=1,
        ):  # fmt: skip
            when = NOW - age
            entry = writes.ManifestEntry(
                f"{run_id}/arrivals/p.parquet", run_id, "arrivals", 1, 0, 5, 0
            )
            writes.record_batch(con, batch, [entry], rows_kept=5, started_at=when, finished_at=when)
            scenarios.save_scenario(con, run_id, "s", {"placement": {}})
            scenarios.set_objective(con, run_id, "q1", 1.0)
        replace_pending(
            con, [PendingFile("busy/outputs/late.parquet", 1, 0.0, 0.0, "being written")]
        )
    finally:
        con.close()
    return db


def _counts(db: Path) -> dict[str, dict[str, int]]:
    """Rows per table and run."""
    con = connect(db)
    try:
        return {
            table: dict(
                con.execute(f"SELECT run_id, count(*) FROM {table} GROUP BY ALL").fetchall()
            )
            for table in (*retention.PER_RUN_TABLES, "ingest_files")
        }
    finally:
        con.close()


def _choose(db: Path, **rule: float) -> list[str]:
    con = connect(db)
    try:
        chosen, _ = retention.choose_runs(retention.run_ages(con, NOW), NOW, **rule)  # type: ignore[arg-type]
    finally:
        con.close()
    return [a.run_id for a in chosen]


def test_rules_spare_runs_being_ingested(tmp_path: Path) -> None:
    db = _store(tmp_path)
    assert _choose(db, older_than_days=30) == ["old"]  # busy is as old but has a pending file
    assert _choose(db, older_than_days=5) == ["mid", "old"]
    assert _choose(db, keep_last=1) == ["mid", "old"]
    con = connect(db)
    try:  # within the live window, even an old rule spares it
        ages = retention.run_ages(con, NOW, live_minutes=120)
    finally:
        con.close()
    assert {a.run_id: a.live is not None for a in ages} == {
        "new": True, "mid": False, "old": False, "busy": True,
    }  # fmt: skip


def test_prune_removes_exactly_the_chosen_runs_rows(tmp_path: Path) -> None:
    db = _store(tmp_path)
    before = _counts(db)
    assert all(
        before[t].get("old", 0) > 0
        for t in retention.PER_RUN_TABLES
        if t not in ("links", "sample_state", "quarantine")
    )
    con = connect(db)
    try:
        counted = retention.run_rows(con, ["old", "mid"])
        deleted = retention.delete_runs(con, ["old", "mid"])
    finally:
        con.close()
    assert counted == deleted
    after = _counts(db)
    for table in retention.PER_RUN_TABLES:
        expected = {r: n for r, n in before[table].items() if r not in ("old", "mid")}
        assert after[table] == expected, table
        assert deleted[table] == sum(before[table].get(r, 0) for r in ("old", "mid"))
    assert after["ingest_files"] == before["ingest_files"]  # the manifest stays


def test_a_failure_midway_deletes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = _store(tmp_path)
    before = _counts(db)
    # the last table fails (it does not exist) after every other table's delete ran
    monkeypatch.setattr(retention, "PER_RUN_TABLES", (*retention.PER_RUN_TABLES, "no_such_table"))
    con = connect(db)
    try:
        with pytest.raises(StorageError):
            retention.delete_runs(con, ["old"])
    finally:
        con.close()
    monkeypatch.undo()
    assert _counts(db) == before
