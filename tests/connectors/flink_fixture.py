"""A local HTTP server answering like Flink's REST API, from answers recorded on a real
Flink 2.3 job (tests/connectors/fixtures/flink): the clickstream demo job."""

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

FIXTURES = Path(__file__).parent / "fixtures" / "flink"


def recorded(name: str, job: str = "flink") -> Any:
    """A recorded REST answer: ``flink`` is the demo job with chaining off, one sink;
    ``flink-chained`` the demo job as it runs now, chaining on, two sinks;
    ``flink-table-python`` the ``apache-flink`` package's
    ``examples/table/streaming_word_count.py`` on a standalone cluster (its Python UDF
    chained behind a legacy source; ``vertices`` built from its job answer)."""
    return json.loads((FIXTURES.parent / job / f"{name}.json").read_text())


class FakeFlink:
    """Serves the recorded job; ``polls_until_finished`` counter answers later the job is
    FINISHED; each counter answer adds ``step`` records to every recorded value; a
    ``state`` set is the job's state until then (e.g. RESTARTING while it rescales), a
    ``checkpoints`` set its answer to the checkpoint statistics (none: 404).

    With ``fetcher`` (seconds) it answers metrics as Flink's REST API does, from a cache:
    a metrics request more than ``fetcher`` s after the last fetch starts one and is
    answered with the cached values; the fetch lands ``fetch_delay`` s later with the
    values of the moment it started: the recorded ones plus ``rate`` records a second
    since the fake was made, and task times that grow with the wall clock. Each metrics
    request then takes ``request_delay`` s to answer."""

    def __init__(
        self,
        polls_until_finished: int = 1_000_000,
        step: float = 10.0,
        fetcher: float | None = None,
        fetch_delay: float = 0.05,
        rate: float = 1000.0,
        request_delay: float = 0.0,
    ):
        self.job = recorded("job")
        self.job_id = self.job["jid"]
        self.overview = recorded("jobs_overview")
        self.plan = recorded("plan")
        self.vertices = recorded("vertices")
        self.counters = recorded("counters")
        self.taskmanagers = recorded("taskmanagers")
        self.polls_until_finished = polls_until_finished
        self.step = step
        self.counter_requests = 0
        self.fail_next = 0
        self.state: str | None = None
        self.checkpoints: dict[str, Any] | None = None
        self.fetcher = fetcher
        self.fetch_delay = fetch_delay
        self.rate = rate
        self.request_delay = request_delay
        self.started = time.time()
        self._cache: dict[str, dict[str, float]] = {}
        self._landing: tuple[float, dict[str, dict[str, float]]] | None = None
        self._last_fetch = float("-inf")
        self._lock = threading.Lock()

    def answer(self, path: str, query: dict[str, list[str]]) -> tuple[int, Any]:
        if self.fail_next > 0:
            self.fail_next -= 1
            return 503, {"errors": ["service unavailable"]}
        parts = path.strip("/").split("/")
        state = "FINISHED" if self.counter_requests >= self.polls_until_finished else "RUNNING"
        state = self.state or state
        if parts == ["jobs", "overview"]:
            jobs = [{**j, "state": state} for j in self.overview["jobs"]]
            return 200, {"jobs": jobs}
        if parts == ["taskmanagers"]:
            return 200, self.taskmanagers
        if parts == ["jobmanager", "config"] and self.fetcher is not None:
            ms = str(round(self.fetcher * 1000))
            return 200, [{"key": "metrics.fetcher.update-interval", "value": ms}]
        if len(parts) >= 2 and parts[0] == "jobs":
            if parts[1] != self.job_id:
                return 404, {"errors": [f"Job {parts[1]} not found"]}
            if len(parts) == 2:
                return 200, {**self.job, "state": state}
            if parts[2:] == ["checkpoints"] and self.checkpoints is not None:
                return 200, self.checkpoints
            if parts[2:] == ["plan"]:
                return 200, self.plan
            if len(parts) == 4 and parts[2] == "vertices":
                return 200, self.vertices[parts[3]]
            if len(parts) == 5 and parts[4] == "metrics":
                return 200, self._counters(parts[3], query.get("get", [""])[0].split(","))
        return 404, {"errors": ["Not found: " + path]}

    def live(self, vertex: str, at: float) -> dict[str, float]:
        """A vertex's metrics at wall-clock time ``at`` (the ``fetcher`` mode's)."""
        elapsed = at - self.started
        values = {m["id"]: float(m["value"]) for m in self.counters[vertex]}
        values = {n: v + self.rate * elapsed if "Records" in n else v for n, v in values.items()}
        return {**values, "0.accumulateIdleTimeMs": 1000 * elapsed}

    def _cached(self, names: list[str], vertex: str) -> list[dict[str, str]]:
        with self._lock:
            now = time.time()
            if self._landing is not None and now >= self._landing[0]:
                self._cache, self._landing = self._landing[1], None
            if now - self._last_fetch > (self.fetcher or 0.0):
                self._last_fetch = now
                snapshot = {v: self.live(v, now) for v in self.counters}
                self._landing = (now + self.fetch_delay, snapshot)
            values = self._cache.get(vertex, {})
        return [{"id": n, "value": str(values[n])} for n in names if n in values]

    def _counters(self, vertex: str, names: list[str]) -> list[dict[str, str]]:
        if self.fetcher is not None:
            time.sleep(self.request_delay)
            return self._cached(names, vertex)
        self.counter_requests += 1
        extra = self.step * (self.counter_requests // len(self.vertices))
        values = {m["id"]: float(m["value"]) for m in self.counters[vertex]}
        return [
            {"id": n, "value": str(values[n] + (extra if "Records" in n else extra / 100))}
            for n in names
            if n in values
        ]


@contextmanager
def serve(fake: FakeFlink) -> Iterator[str]:
    """Run the fake on 127.0.0.1 (a free port); yield its base URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            url = urlparse(self.path)
            code, body = fake.answer(url.path, parse_qs(url.query))
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
