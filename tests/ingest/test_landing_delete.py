"""mace landing delete / compact without Spark: the manifest is written directly, and only
files ingested clean and unchanged since go; the rest of the landing folder stays."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

import pytest

from ingest.compaction import compact_ingested, delete_ingested
from mace.cli import main
from storage import writes
from storage.db import connect
from storage.pending import PendingFile, replace_pending
from tests.ingest.landing import ARRIVALS


def _landing(tmp_path: Path) -> tuple[Path, Path]:
    landing = tmp_path / "landing"
    folder = landing / "r1" / "arrivals"
    folder.mkdir(parents=True)
    names = ["clean-0", "clean-1", "new", "bad", "changed", "pending", ".hidden", "busy"]
    for name in names:
        ARRIVALS.to_parquet(folder / f"{name}.parquet", index=False)
    (folder / "busy.parquet").rename(folder / "busy.parquet.tmp")
    (landing / "r1" / "topology.yaml").write_text("name: r1\n")
    db = tmp_path / "db.duckdb"
    con = connect(db)

    def entry(name: str, quarantined: int = 0) -> writes.ManifestEntry:
        stat = (folder / name).stat()
        path = f"r1/arrivals/{name}"
        return writes.ManifestEntry(
            path, "r1", "arrivals", stat.st_size, stat.st_mtime, 3, quarantined
        )

    entries = [entry("clean-0.parquet"), entry("clean-1.parquet"), entry("bad.parquet", 1)]
    entries += [entry("changed.parquet"), entry(".hidden.parquet")]
    now = datetime.now()
    writes.record_batch(con, 1, entries, rows_kept=13, started_at=now, finished_at=now)
    stat = (folder / "pending.parquet").stat()
    replace_pending(
        con, [PendingFile("r1/arrivals/pending.parquet", stat.st_size, stat.st_mtime, 0.0, "x")]
    )
    con.close()
    os.utime(folder / "changed.parquet", (1.0, 1.0))  # rewritten after ingestion
    return landing, db


def _left(landing: Path) -> list[str]:
    return sorted(p.name for p in (landing / "r1" / "arrivals").iterdir())


KEPT = [".hidden.parquet", "bad.parquet", "busy.parquet.tmp", "changed.parquet", "new.parquet",
        "pending.parquet"]  # fmt: skip


def test_delete_removes_only_clean_ingested_files(tmp_path: Path) -> None:
    landing, db = _landing(tmp_path)
    everything = _left(landing)
    con = connect(db)
    try:
        dry = delete_ingested(con, landing, dry_run=True)
        assert dry.files == 2 and _left(landing) == everything
        result = delete_ingested(con, landing, dry_run=False)
        states = dict(
            con.execute("SELECT path, landing FROM ingest_files ORDER BY path").fetchall()
        )
    finally:
        con.close()
    assert result.files == 2
    assert _left(landing) == KEPT
    assert result.skipped == {
        "r1/arrivals/.hidden.parquet": "hidden or in-progress name",
        "r1/arrivals/changed.parquet": "changed since it was ingested",
    }
    assert states["r1/arrivals/clean-0.parquet"] == "deleted"
    assert states["r1/arrivals/bad.parquet"] is None


def test_compact_merges_only_clean_ingested_files(tmp_path: Path) -> None:
    landing, db = _landing(tmp_path)
    con = connect(db)
    try:
        result = compact_ingested(con, landing, dry_run=False)
        paths = {r[0] for r in con.execute("SELECT path FROM landing_compactions").fetchall()}
    finally:
        con.close()
    assert result.files == 2 and len(result.written) == 1
    assert paths == set(result.written)
    assert _left(landing) == sorted([*KEPT, Path(result.written[0]).name])


def test_landing_command_dry_run_and_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    landing, db = _landing(tmp_path)
    before = _left(landing)
    argv = ["landing", "delete", "--landing", str(landing), "--db", str(db), "--dry-run"]
    assert main(argv) == 0
    assert capsys.readouterr().out.startswith("would delete 2 file(s)")
    assert _left(landing) == before
    assert main(["landing", "compact", "--landing", str(tmp_path / "no"), "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mace landing: error: landing folder") and len(err.splitlines()) == 1
