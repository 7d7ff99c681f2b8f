"""A Flink job's graph as a Mace topology (docs/design.md, "Domain model and units"), from
REST answers.

Pure functions over the JSON of ``/jobs/<id>``, ``/jobs/<id>/plan``,
``/jobs/<id>/vertices/<vid>`` and ``/taskmanagers``:

- **sources** are the vertices without inputs (``Source: clicks`` -> ``clicks``);
- **operators** are the other vertices, with inputs from the plan's edges, in the
  job's query (its name); costs and selectivities are priors (``PRIOR_COST``,
  1.0), replaced by fitting on the measured counters;
- **nodes and placement** come in two granularities (``NODE_MODES``):

  ``subtask`` (default)
      one node per operator: its subtasks' threads, with capacity = parallelism.
      A Flink subtask is one thread, so an operator saturates when its threads
      are busy 100% of the time, whatever the TaskManager's other cores do; its
      busy time (wall clock, which includes time spent descheduled) against this
      capacity is the backlog that Mace models.
  ``taskmanager``
      one node per TaskManager, with capacity = its CPU cores, each operator on
      the TaskManager running most of its subtasks. Right when operators share
      cores that are the limit (many operators per core).

Operator chaining fuses several operators into one vertex; the graph is then the
vertex graph (turn chaining off, in Java and Python, to see every operator).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from connectors.errors import ConnectorError

PRIOR_COST = 0.001
NODE_MODES = ("subtask", "taskmanager")
_SLUG = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class Vertex:
    """A job vertex: its REST id, its id in the topology, and where its subtasks run."""

    vertex_id: str
    name: str
    parallelism: int
    inputs: tuple[str, ...]  # REST ids of the upstream vertices, in input order
    taskmanagers: tuple[str, ...]  # TaskManager id of each subtask

    @property
    def is_source(self) -> bool:
        return not self.inputs


@dataclass(frozen=True)
class JobGraph:
    """The vertices of a job with their topology ids and the TaskManagers' cores."""

    job_id: str
    name: str
    start_time: float
    vertices: tuple[Vertex, ...]
    ids: dict[str, str]  # REST vertex id -> topology id
    cores: dict[str, float]  # TaskManager id -> CPU cores

    def node_of(self, vertex: Vertex, subtask: int, mode: str) -> str:
        """The node a subtask's samples are charged to (a source's: its TaskManager)."""
        if mode == "subtask" and not vertex.is_source:
            return _thread_node(self.ids[vertex.vertex_id])
        return tm_node(vertex.taskmanagers[subtask])


def tm_node(taskmanager_id: str) -> str:
    """A TaskManager's node id: short and stable while the TaskManager lives."""
    return f"tm-{_SLUG.sub('-', taskmanager_id)[:8]}"


def _thread_node(operator_id: str) -> str:
    return f"{operator_id}-threads"


def vertex_slug(name: str) -> str:
    """A topology id from a vertex name: ``Source: clicks`` -> ``clicks``,
    ``sink: Writer`` -> ``sink``, ``Map -> Filter`` -> ``Map-Filter``."""
    text = name.replace("<br/>", " ").strip()
    if text.lower().startswith("source:"):
        text = text.split(":", 1)[1]
    elif ":" in text:
        text = text.split(":", 1)[0]
    slug = _SLUG.sub("-", text.replace("->", "-")).strip("-._")
    return re.sub(r"-{2,}", "-", slug) or "vertex"


def job_graph(
    job: dict[str, Any], plan: dict[str, Any], vertex_details: dict[str, dict[str, Any]],
    taskmanagers: dict[str, Any],
) -> JobGraph:  # fmt: skip
    """Combine the REST answers into a :class:`JobGraph` (raises on an inconsistent job)."""
    edges: dict[str, tuple[str, ...]] = {}
    for node in plan.get("plan", plan).get("nodes", []):
        ordered = sorted(node.get("inputs", []), key=lambda i: i.get("num", 0))
        edges[node["id"]] = tuple(i["id"] for i in ordered)
    vertices = []
    for entry in job.get("vertices", []):
        vid = entry["id"]
        detail = vertex_details.get(vid, {})
        subtasks = sorted(detail.get("subtasks", []), key=lambda s: s.get("subtask", 0))
        where = tuple(str(s.get("taskmanager-id", "unknown")) for s in subtasks)
        parallelism = int(entry.get("parallelism", len(where) or 1))
        if len(where) != parallelism:
            where = (where[0] if where else "unknown",) * parallelism
        vertices.append(Vertex(vid, entry["name"], parallelism, edges.get(vid, ()), where))
    if not vertices:
        raise ConnectorError(f"job {job.get('jid')}: the answer lists no vertices")
    ids: dict[str, str] = {}
    taken: Counter[str] = Counter()
    for vertex in vertices:
        base = vertex_slug(vertex.name)
        taken[base] += 1
        ids[vertex.vertex_id] = base if taken[base] == 1 else f"{base}-{taken[base]}"
    cores = {}
    for tm in taskmanagers.get("taskmanagers", []):
        hardware = float(tm.get("hardware", {}).get("cpuCores", 0) or 0)
        configured = float(tm.get("totalResource", {}).get("cpuCores", 0) or 0)
        usable = [c for c in (hardware, configured) if c > 0]
        cores[str(tm["id"])] = min(usable) if usable else 1.0
    return JobGraph(
        job_id=str(job.get("jid")),
        name=str(job.get("name") or job.get("jid")),
        start_time=float(job.get("start-time", 0)) / 1000.0,
        vertices=tuple(vertices),
        ids=ids,
        cores=cores,
    )


def topology_document(
    graph: JobGraph, mode: str = "subtask", subinterval: float = 1.0
) -> dict[str, Any]:
    """The topology file (docs/design.md, "Domain model and units") of the job, with
    ``origin`` = the job's start."""
    if mode not in NODE_MODES:
        raise ConnectorError(f"node mode must be one of {', '.join(NODE_MODES)}, got {mode!r}")
    ids = graph.ids
    sources = [{"id": ids[v.vertex_id]} for v in graph.vertices if v.is_source]
    operators = []
    placement: dict[str, str] = {}
    capacity: dict[str, float] = {}
    for vertex in graph.vertices:
        if vertex.is_source:
            continue
        op_id = ids[vertex.vertex_id]
        ports = len(vertex.inputs)
        operators.append(
            {
                "id": op_id,
                "query": graph.name,
                "inputs": [ids[u] for u in vertex.inputs],
                "cost": [PRIOR_COST] * ports if ports > 1 else PRIOR_COST,
                "selectivity": [1.0] * ports if ports > 1 else 1.0,
            }
        )
        if mode == "subtask":
            node = _thread_node(op_id)
            capacity[node] = float(vertex.parallelism)
        else:
            busiest = Counter(vertex.taskmanagers).most_common(1)[0][0]
            node = tm_node(busiest)
            capacity[node] = graph.cores.get(busiest, 1.0)
        placement[op_id] = node
    return {
        "name": graph.name,
        "subinterval": subinterval,
        "origin": graph.start_time,
        "nodes": [{"id": n, "capacity": c} for n, c in capacity.items()],
        "sources": sources,
        "operators": operators,
        "placement": placement,
    }
