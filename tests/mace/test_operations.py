"""Operations rough edges: a mistyped database or subcommand, a
taken port, the demo's options and folder, multi-node defaults of ``mace simulate``."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from mace.cli import build_parser, main
from simulator.workloads import workload_model


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port another server listens on (on every address, as a dashboard on 0.0.0.0)."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("0.0.0.0", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_serve_refuses_a_missing_database(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """`serve --db typo.duckdb` created an empty database silently."""
    typo = tmp_path / "typo.duckdb"
    assert main(["serve", "--db", str(typo)]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("mace serve: error: ") and str(typo) in line and "--create" in line
    assert not typo.exists()


def test_serve_create_starts_an_empty_database(tmp_path: Path, free_port: int) -> None:
    new = tmp_path / "new.duckdb"
    argv = [sys.executable, "-m", "mace", "serve", "--db", str(new), "--create"]
    process = subprocess.Popen(
        [*argv, "--port", str(free_port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{free_port}/", timeout=2) as r:
                    assert r.status == 200 and b"_dash-config" in r.read()
                break
            except OSError:
                assert process.poll() is None, process.stdout.read() if process.stdout else ""
                assert time.monotonic() < deadline, "server did not start"
                time.sleep(0.3)
    finally:
        process.terminate()
        output, _ = process.communicate(timeout=20)
    assert new.is_file() and "Traceback" not in output


def test_serve_on_a_taken_port_is_one_line_without_a_url(
    small_db: Path, taken_port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", "--db", str(small_db), "--port", str(taken_port)]) == 2
    out, err = capsys.readouterr()
    assert "http://" not in out  # no URL for a server that did not start
    line = _one_line(err)
    assert line == f"mace serve: error: cannot listen on 127.0.0.1:{taken_port}: " + (
        "Address already in use"
    )


def test_demo_on_a_taken_port_starts_nothing_and_removes_its_folder(
    tmp_path: Path,
    taken_port: int,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The server starts first, so a taken port stops the demo before the simulator and
    ingestion start; the temporary folder goes away with it."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    assert main(["demo", "--port", str(taken_port)]) == 2
    out, err = capsys.readouterr()
    assert "http://" not in out and "simulating" not in out and "ingesting" not in out
    assert "cannot listen on" in _one_line(err)
    assert "demo: removed" in out
    assert list(tmp_path.iterdir()) == []


def test_demo_port_is_documented(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["demo", "--help"])
    assert "--port PORT" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("typed", "hint"),
    [("sevre", "did you mean 'serve'?"), ("simualte", "did you mean 'simulate'")],
)
def test_mistyped_subcommand_suggests_the_closest(
    typed: str, hint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([typed, "--db", "x.duckdb"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith(f"mace: error: unknown command '{typed}'") and hint in line


def test_unknown_subcommand_without_a_close_one_lists_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["xyzzy"]) == 2
    assert "choose from estimate, report, serve" in _one_line(capsys.readouterr().err)


def test_multi_query_workload_spreads_over_nodes_by_default() -> None:
    topology, _ = workload_model("clickstream-5q")
    assert len(topology.node_ids) == 5
    assert len(set(topology.placement.values())) == 5


def test_default_run_id_names_the_node_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--nodes 2` after a default run failed with "run folder already exists"."""
    args = ["simulate", "stocks", "--out", str(tmp_path), "--duration", "2", "--files", "1"]
    assert main(args) == 0
    assert main([*args, "--nodes", "2"]) == 0
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["stocks-2n-stimulus-seed0", "stocks-3n-stimulus-seed0"]
    # the same options again are the same run: refused, not overwritten
    assert main(args) == 2
    assert "already exists" in capsys.readouterr().err
