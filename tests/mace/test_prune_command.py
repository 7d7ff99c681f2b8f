"""mace prune from the command line: a dry run changes nothing, the delete spares the run
being ingested, and bad options are one line with exit status 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from mace.cli import main
from tests.storage.test_retention import _counts, _store


def test_prune_command_dry_run_then_delete(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _store(tmp_path)
    before = _counts(db)
    # every run was written just now, so only the recorded ingestion times make them old
    assert (
        main(["prune", "--db", str(db), "--keep-last", "1", "--dry-run", "--live-minutes", "0"])
        == 0
    )
    out = capsys.readouterr().out
    assert "would delete 2 of 4 run(s)" in out and "kept busy: being ingested" in out
    assert _counts(db) == before
    assert main(["prune", "--db", str(db), "--keep-last", "1", "--live-minutes", "0"]) == 0
    out = capsys.readouterr().out
    assert "deleted 2 of 4 run(s)" in out
    assert set(_counts(db)["runs"]) == {"new", "busy"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give exactly one of --older-than DAYS and --keep-last N"),
        (["--older-than", "3", "--keep-last", "2"], "give exactly one of"),
        (["--older-than", "soon"], "--older-than must be a number, got 'soon'"),
        (["--older-than", "0"], "--older-than must be a number above 0"),
        (["--keep-last", "0"], "--keep-last must be a whole number of at least 1"),
        (["--keep-last", "2.5"], "--keep-last must be a whole number"),
        (
            ["--keep-last", "1", "--live-minutes", "-1"],
            "--live-minutes must be a number at least 0",
        ),
    ],
)
def test_bad_options_are_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    db = _store(tmp_path)
    before = _counts(db)
    assert main(["prune", "--db", str(db), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mace prune: error: ") and message in err
    assert len(err.strip().splitlines()) == 1
    assert _counts(db) == before


def test_missing_database_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prune", "--db", str(tmp_path / "none.duckdb"), "--keep-last", "1"]) == 2
    assert "no such database file" in capsys.readouterr().err
    assert not (tmp_path / "none.duckdb").exists()
