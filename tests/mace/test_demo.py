"""``mace demo --duration`` end to end: the live simulator, Spark ingestion every 2 s, the
dashboard served meanwhile, then a clean stop, a final ingestion and the report summary."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from storage.db import connect
from storage.reads import ingested_paths, list_runs

pytestmark = [pytest.mark.spark, pytest.mark.slow]

DURATION = 12
"""Seconds the demo runs: a few scheduled ingestion passes (every 2 s) and more than 5
subintervals, with Spark started before the simulator."""


def _get(url: str) -> bytes | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return bytes(response.read()) if response.status == 200 else None
    except OSError:
        return None


def _status(url: str, host: str) -> int:
    """The HTTP status of a GET of ``url`` sent with the Host header ``host``."""
    request = urllib.request.Request(url, headers={"Host": host})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def test_demo_runs_for_its_duration_then_reports(tmp_path: Path, free_port: int) -> None:
    workdir = tmp_path / "demo"
    argv = [sys.executable, "-m", "mace", "demo", "--workdir", str(workdir)]
    argv += ["--duration", str(DURATION), "--port", str(free_port)]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        page = css = None
        deadline = time.monotonic() + DURATION
        while (page is None or css is None) and time.monotonic() < deadline:
            page = page or _get(f"http://127.0.0.1:{free_port}/")
            css = css or _get(f"http://127.0.0.1:{free_port}/assets/style.css")
            time.sleep(0.5)
        out, err = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert page is not None and b"_dash-config" in page  # served during the duration
    assert css  # the stylesheet too
    assert f"demo: working in {workdir}" in out and "Traceback" not in err
    (run_dir,) = (workdir / "landing").iterdir()
    run_id = run_dir.name
    assert run_id.startswith("demo-")
    con = connect(workdir / "mace.duckdb", read_only=True)
    try:
        (run,) = list_runs(con)
        landed = {p.relative_to(run_dir.parent).as_posix() for p in run_dir.rglob("*.parquet")}
        ingested = ingested_paths(con)
    finally:
        con.close()
    assert run.run_id == run_id and run.last_interval is not None and run.last_interval > 5
    # the final ingestion took every file still there; the scheduled ones deleted the files
    # they had ingested (the demo's disk use stays bounded), the manifest keeps them
    assert ingested and landed <= ingested and len(landed) < len(ingested)
    report = out[out.index(f"run {run_id}: latency across time") :]
    for query in ("q1", "q2", "q3", "q4", "q5", "system"):
        assert f"  {query} " in report
    assert "bound coverage" in report


def test_demo_removes_its_temporary_folder_after_sigterm(tmp_path: Path, free_port: int) -> None:
    """Regression: after SIGTERM the demo left its temporary folder behind (6.1 GB after 41
    minutes). Without --workdir the folder is the demo's own and goes at exit. The
    dashboard answers the name given with --allowed-host, and no other."""
    import os

    argv = [sys.executable, "-m", "mace", "demo", "--port", str(free_port)]
    argv += ["--allowed-host", "mace.example.org"]
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    process = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        deadline = time.monotonic() + 120
        while _get(f"http://127.0.0.1:{free_port}/") is None:
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.5)
        url = f"http://127.0.0.1:{free_port}/"
        assert _status(url, "mace.example.org") == 200
        assert _status(url, "attacker.example") == 400
        (workdir,) = tmp_path.glob("mace-demo-*")
        deadline = time.monotonic() + 120  # until the first batch is in the database
        while not list((workdir / "landing").glob("*/arrivals/*.parquet")):
            assert time.monotonic() < deadline
            time.sleep(0.5)
        process.terminate()
        out, err = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode in (0, 130), err
    assert "Traceback" not in err
    assert f"demo: removed {workdir}" in out
    assert not workdir.exists()


def test_ctrl_c_leaves_the_ingestion_pass_to_complete(spark) -> None:  # type: ignore[no-untyped-def]
    """Regression: pyspark's Ctrl+C handler, installed with the Spark session, cancels every
    running Spark job. Ctrl+C on `make demo` during a pass (most of the time: a pass every
    2 s takes 1.5 to 2.5 s) printed an 80-line Java stack trace (SPARK_JOB_CANCELLED)
    instead of letting the pass complete. Once Spark has started, Ctrl+C is Python's own."""
    import signal

    from mace.demo_command import start_spark_first

    previous = signal.getsignal(signal.SIGINT)  # the session's, as the other tests had it
    try:
        start_spark_first()  # the session of the fixture, already running
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, previous)
