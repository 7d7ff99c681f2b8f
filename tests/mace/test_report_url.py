"""``mace report --url``: the report of a database that a running ``mace serve`` holds
(DuckDB's lock keeps ``--db`` out), asked of the server over HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from mace.cli import main
from mace.options import AUTH_ENV


def _serve(db: Path, port: int, env: dict[str, str]) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "mace.cli", "serve", "--db", str(db), "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **env},
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/_dash-layout", timeout=2).close()
            return process
        except urllib.error.HTTPError:
            return process  # answering (with 401 when it asks for credentials)
        except OSError:
            assert process.poll() is None, process.stdout.read() if process.stdout else ""
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.3)


@pytest.fixture
def direct_report(tandem_db: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    """The report read straight from the file, before any server holds it."""
    assert main(["report", "--db", str(tandem_db), "--estimator", "path", "--json"]) == 0
    return dict(json.loads(capsys.readouterr().out))


@pytest.fixture
def served(tandem_db: Path, free_port: int) -> Iterator[str]:
    process = _serve(tandem_db, free_port, {AUTH_ENV: "ops:pw"})
    try:
        yield f"http://127.0.0.1:{free_port}"
    finally:
        process.terminate()
        process.communicate(timeout=20)


def test_report_through_the_server_equals_the_direct_one_while_db_is_locked(
    tandem_db: Path,
    direct_report: dict,
    served: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert main(["report", "--db", str(tandem_db), "--json"]) == 2
    locked = capsys.readouterr().err
    assert "locked" in locked and "--url" in locked and "Traceback" not in locked

    monkeypatch.setenv(AUTH_ENV, "ops:pw")
    assert main(["report", "--url", served, "--estimator", "path", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == direct_report
    assert main(["report", "--url", served + "/", "--estimator", "path"]) == 0
    assert "path-aware" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        (["--run", "nope"], "ops:pw", "unknown run 'nope'"),
        (["--training-share", "0.5", "--run", "nope"], "ops:wrong", f"set {AUTH_ENV}"),
        ([], None, f"set {AUTH_ENV}"),
    ],
)
def test_server_side_mistakes_are_one_line_errors(
    served: str,
    argv: list[str],
    env: str | None,
    message: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if env is None:
        monkeypatch.delenv(AUTH_ENV, raising=False)
    else:
        monkeypatch.setenv(AUTH_ENV, env)
    assert main(["report", "--url", served, *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("url", "message"),
    [("ftp://127.0.0.1:1", "--url must be http"), ("127.0.0.1:8050", "--url must be http")],
)
def test_bad_urls_are_refused(url: str, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--url", url]) == 2
    assert message in capsys.readouterr().err


def test_no_server_listening_says_so(free_port: int, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--url", f"http://127.0.0.1:{free_port}"]) == 2
    err = capsys.readouterr().err
    assert "is mace serve running there?" in err and "Traceback" not in err


def test_report_needs_a_db_or_a_url(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["report"])
    assert exit_.value.code == 2
    assert "one of the arguments --db --url is required" in capsys.readouterr().err


def test_explain_and_alerts_through_the_server_equal_the_direct_ones(
    tandem_db: Path, free_port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """Read from the file first, then from a server holding it: the same JSON; the
    server's mistakes are one line."""
    from storage.db import connect
    from storage.scenarios import set_objective

    con = connect(tandem_db)
    set_objective(con, "tandem", "q1", 0.01)  # low: the alert pass raises breaches
    con.close()
    assert main(["alerts", "--db", str(tandem_db), "--evaluate", "--json"]) == 0
    alerts = json.loads(capsys.readouterr().out)
    assert alerts
    explained = {}
    for estimator in ("mace", "path"):
        argv = ["explain", "--db", str(tandem_db), "--estimator", estimator, "--json"]
        assert main(argv) == 0
        explained[estimator] = json.loads(capsys.readouterr().out)
    process = _serve(tandem_db, free_port, {})
    url = f"http://127.0.0.1:{free_port}"
    try:
        assert main(["alerts", "--url", url, "--json"]) == 0
        assert json.loads(capsys.readouterr().out) == alerts
        assert main(["alerts", "--url", url, "--run", "tandem"]) == 0
        assert f"#{alerts[0]['alert_id']} " in capsys.readouterr().out
        for estimator, document in explained.items():
            argv = ["explain", "--url", url, "--estimator", estimator, "--json"]
            assert main(argv) == 0
            assert json.loads(capsys.readouterr().out) == document
        assert main(["explain", "--url", url]) == 0
        assert "tandem" in capsys.readouterr().out
        for argv, message in [
            (["alerts", "--url", url, "--run", "nope"], "unknown run 'nope'"),
            (["alerts", "--url", url, "--evaluate"], "--evaluate needs --db"),
            (["explain", "--url", url, "--interval", "99999"], "--interval 99999"),
        ]:
            assert main(argv) == 2
            err = capsys.readouterr().err
            assert message in err and len(err.strip().splitlines()) == 1, err
    finally:
        process.terminate()
        process.communicate(timeout=20)
