"""Each hostile file of :data:`tests.hostile.cases.COMMAND_CASES` given to a command: one
line on stderr naming the problem, exit 2, no traceback; a foreign store is left as it
was."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from mace.cli import main
from tests.hostile.cases import COMMAND_CASES, CommandCase


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
