"""A small client of Flink's REST API (the JobManager's web endpoint), standard library only.

Only the read-only endpoints the collector needs: the job list, a job's plan and
vertices, where subtasks run, the TaskManagers, the JobManager's configuration (for
its metric fetcher's interval), and per-subtask counters of a vertex
(``/jobs/<id>/vertices/<vid>/metrics?get=0.numRecordsIn,...``: one request per vertex
for all its subtasks).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import urllib.parse
from dataclasses import dataclass
from typing import Any

from connectors.errors import ConnectorError
from connectors.flink.graph import COUNTERS, PENDING

TASK_TIME = ("accumulateBusyTimeMs", "accumulateIdleTimeMs", "accumulateBackPressuredTimeMs")
"""A subtask's busy, idle and back-pressured time: together they grow with the wall clock
while it runs, so a new answer shows that Flink's metric fetcher brought new values."""
FETCHER_INTERVAL = "metrics.fetcher.update-interval"
DEFAULT_TIMEOUT = 5.0
"""Seconds one GET may take in all (connect, send, the whole answer)."""
MAX_ANSWER_BYTES = 32 * 1024 * 1024
"""Largest answer read (a plan of thousands of vertices is a few MB): a larger one is an
error, not a read into unbounded memory."""
MAX_NAMES_CHARS = 2000
"""Metric names per request: Netty's default limit on a request line is 4096 bytes."""
CHUNK_BYTES = 65536


class FlinkRestError(ConnectorError):
    """The Flink REST endpoint cannot be reached or answered with an error."""


class JobNotFound(FlinkRestError):
    """The job asked for is not known to the endpoint."""


@dataclass(frozen=True)
class JobSummary:
    job_id: str
    name: str
    state: str
    start_time: float  # seconds since the epoch


