"""Each hostile file of :data:`tests.hostile.cases.COMMAND_CASES` given to a command: one
line on stderr naming the problem, exit 2, no traceback; a foreign store is left as it
was."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from mace.cli import main
from tests.hostile.cases import COMMAND_CASES, DISK_CASES, CommandCase, DiskCase


@pytest.mark.parametrize("case", COMMAND_CASES, ids=[c.id for c in COMMAND_CASES])
def test_hostile_file_gives_one_line(
    case: CommandCase, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    arguments = case.arguments(tmp_path)
    status = main(arguments)
    err = capsys.readouterr().err
    assert status == case.status, err
    assert case.message in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_a_foreign_store_is_not_written(tmp_path: Path) -> None:
    """Neither a reading nor a writing command adds tables to another program's file."""
    path = next(Path(a) for a in COMMAND_CASES[-5].arguments(tmp_path) if a.endswith(".duckdb"))
    for command in (["report", "--db", str(path)], ["alerts", "--db", str(path)]):
        assert main(command) == 2
    landing = tmp_path / "landing"
    landing.mkdir()
    assert main(["ingest", str(landing), "--db", str(path)]) == 2
    con = duckdb.connect(str(path), read_only=True)
    try:
        assert con.execute("SHOW TABLES").fetchall() == [("runs",)]
    finally:
        con.close()


def test_a_full_disk_during_compaction_leaves_no_tmp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two ingested JSON Lines files of a record set are merged; the disk fills up while
    the merged file is written: no ``.tmp`` file stays, both files stay, one line."""
    import errno
    from datetime import datetime

    from ingest import compaction
    from ingest.errors import IngestError
    from storage import writes
    from storage.db import connect

    landing = tmp_path / "landing"
    folder = landing / "r1" / "arrivals"
    folder.mkdir(parents=True)
    entries = []
    for k in range(2):
        path = folder / f"part-{k}.jsonl"
        path.write_text('{"source": "s", "stimulus_time": 100.5}\n')
        stat = path.stat()
        entries.append(writes.ManifestEntry(
            f"r1/arrivals/{path.name}", "r1", "arrivals", stat.st_size, stat.st_mtime, 1, 0
        ))  # fmt: skip
    con = connect(tmp_path / "store.duckdb")
    try:
        now = datetime(2026, 1, 1)
        writes.record_batch(con, 1, entries, rows_kept=2, started_at=now, finished_at=now)

        def full_disk(landing: Path, group: object, target: Path) -> int:
            target.write_bytes(b'{"source": "s", "stimu')
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(compaction, "_write_json", full_disk)
        with pytest.raises(IngestError, match="No space left on device"):
            compaction.compact_ingested(con, landing, dry_run=False)
    finally:
        con.close()
    assert sorted(p.name for p in folder.iterdir()) == ["part-0.jsonl", "part-1.jsonl"]


@pytest.mark.parametrize("case", DISK_CASES, ids=[c.id for c in DISK_CASES])
def test_a_full_disk_is_one_line(case: DiskCase, tmp_path: Path) -> None:
    import resource
    import subprocess
    import sys

    from tests.connectors.flink_fixture import FakeFlink, serve

    def limit_file_size() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (case.limit, case.limit))

    out = tmp_path / "out"
    with serve(FakeFlink()) as url:
        done = subprocess.run(
            [sys.executable, "-m", "mace", *case.arguments(out, url)],
            capture_output=True,
            text=True,
            timeout=240,
            preexec_fn=limit_file_size,
        )
    err = done.stderr.strip()
    assert done.returncode == case.status, err
    assert case.message in err and "Traceback" not in err, err
    assert len(err.splitlines()) == 1, err
    assert not [p for p in out.rglob(".*") if p.is_file()]  # no hidden temporary file


def test_a_store_neither_loads_nor_installs_extensions(tmp_path: Path) -> None:
    """A file DuckDB does not know (a SQLite file, say) never makes it fetch an
    extension: both automatic settings are off on every connection the product opens."""
    from storage.db import connect, connect_to_read

    names = ("autoload_known_extensions", "autoinstall_known_extensions")
    path = tmp_path / "store.duckdb"
    connect(path).close()
    for open_store in (connect, lambda p: connect(p, read_only=True), connect_to_read):
        con = open_store(path)
        try:
            settings = con.execute(
                "SELECT name, value FROM duckdb_settings() WHERE name IN (?, ?)", list(names)
            ).fetchall()
        finally:
            con.close()
        assert dict(settings) == dict.fromkeys(names, "false")


def test_json_output_is_strict_json() -> None:
    """``--json`` documents of the plan commands: a number that is not finite (a latency
    that overflowed) is null, never ``Infinity`` or ``NaN``, which JSON has not."""
    import json
    import math

    from mace.plan_command import json_text

    document = {"latency": math.inf, "rows": [(-math.inf, 1.5), [math.nan]], "n": 3}
    text = json_text(document)

    def refuse(constant: str) -> object:
        raise ValueError(constant)

    assert json.loads(text, parse_constant=refuse) == {
        "latency": None, "rows": [[None, 1.5], [None]], "n": 3,
    }  # fmt: skip
