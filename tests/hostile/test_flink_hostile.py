"""``mace collect flink`` against REST answers of the wrong shape, of absurd size, that
trickle in, and against a wide vertex (:mod:`tests.hostile.cases`)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from connectors.flink.collector import FlinkCollector
from connectors.flink.rest import MAX_ANSWER_BYTES, FlinkRest, FlinkRestError
from mace.cli import main
from tests.connectors.flink_fixture import FakeFlink
from tests.hostile.cases import REST_CASES, TRICKLED_OK, RestCase, TrickleServer


class HostileFlink(FakeFlink):
    """The recorded job, with one endpoint's answer replaced once ``bad`` is set."""

    def __init__(self, case: RestCase | None = None) -> None:
        super().__init__()
        self.case = case
        self.bad = case is not None and case.at_start
        self.request_lines: list[int] = []
        self.trickle = False  # answer one byte every half second

    def answer(self, path: str, query: dict[str, list[str]]) -> tuple[int, Any]:
        parts = path.strip("/").split("/")
        endpoint = {
            ("jobs", "overview"): "overview", ("taskmanagers",): "taskmanagers",
        }.get(tuple(parts)) or (
            "job" if len(parts) == 2 else "plan" if parts[2:] == ["plan"]
            else "metrics" if parts[-1] == "metrics" else "vertex"
        )  # fmt: skip
        if self.case is not None and self.bad and endpoint == self.case.endpoint:
            return 200, self.case.body
        return super().answer(path, query)


@contextmanager
def serve_raw(fake: HostileFlink) -> Iterator[str]:
    """As :func:`tests.connectors.flink_fixture.serve`, recording each request line."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            fake.request_lines.append(len(self.requestline))
            url = urlparse(self.path)
            code, body = fake.answer(url.path, parse_qs(url.query))
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            for k in range(0, len(data), 1 if fake.trickle else len(data)):
                try:
                    self.wfile.write(data[k : k + (1 if fake.trickle else len(data))])
                except OSError:  # the collector gave up the answer
                    return
                if fake.trickle:
                    time.sleep(0.5)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


START = [c for c in REST_CASES if c.at_start]
MIDDLE = [c for c in REST_CASES if not c.at_start]


@pytest.mark.parametrize("case", START, ids=[c.id for c in START])
def test_a_bad_answer_at_the_start_is_one_line(
    case: RestCase, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with serve_raw(HostileFlink(case)) as url:
        status = main(["collect", "flink", "--rest", url, "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert status == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("case", MIDDLE, ids=[c.id for c in MIDDLE])
def test_a_bad_answer_in_the_middle_is_a_failed_poll(
    case: RestCase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("connectors.flink.collector.REDISCOVER_EVERY", 0.0)  # every poll
    fake = HostileFlink(case)
    with serve_raw(fake) as url:
        collector = FlinkCollector(FlinkRest(url), tmp_path, run_id="r", every=0.05)
        fake.bad = True
        threading.Timer(0.5, lambda: setattr(fake, "bad", False)).start()
        stats = collector.run(threading.Event(), duration=1.0)
    assert stats.failed_polls >= 1 and stats.polls >= 2, stats


def test_a_wide_vertex_is_asked_for_in_short_requests(tmp_path: Path) -> None:
    fake = HostileFlink()
    vertex = fake.job["vertices"][0]
    vertex["parallelism"] = 64
    with serve_raw(fake) as url:
        rest = FlinkRest(url)
        metrics = rest.counters(fake.job_id, vertex["id"], 64)
    assert max(fake.request_lines) < 4096  # Netty's default limit of Flink's REST server
    assert isinstance(metrics, list)


def test_an_answer_beyond_the_size_bound_is_refused() -> None:
    class Huge(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()  # no Content-Length: the size shows only while reading
            chunk = b"[" + b"0," * (1 << 20)
            for _ in range(MAX_ANSWER_BYTES // len(chunk) + 2):
                try:
                    self.wfile.write(chunk)
                except OSError:
                    return

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Huge)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with pytest.raises(FlinkRestError, match="larger than"):
            FlinkRest(f"http://127.0.0.1:{server.server_address[1]}", timeout=30).get("/x")
    finally:
        server.shutdown()
        server.server_close()


def test_a_trickling_answer_ends_at_the_deadline_or_on_stop() -> None:
    trickle = TrickleServer(TRICKLED_OK, pace=0.5)
    try:
        started = time.monotonic()
        with pytest.raises(FlinkRestError, match="no complete answer"):
            FlinkRest(trickle.url, timeout=1.0).get("/jobs/overview")
        assert time.monotonic() - started < 5.0  # the trickle takes minutes
        stop = threading.Event()
        rest = FlinkRest(trickle.url, timeout=60.0, stop=stop)
        threading.Timer(0.5, stop.set).start()  # what SIGTERM does in mace collect
        started = time.monotonic()
        with pytest.raises(FlinkRestError, match="stopped"):
            rest.get("/jobs/overview")
        assert time.monotonic() - started < 5.0
    finally:
        trickle.close()


def test_a_full_disk_keeps_the_rows_for_the_next_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first samples file cannot be written (ENOSPC): no hidden file is left, the
    collection goes on and every row taken is in the files written afterwards."""
    import errno

    import pyarrow.parquet as pq

    from connectors.flink import collector as module

    real_write = pq.write_table
    failures = [1]

    def write_table(table: Any, where: Any, **kwargs: Any) -> None:
        if failures[0]:
            failures[0] -= 1
            Path(where).write_bytes(b"PAR1")  # a partial write, then the disk is full
            raise OSError(errno.ENOSPC, "No space left on device")
        real_write(table, where, **kwargs)

    monkeypatch.setattr(module.pq, "write_table", write_table)
    with serve_raw(HostileFlink()) as url:
        collector = FlinkCollector(
            FlinkRest(url), tmp_path, run_id="r", every=0.05, flush_every=0.1
        )
        stats = collector.run(threading.Event(), duration=0.6)
    samples = tmp_path / "r" / "samples"
    assert stats.failed_writes == 1 and not list(samples.glob(".*"))
    assert len(pq.read_table(sorted(samples.glob("*.parquet")))) == stats.rows > 0


def test_sigterm_stops_collect_while_an_answer_trickles(tmp_path: Path) -> None:
    """``mace collect flink`` polling a REST API that has begun to trickle its answers:
    SIGTERM ends it at once (long before the GET's deadline), with its summary line and
    no traceback."""
    import signal
    import subprocess
    import sys

    from connectors.flink.rest import DEFAULT_TIMEOUT

    fake = HostileFlink()
    with serve_raw(fake) as url:
        argv = [sys.executable, "-m", "mace", "collect", "flink", "--rest", url]
        process = subprocess.Popen(
            [*argv, "--out", str(tmp_path), "--every", "0.2"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 60
            while not list(tmp_path.glob("*/topology.yaml")):  # collecting
                assert process.poll() is None and time.monotonic() < deadline
                time.sleep(0.1)
            fake.trickle = True
            time.sleep(1.5)  # a poll is reading a trickling answer
            assert process.poll() is None
            process.send_signal(signal.SIGTERM)
            started = time.monotonic()
            try:
                out, err = process.communicate(timeout=DEFAULT_TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                out, err = process.communicate()
                raise AssertionError(out + err) from None
            stopped_after = time.monotonic() - started
        finally:
            if process.poll() is None:
                process.kill()
    assert process.returncode == 0 and "Traceback" not in err, err
    assert stopped_after < min(5.0, DEFAULT_TIMEOUT / 2), stopped_after
    assert "stopped:" in out + err
