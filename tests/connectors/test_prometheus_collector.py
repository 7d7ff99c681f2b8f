"""``PrometheusCollector`` against a live Prometheus scraping a job-like exporter (follow
mode), and against servers that fail or hang (history mode: one line, whole files only)."""

from __future__ import annotations

import itertools
import json
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from connectors.flink.graph import job_graph, topology_document
from connectors.prometheus.client import PrometheusClient, PrometheusError
from connectors.prometheus.collector import PrometheusCollector
from tests.connectors.flink_fixture import recorded
from tests.connectors.prometheus_fixture import prometheus_missing, vertices
from tests.connectors.prometheus_fixture import serve as serve_prometheus

pytestmark = pytest.mark.timeout(120)


@contextmanager
def http_server(answer: object) -> Iterator[str]:
    """A loopback server whose every GET/POST is ``answer(handler)``; yields its URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            answer(self)  # type: ignore[operator]

        do_POST = do_GET

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _topology_file(tmp_path: Path) -> Path:
    graph = job_graph(
        recorded("job"), recorded("plan"), recorded("vertices"), recorded("taskmanagers")
    )
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(topology_document(graph)))
    return path


def _reply(handler: BaseHTTPRequestHandler, status: int, body: bytes, kind: str) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", kind)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def test_follow_keeps_up_with_a_live_scraped_job(tmp_path: Path) -> None:
    why = prometheus_missing()
    if why is not None:
        pytest.fail(f"no real Prometheus: {why}")
    began = time.time()

    def exporter(handler: BaseHTTPRequestHandler) -> None:
        """Flink-like counters growing 100 records/s (task scope, 2.x labels)."""
        records = int((time.time() - began) * 100)
        lines = []
        for vid, name, tm in vertices():
            labels = (
                f'job_name="clickstream",task_id="{vid}",task_name="{name}",'
                f'subtask_index="0",tm_id="{tm}"'
            )
            for metric in ("numRecordsIn", "numRecordsOut"):
                lines.append(f"flink_taskmanager_job_task_{metric}{{{labels}}} {records}")
            lines.append(f"flink_taskmanager_job_task_accumulateBusyTimeMs{{{labels}}} {records}")
        _reply(handler, 200, ("\n".join(lines) + "\n").encode(), "text/plain; version=0.0.4")

    with (
        http_server(exporter) as target,
        serve_prometheus(None, tmp_path, scrape=(target.removeprefix("http://"),)) as url,
    ):
        _first_scrape(url)
        collector = PrometheusCollector(
            PrometheusClient(url), tmp_path / "landing", "clickstream",
            topology=_topology_file(tmp_path),
        )  # fmt: skip
        stats = collector.follow(threading.Event(), every=1.0, delay=2.0, duration=8.0)
    assert stats.failed_queries == 0 and stats.files >= 3
    files = sorted((tmp_path / "landing" / "prom-clickstream" / "samples").glob("*.parquet"))
    assert len(files) == stats.files
    assert not list((tmp_path / "landing").rglob(".*inprogress"))
    rows = [r for f in files for r in pq.read_table(f).to_pylist()]
    enrich = sorted((r["time"], r["records_in"]) for r in rows if r["operator"] == "enrich")
    times = [t for t, _ in enrich]
    assert times == sorted(set(times))  # each step once, across the windows
    assert all(b >= a for (_, a), (_, b) in itertools.pairwise(enrich))
    assert enrich[-1][1] > enrich[0][1]  # the counters moved while we followed


def _first_scrape(url: str) -> None:
    """Wait until Prometheus has scraped the exporter (its discovery takes a few seconds)."""
    query = urllib.parse.urlencode({"query": "flink_taskmanager_job_task_numRecordsIn"})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with urllib.request.urlopen(f"{url}/api/v1/query?{query}", timeout=5) as answer:
            if json.load(answer)["data"]["result"]:
                return
        time.sleep(0.5)
    raise AssertionError("Prometheus never scraped the exporter")


def test_an_erroring_prometheus_stops_history_with_one_line_and_writes_nothing(
    tmp_path: Path,
) -> None:
    calls = []

    def failing(handler: BaseHTTPRequestHandler) -> None:
        calls.append(1)
        body = b'{"status":"error","errorType":"unavailable","error":"too many queries"}'
        _reply(handler, 503, body, "application/json")

    with http_server(failing) as url:
        collector = PrometheusCollector(
            PrometheusClient(url), tmp_path / "landing", "clickstream",
            topology=_topology_file(tmp_path), sleep=lambda seconds: None,
        )  # fmt: skip
        with pytest.raises(PrometheusError) as caught:
            collector.history(1000.0, 1100.0)
    message = str(caught.value)
    assert "HTTP 503 (too many queries)" in message and "nothing was written" in message
    assert "\n" not in message
    assert len(calls) == 4  # the first try and three retries
    assert not (tmp_path / "landing").exists()  # not even the topology


def test_history_windows_cover_every_step_once(tmp_path: Path) -> None:
    """A long span is read in several windows (the first of 600 steps, then sized by the
    series seen), each its own file, without a step read twice or left out."""
    (vid, name, tm) = vertices()[1]
    asked: list[tuple[float, float]] = []

    def matrix(handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers["Content-Length"])
        form = urllib.parse.parse_qs(handler.rfile.read(length).decode())
        start, end, step = (float(form[k][0]) for k in ("start", "end", "step"))
        asked.append((start, end))
        times = [start + k * step for k in range(round((end - start) / step) + 1)]
        labels = {"task_id": vid, "task_name": name, "subtask_index": "0", "tm_id": tm}
        values = [[t, str(t - 1000)] for t in times]
        result: list[dict[str, object]] = [
            {"metric": {**labels, "__name__": f"flink_taskmanager_job_task_{metric}"},
             "values": values}
            for metric in ("numRecordsIn", "numRecordsOut")
        ]  # fmt: skip
        body = {"status": "success", "data": {"resultType": "matrix", "result": result}}
        _reply(handler, 200, json.dumps(body).encode(), "application/json")

    with http_server(matrix) as url:
        collector = PrometheusCollector(
            PrometheusClient(url), tmp_path / "landing", "clickstream",
            topology=_topology_file(tmp_path),
        )  # fmt: skip
        stats = collector.history(1000.0, 1000.0 + 25_000 - 1)
    assert len(asked) == stats.files == 4  # 600 steps, then 10,000 (2 series), then the rest
    assert asked[0] == (1000.0, 1599.0)
    files = sorted((tmp_path / "landing" / "prom-clickstream" / "samples").glob("*.parquet"))
    times = sorted(r["time"] for f in files for r in pq.read_table(f).to_pylist())
    assert times == [1000.0 + k for k in range(25_000)]
    assert stats.report.missing  # only one vertex of the job answered


def test_a_slow_prometheus_is_named_with_its_timeout(tmp_path: Path) -> None:
    release = threading.Event()

    def hanging(handler: BaseHTTPRequestHandler) -> None:
        release.wait(5)

    with http_server(hanging) as url:
        client = PrometheusClient(url, timeout=0.3)
        with pytest.raises(PrometheusError, match=r"did not answer within 0\.3 s"):
            client.query_range("up", 0.0, 10.0, 1.0)
        release.set()


def test_a_wrong_url_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(PrometheusError, match="expected a URL"):
        PrometheusClient("ftp://x")
