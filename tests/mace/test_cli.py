"""The ``mace`` entry point: usage errors, a closed stdout, subcommand modules, packaging."""

from __future__ import annotations

import subprocess
import sys
from importlib.resources import files
from pathlib import Path

import pytest

from mace.cli import BROKEN_PIPE_STATUS, COMMANDS, build_parser, main
from mace.errors import UsageError

ROOT = Path(__file__).resolve().parents[2]
FIGURE3 = ROOT / "examples" / "figure3"


def _mace() -> list[str]:
    """The installed console script (the real entry point), else ``python -m mace``."""
    script = Path(sys.executable).with_name("mace")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "mace"]


ESTIMATE = ["estimate", str(FIGURE3 / "topology.yaml"), "--arrivals", str(FIGURE3 / "arrivals.csv")]


@pytest.mark.parametrize("extra", [["--json"], []])
def test_closed_stdout_exits_quietly(extra: list[str]) -> None:
    """The reader is gone before the command writes: exit 141, nothing on stderr."""
    process = subprocess.Popen(
        [*_mace(), *ESTIMATE, *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()
    err = process.stderr.read()
    assert process.wait(timeout=60) == BROKEN_PIPE_STATUS
    assert err == ""


def test_head_reads_part_of_the_output() -> None:
    """The issue's example: ``mace estimate ... --json | head -c 10`` prints no traceback."""
    command = " ".join([*_mace(), *ESTIMATE, "--json"]) + " | head -c 10"
    done = subprocess.run(
        ["bash", "-c", command], capture_output=True, text=True, check=False, timeout=60
    )
    assert done.returncode == 0 and done.stdout == '{"subinter'
    assert done.stderr == ""


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["serve", "--db", "{tmp}/x.duckdb", "--port", "0"], "--port must be between"),
        (["serve", "--db", "{tmp}/x.duckdb", "--every", "0"], "--every must be positive"),
        (["report", "--db", "{tmp}/x.duckdb", "--training-share", "0"], "--training-share"),
        (["demo", "--duration", "0"], "--duration must be a positive"),
        (["demo", "--port", "70000"], "--port must be between"),
        (["collect", "flink", "--rest", "x:9", "--out", "{tmp}", "--duration", "0"], "--duration"),
        (["simulate", "stocks", "--out", "{tmp}", "--files", "0"], "--files must be at least 1"),
        (["simulate", "stocks", "--out", "{tmp}", "--run-id", ".."], "--run-id must be"),
        (["simulate", "stocks", "--out", "{tmp}", "--node-policy", "n1"], "--node-policy 'n1'"),
        (["ingest", "{tmp}", "--db", "{tmp}/x.duckdb", "--every", "-1"], "--every must be"),
        (["place", *ESTIMATE[1:], "--budget", "0"], "--budget: must be a positive number"),
    ],
)
def test_usage_errors_are_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    args = build_parser().parse_args(argv)
    with pytest.raises(UsageError):
        args.run(args)
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"mace {argv[0]}: error: ") and message in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_collect_from_a_wrong_url_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from connectors.flink.runtime import free_port

    argv = ["collect", "flink", "--rest", f"http://127.0.0.1:{free_port()}", "--out", str(tmp_path)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("mace collect: error: cannot reach Flink at http://127.0.0.1:")
    assert len(err.splitlines()) == 1
    assert not any(tmp_path.iterdir())  # nothing written for a job never found


def test_the_sql_demo_without_prometheus_is_one_line_before_anything_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from connectors.flink.runtime import free_port

    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no prometheus binary on it
    argv = ["demo", "--engine", "flink-sql", "--workdir", str(tmp_path / "work")]
    assert main([*argv, "--port", str(free_port())]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "mace demo: error: --engine flink-sql needs a Prometheus server: prometheus not "
        "installed (Debian package prometheus: make system-deps)"
    )
    assert not (tmp_path / "work").exists()  # nothing started, nothing written


@pytest.mark.parametrize(
    "name",
    [
        "estimate",
        "report",
        "serve",
        "demo",
        "simulate",
        "place",
        "ingest",
        "collect",
        "explain",
        "alerts",
    ],
)
def test_every_subcommand_comes_from_a_mace_module(name: str) -> None:
    assert all(command.__name__.startswith("mace.") for command in COMMANDS)
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args([name, "--help"])
    assert exit_info.value.code == 0


def test_stylesheets_are_package_data_served_by_the_app(tmp_path: Path) -> None:
    """The CSS lives inside the dashboard package, where a non-editable install puts it."""
    from dashboard import create_app

    assets = files("dashboard") / "assets"
    assert {"base.css", "style.css"} <= {f.name for f in assets.iterdir()}
    client = create_app(tmp_path / "m.duckdb").server.test_client()
    response = client.get("/assets/style.css")
    assert response.status_code == 200
    assert response.data == (assets / "style.css").read_bytes()


def test_version_is_the_installed_one(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    with pytest.raises(SystemExit) as stopped:
        main(["--version"])
    assert stopped.value.code == 0
    assert capsys.readouterr().out == f"mace {version('mace-latency')}\n"
