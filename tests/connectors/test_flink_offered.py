"""The records offered to a file-fed source, counted from the files in its folder."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from connectors.errors import ConnectorError
from connectors.flink.collector import FlinkCollector
from connectors.flink.offered import OfferedFiles, count_lines
from connectors.flink.rest import FlinkRest
from tests.connectors.flink_fixture import FakeFlink, serve


def _write(path: Path, text: str, mtime: float) -> None:
    path.write_text(text)
    os.utime(path, (mtime, mtime))


def test_lines_are_counted_with_or_without_a_last_newline(tmp_path: Path) -> None:
    for text, lines in [("", 0), ("a\n", 1), ("a\nb", 2), ("a\nb\n", 2), ("\n\n", 2)]:
        (tmp_path / "f").write_text(text)
        assert count_lines(tmp_path / "f") == lines


def test_offered_records_are_the_visible_files_lines_by_modification_time(
    tmp_path: Path,
) -> None:
    _write(tmp_path / "a.csv", "1\n2\n3\n", 100.0)
    _write(tmp_path / "b.csv", "4\n5\n", 105.0)
    _write(tmp_path / ".c.csv.inprogress", "6\n", 101.0)  # hidden: not offered yet
    _write(tmp_path / "_SUCCESS", "7\n", 101.0)
    (tmp_path / "part").mkdir()
    _write(tmp_path / "part" / "d.csv", "8\n", 102.0)
    offered = OfferedFiles(tmp_path)
    assert offered.total(99.0) == 0
    assert offered.total(100.0) == 3
    assert offered.total(104.0) == 4  # a.csv and part/d.csv
    assert offered.total(200.0) == 6
    (tmp_path / "a.csv").unlink()  # read and deleted: still offered
    _write(tmp_path / "b.csv", "4\n5\n9\n", 106.0)  # written in place: counted again
    assert offered.total(200.0) == 7


def test_a_missing_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConnectorError, match="is not a folder"):
        OfferedFiles(tmp_path / "nowhere")


def test_unread_files_count_as_the_sources_records_out(tmp_path: Path) -> None:
    """The recorded source ``clicks`` read 3000 records; 3500 lines wait in its folder's
    files: its records out are the 3500 offered, and never fewer than it read."""
    folder = tmp_path / "in"
    folder.mkdir()
    _write(folder / "events-1.csv", "x\n" * 3500, 1.0)
    with serve(FakeFlink()) as url:
        collector = FlinkCollector(
            FlinkRest(url), tmp_path / "landing", run_id="r", every=0.05,
            offered={"clicks": folder},
        )  # fmt: skip
        rows = {r["operator"]: r for r in collector.sample()}
        assert rows["clicks"]["records_in"] < 3500  # it read 3000 (and the fake's steps)
        assert rows["clicks"]["records_out"] == 3500
        with pytest.raises(ConnectorError, match="no source 'nope'"):
            FlinkCollector(FlinkRest(url), tmp_path, offered={"nope": folder})
        collector.run(threading.Event(), duration=0.2)
    assert collector.stats.polls >= 1


def test_the_option_names_a_bad_value_in_one_line(tmp_path: Path) -> None:
    for value, message in [
        ("clicks", "expected SOURCE=FOLDER"),
        ("clicks=/nowhere/x", "not a folder"),
    ]:
        done = subprocess.run(
            [sys.executable, "-m", "mace", "collect", "flink", "--rest", "http://127.0.0.1:9",
             "--out", str(tmp_path), "--offered", value],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 2
        assert message in done.stderr and "Traceback" not in done.stderr
