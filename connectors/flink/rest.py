"""A small client of Flink's REST API (the JobManager's web endpoint), standard library only.

Only the read-only endpoints the collector needs: the job list, a job's plan and
vertices, where subtasks run, the TaskManagers, and per-subtask counters of a
vertex (``/jobs/<id>/vertices/<vid>/metrics?get=0.numRecordsIn,...``: one request
per vertex for all its subtasks).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from connectors.errors import ConnectorError

COUNTERS = ("numRecordsIn", "numRecordsOut", "accumulateBusyTimeMs")
PENDING = "pendingRecords"
"""A source's records not read yet (FLIP-33: Kafka's consumer lag, for example)."""
DEFAULT_TIMEOUT = 5.0
MAX_NAMES_CHARS = 2000
"""Metric names per request: Netty's default limit on a request line is 4096 bytes."""


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
    """Reads a Flink cluster's REST API at ``url`` (e.g. ``http://127.0.0.1:8081``)."""

    def __init__(self, url: str, timeout: float = DEFAULT_TIMEOUT):
        parsed = urllib.parse.urlparse(url if "://" in url else f"http://{url}")
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise FlinkRestError(f"--rest {url!r}: expected a URL like http://127.0.0.1:8081")
        self.url = f"{parsed.scheme}://{parsed.netloc}{parsed.path.rstrip('/')}"
        self.timeout = timeout

    def get(self, path: str, **params: str) -> Any:
        """GET ``path`` and decode its JSON; errors become :class:`FlinkRestError`."""
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        address = f"{self.url}{path}{query}"
        try:
            with urllib.request.urlopen(address, timeout=self.timeout) as response:
                return json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as exc:
            detail = _error_text(exc)
            if exc.code == 404:
                raise JobNotFound(f"{address}: not found ({detail})") from None
            raise FlinkRestError(f"{address}: HTTP {exc.code} ({detail})") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise FlinkRestError(f"cannot reach Flink at {self.url}: {reason}") from None
        except ValueError as exc:
            raise FlinkRestError(f"{address}: answer is not JSON ({exc})") from None

    def jobs(self) -> list[JobSummary]:
        """Every job the cluster knows, newest first."""
        answer = self.get("/jobs/overview")
        jobs = [
            JobSummary(j["jid"], j.get("name", j["jid"]), j["state"], j["start-time"] / 1000.0)
            for j in answer.get("jobs", [])
        ]
        return sorted(jobs, key=lambda j: -j.start_time)

    def job(self, job_id: str) -> dict[str, Any]:
        return dict(self.get(f"/jobs/{job_id}"))

    def plan(self, job_id: str) -> dict[str, Any]:
        return dict(self.get(f"/jobs/{job_id}/plan"))

    def vertex(self, job_id: str, vertex_id: str) -> dict[str, Any]:
        return dict(self.get(f"/jobs/{job_id}/vertices/{vertex_id}"))

    def taskmanagers(self) -> dict[str, Any]:
        return dict(self.get("/taskmanagers"))

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
            part = self.get(f"/jobs/{job_id}/vertices/{vertex_id}/metrics", get=",".join(chunk))
            answer += list(part)
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


def _error_text(exc: urllib.error.HTTPError) -> str:
    try:
        body = json.loads(exc.read().decode("utf-8"))
        errors = body.get("errors") or []
        return str(errors[0]).splitlines()[0] if errors else exc.reason
    except (ValueError, OSError, AttributeError):
        return str(exc.reason)