class FlinkRest:
    """Reads a Flink cluster's REST API at ``url`` (e.g. ``http://127.0.0.1:8081``).

    Every GET ends within ``timeout`` seconds, or at once when ``stop`` is set (SIGTERM
    while an answer trickles in), and reads at most :data:`MAX_ANSWER_BYTES`."""

    def __init__(
        self, url: str, timeout: float = DEFAULT_TIMEOUT, stop: threading.Event | None = None
    ):
        parsed = urllib.parse.urlparse(url if "://" in url else f"http://{url}")
        try:
            port = parsed.port
        except ValueError:
            port = -1
        if parsed.scheme not in ("http", "https") or not parsed.hostname or port == -1:
            raise FlinkRestError(f"--rest {url!r}: expected a URL like http://127.0.0.1:8081")
        self.url = f"{parsed.scheme}://{parsed.netloc}{parsed.path.rstrip('/')}"
        self.timeout = timeout
        self.stop = stop or threading.Event()
        self._parts = parsed

    def get(self, path: str, **params: str) -> Any:
        """GET ``path`` and decode its JSON; errors become :class:`FlinkRestError`."""
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        address = f"{self.url}{path}{query}"
        status, body = self._fetch(f"{self._parts.path.rstrip('/')}{path}{query}", address)
        if status == 404:
            raise JobNotFound(f"{address}: not found ({_error_text(body, 'Not Found')})")
        if not 200 <= status < 300:
            raise FlinkRestError(f"{address}: HTTP {status} ({_error_text(body, '')})")
        try:
            return json.loads(body.decode("utf-8"))
        except (ValueError, RecursionError) as exc:
            raise FlinkRestError(f"{address}: answer is not JSON ({exc})") from None

    def _fetch(self, target: str, address: str) -> tuple[int, bytes]:
        """(status, body) of one GET, within the deadline and the size bound."""
        if self.stop.is_set():
            raise FlinkRestError(f"{address}: stopped")
        parts = self._parts
        kind = (
            http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        )
        connection = kind(parts.hostname or "", parts.port, timeout=self.timeout)
        done = threading.Event()
        expired = threading.Event()
        # the answer's socket: http.client drops connection.sock once an answer that
        # closes the connection (HTTP/1.0, "Connection: close") has begun
        reading: list[socket.socket] = []

        def watch() -> None:  # cuts the socket at the deadline or on stop
            stopped = _wait_either(self.stop, done, self.timeout)
            if done.is_set():
                return
            if not stopped:
                expired.set()
            for sock in (connection.sock, *reading):
                if sock is not None:
                    with contextlib.suppress(OSError):
                        sock.shutdown(socket.SHUT_RDWR)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            connection.request("GET", target or "/", headers={"Accept": "application/json"})
            if connection.sock is not None:
                reading.append(connection.sock)
            response = connection.getresponse()
            length = response.getheader("Content-Length")
            if length is not None and length.isdigit() and int(length) > MAX_ANSWER_BYTES:
                raise FlinkRestError(f"{address}: answer of {int(length)} bytes is too large")
            chunks, size = [], 0
            while chunk := response.read1(CHUNK_BYTES):
                size += len(chunk)
                if size > MAX_ANSWER_BYTES:
                    raise FlinkRestError(
                        f"{address}: answer larger than {MAX_ANSWER_BYTES // 2**20} MiB"
                    )
                chunks.append(chunk)
            body = b"".join(chunks)
            if expired.is_set() or self.stop.is_set():
                raise OSError("cut off")
            return response.status, body
        except (OSError, http.client.HTTPException) as exc:
            if self.stop.is_set():
                raise FlinkRestError(f"{address}: stopped") from None
            if expired.is_set():
                raise FlinkRestError(
                    f"{address}: no complete answer within {self.timeout:g} s"
                ) from None
            raise FlinkRestError(f"cannot reach Flink at {self.url}: {exc}") from None
        finally:
            done.set()
            connection.close()

    def jobs(self) -> list[JobSummary]:
        """Every job the cluster knows, newest first."""
        answer = self.object("/jobs/overview")
        try:
            jobs = [
                JobSummary(
                    str(j["jid"]),
                    str(j.get("name", j["jid"])),
                    str(j["state"]),
                    float(j["start-time"]) / 1000.0,
                )
                for j in answer.get("jobs", [])
            ]
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise FlinkRestError(f"{self.url}/jobs/overview: unexpected answer ({exc!r})") from None
        return sorted(jobs, key=lambda j: -j.start_time)

    def object(self, path: str) -> dict[str, Any]:
        """GET ``path``, whose answer must be a JSON object."""
        answer = self.get(path)
        if not isinstance(answer, dict):
            raise FlinkRestError(
                f"{self.url}{path}: expected a JSON object, got {type(answer).__name__}"
            )
        return answer

    def job(self, job_id: str) -> dict[str, Any]:
        return self.object(f"/jobs/{job_id}")

    def checkpoints(self, job_id: str) -> dict[str, Any]:
        return self.object(f"/jobs/{job_id}/checkpoints")

    def plan(self, job_id: str) -> dict[str, Any]:
        return self.object(f"/jobs/{job_id}/plan")

    def vertex(self, job_id: str, vertex_id: str) -> dict[str, Any]:
        return self.object(f"/jobs/{job_id}/vertices/{vertex_id}")

    def taskmanagers(self) -> dict[str, Any]:
        return self.object("/taskmanagers")

    def fetcher_interval(self) -> float | None:
        """Seconds between two metric fetches of the JobManager
        (``metrics.fetcher.update-interval``; Flink's default, 10 s, when not set), or
        None if the configuration cannot be read."""
        try:
            entries = self.get("/jobmanager/config")
        except FlinkRestError:
            return None
        if not isinstance(entries, list):
            return None
        values = {e.get("key"): e.get("value") for e in entries if isinstance(e, dict)}
        try:
            return float(values.get(FETCHER_INTERVAL) or 10000) / 1000
        except (TypeError, ValueError):
            return None

    def job_configuration(self, job_id: str) -> dict[str, str]:
        """The job's configuration (``/jobs/<id>/jobmanager/config``, else the cluster's,
        ``/jobmanager/config``) as key -> value; empty if neither can be read."""
        for path in (f"/jobs/{job_id}/jobmanager/config", "/jobmanager/config"):
            try:
                entries = self.get(path)
            except FlinkRestError:
                continue
            if isinstance(entries, list):
                return {
                    str(e.get("key")): str(e.get("value"))
                    for e in entries
                    if isinstance(e, dict) and "key" in e
                }
        return {}

    def task_time(self, job_id: str, vertex_id: str) -> list[dict[str, str]]:
        """The first subtask's :data:`TASK_TIME` on a vertex, as Flink's metric store has
        them now (one short request)."""
        names = ",".join(f"0.{name}" for name in TASK_TIME)
        answer = self.get(f"/jobs/{job_id}/vertices/{vertex_id}/metrics", get=names)
        return answer if isinstance(answer, list) else []

    def counters(
        self,
        job_id: str,
        vertex_id: str,
        subtasks: int,
        operators: tuple[str, ...] = (),
        sources: tuple[str, ...] = (),
    ) -> list[dict[str, str]]:
        """``[{"id": "<subtask>.<counter>", "value": "..."}]`` for every subtask,
        ``<subtask>.<operator>.numRecordsIn``/``Out`` for each chained operator named in
        ``operators`` and ``<subtask>.<source>.pendingRecords`` for each source named in
        ``sources`` (metric names), in as many requests as keep each request line short.
        A metric the vertex does not have is left out of the answer."""
        names = [f"{k}.{c}" for k in range(subtasks) for c in COUNTERS]
        names += [
            f"{k}.{op}.{c}" for k in range(subtasks) for op in operators for c in COUNTERS[:2]
        ]
        names += [f"{k}.{src}.{PENDING}" for k in range(subtasks) for src in sources]
        answer: list[dict[str, str]] = []
        for chunk in _chunks(names, MAX_NAMES_CHARS):
            path = f"/jobs/{job_id}/vertices/{vertex_id}/metrics"
            part = self.get(path, get=",".join(chunk))
            if not isinstance(part, list):
                raise FlinkRestError(f"{self.url}{path}: expected a list of metrics")
            answer += [m for m in part if isinstance(m, dict)]
        return answer


def _chunks(names: list[str], limit: int) -> list[list[str]]:
    """``names`` in consecutive groups whose comma-joined length stays under ``limit``."""
    out: list[list[str]] = []
    size = limit
    for name in names:
        if size + len(name) + 1 > limit:
            out.append([])
            size = 0
        out[-1].append(name)
        size += len(name) + 1
    return out


def _wait_either(stop: threading.Event, done: threading.Event, timeout: float) -> bool:
    """Wait until ``stop`` or ``done`` is set or ``timeout`` passes; whether ``stop`` was
    set."""
    waited = 0.0
    step = 0.05
    while waited < timeout and not done.is_set():
        if stop.wait(step):
            return True
        waited += step
    return stop.is_set()


def _error_text(body: bytes, default: str) -> str:
    try:
        errors = json.loads(body.decode("utf-8")).get("errors") or []
        return str(errors[0]).splitlines()[0] if errors else default
    except (ValueError, AttributeError, RecursionError):
        return default
