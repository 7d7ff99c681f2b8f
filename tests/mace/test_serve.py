"""``mace serve`` through waitress on 127.0.0.1, and its option errors."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from mace.cli import main


def test_serve_answers_on_localhost(small_db: Path, free_port: int) -> None:
    port = free_port
    process = subprocess.Popen(
        [sys.executable, "-m", "mace.cli", "serve", "--db", str(small_db), "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as response:
                    assert response.status == 200
                    assert b"_dash-config" in response.read()
                break
            except OSError:
                assert process.poll() is None, process.stdout.read() if process.stdout else ""
                assert time.monotonic() < deadline, "server did not start"
                time.sleep(0.3)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_dash-layout", timeout=5) as r:
            assert b"small" in r.read()  # the run list comes from the database
    finally:
        process.terminate()
        output, _ = process.communicate(timeout=20)
    assert f"http://127.0.0.1:{port}/" in output
    assert process.returncode == 0  # SIGTERM stops waitress cleanly, through the cleanup
    assert "Traceback" not in output


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--landing", "/nonexistent/landing"],
            "landing folder /nonexistent/landing does not exist",
        ),
        (["--landing", "s3a://bucket/landing"], "a URI is not supported"),
        (["--port", "0"], "--port"),
        (["--every", "-1"], "--every"),
    ],
)
def test_serve_option_errors(
    small_db: Path, extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", "--db", str(small_db), *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
