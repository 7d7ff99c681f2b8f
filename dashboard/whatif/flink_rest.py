"""Apply a parallelism change to a running Flink job through its REST API.

The call is the adaptive scheduler's *externalized declarative resource management*
(FLIP-291, Flink 1.18 and later): ``PUT /jobs/<job id>/resource-requirements`` with, for
every job vertex, ``{"parallelism": {"lowerBound": L, "upperBound": U}}`` keyed by the
vertex id (Flink's ``JobResourceRequirementsBody``). The scheduler then rescales the
job from its latest checkpoint. Unchanged vertices keep the bounds the job has now
(read with ``GET`` on the same path). A changed vertex gets ``lowerBound = upperBound =
N``: the job runs at the parallelism that was predicted or waits for the slots, instead
of running smaller than predicted. Slots per TaskManager and the number of
TaskManagers are the cluster's (``taskmanager.numberOfTaskSlots``, the TaskManager
replicas): this call does not set them.

Reading (``GET``) happens when the page prepares the call; the ``PUT`` only when the
user confirms it, and only to the REST URL the dashboard was started with.
"""

from __future__ import annotations

import json
import re
import shlex
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from estimator.errors import ScenarioError

TIMEOUT = 5.0
MAX_ANSWER = 1 << 20
"""The largest REST answer read (bytes)."""
RUNNING = ("RUNNING", "CREATED", "INITIALIZING", "RESTARTING")
JOB_PLACEHOLDER = "<job id>"


@dataclass(frozen=True)
class RestCall:
    """One REST request: method, URL and JSON body."""

    method: str
    url: str
    body: dict[str, Any]

    @property
    def text(self) -> str:
        """The request as a person reads it: the request line and the body."""
        return f"{self.method} {self.url}\n{json.dumps(self.body, indent=2, sort_keys=True)}"

    @property
    def curl(self) -> str:
        """The same request as a shell command."""
        body = json.dumps(self.body, sort_keys=True)
        return (
            f"curl -X {self.method} {shlex.quote(self.url)} "
            f"-H 'Content-Type: application/json' -d {shlex.quote(body)}"
        )


def _tokens(text: str) -> set[str]:
    return {t for t in re.split(r"[^a-z0-9]+", text.lower()) if t and not t.isdigit()}


def vertex_of_unit(vertices: Sequence[Mapping[str, Any]], operators: Sequence[str]) -> str | None:
    """The id of the job vertex whose name holds every one of ``operators`` (the
    operators the run's topology puts on one vertex's threads; their ids are made from
    the vertex's operator names), or None unless exactly one vertex does."""
    wanted = [_tokens(op) for op in operators]
    found = [
        str(v.get("id"))
        for v in vertices
        if all(w <= _tokens(str(v.get("name", ""))) for w in wanted)
    ]
    return found[0] if len(found) == 1 else None


def requirements_call(
    base: str,
    job_id: str,
    current: Mapping[str, Any],
    vertex_ids: Mapping[str, str],
    parallelism: Mapping[str, int],
) -> RestCall:
    """The ``PUT`` that sets ``parallelism`` (unit -> subtasks) on the job: ``current``
    is the job's answer to ``GET .../resource-requirements``, ``vertex_ids`` each
    changed unit's vertex id."""
    body = {str(k): dict(v) for k, v in current.items()}
    for unit, p in parallelism.items():
        body[vertex_ids[unit]] = {"parallelism": {"lowerBound": p, "upperBound": p}}
    return RestCall("PUT", f"{base.rstrip('/')}/jobs/{job_id}/resource-requirements", body)


def template_call(base: str | None, parallelism: Mapping[str, int]) -> RestCall:
    """The call to make by hand when the dashboard has no REST URL: vertex ids are named
    by their unit (``GET /jobs/<job id>`` lists the real ones), and the other vertices
    of the job must be listed too with their current bounds."""
    body = {
        f"<vertex id of {unit}>": {"parallelism": {"lowerBound": p, "upperBound": p}}
        for unit, p in parallelism.items()
    }
    root = (base or "http://<jobmanager>:8081").rstrip("/")
    return RestCall("PUT", f"{root}/jobs/{JOB_PLACEHOLDER}/resource-requirements", body)


def get_json(url: str) -> Any:
    """The JSON answer of ``GET url`` (ScenarioError: one line saying what failed)."""
    return _send(urllib.request.Request(url, method="GET"))


def put_json(url: str, body: Mapping[str, Any]) -> Any:
    """Send ``body`` with ``PUT``; the answer's JSON (or None when it has none)."""
    data = json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=data, method="PUT", headers={"Content-Type": "application/json"}
    )
    return _send(request)


def _send(request: urllib.request.Request) -> Any:
    what = f"{request.get_method()} {request.full_url}"
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as answer:
            text = answer.read(MAX_ANSWER + 1)
    except urllib.error.HTTPError as exc:
        detail = exc.read(2000).decode(errors="replace").strip()
        raise ScenarioError(f"{what}: HTTP {exc.code} {detail}".strip()) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ScenarioError(f"{what}: {reason}") from None
    if len(text) > MAX_ANSWER:
        raise ScenarioError(f"{what}: the answer is larger than {MAX_ANSWER} bytes")
    if not text.strip():
        return None
    try:
        return json.loads(text)
    except ValueError:
        raise ScenarioError(f"{what}: the answer is not JSON") from None


def running_job(base: str, run_id: str) -> str:
    """The job of ``run_id`` at ``base``: the running job whose id starts with the 8
    characters the collector put at the end of the run id (``flink-<job>-<id8>``), else
    the only running job."""
    answer = get_json(f"{base.rstrip('/')}/jobs/overview")
    jobs = answer.get("jobs", []) if isinstance(answer, Mapping) else []
    running = [str(j.get("jid")) for j in jobs if j.get("state") in RUNNING]
    prefix = run_id.rsplit("-", 1)[-1]
    named = [j for j in running if j.startswith(prefix)]
    if len(named) == 1:
        return named[0]
    if len(running) == 1:
        return running[0]
    listed = ", ".join(running) or "none"
    raise ScenarioError(
        f"{base}: cannot tell which running job is run '{run_id}' (running: {listed})"
    )


def prepare(base: str, run_id: str, operators: Mapping[str, Sequence[str]],
            parallelism: Mapping[str, int]) -> RestCall:  # fmt: skip
    """The exact call for the job of ``run_id`` at ``base`` (reads the job, its vertices
    and its current requirements): ``operators`` names each unit's operators."""
    root = base.rstrip("/")
    job_id = running_job(root, run_id)
    job = get_json(f"{root}/jobs/{job_id}")
    vertices = job.get("vertices", []) if isinstance(job, Mapping) else []
    ids: dict[str, str] = {}
    for unit in parallelism:
        vertex = vertex_of_unit(vertices, operators.get(unit, ()))
        if vertex is None:
            raise ScenarioError(f"job {job_id}: no single vertex holds the operators of {unit}")
        ids[unit] = vertex
    current = get_json(f"{root}/jobs/{job_id}/resource-requirements")
    if not isinstance(current, Mapping):
        raise ScenarioError(f"job {job_id}: its resource requirements are not a JSON object")
    return requirements_call(root, job_id, current, ids, parallelism)
