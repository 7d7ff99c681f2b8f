"""A Flink job's graph as a Mace topology (docs/design.md, "Domain model and units"), from
REST answers.

Pure functions over the JSON of ``/jobs/<id>``, ``/jobs/<id>/plan``,
``/jobs/<id>/vertices/<vid>`` and ``/taskmanagers``.

**Operators.** A job vertex is a chain of operators that one thread per subtask runs
(operator chaining, on by default in production). The plan describes each chain as a
tree (``Source: clicks<br/>+- parse<br/>   :- a<br/>   +- b``), and Flink counts
records per chained operator (``<subtask>.<operator>.numRecordsIn``), so every chained
operator becomes a topology operator:

- a chain that starts with ``Source: X`` yields the **source** ``X``; the operators
  chained behind it are operators fed by it (their work is modelled, not hidden in
  the source);
- the vertex's busy time (one figure per subtask thread) is charged to its first
  operator after the source, the *head*; the operators chained behind the head get
  no busy time of their own and a negligible prior cost (``CHAINED_PRIOR_COST``), so
  the thread's load is the head's cost times its records, fitted on the run;
- a network edge leaves a chain from its *exit*: the last leaf of the chain tree
  that is not a sink writer (Flink does not say which chained operator feeds an
  edge; a chain forks towards sinks, rarely towards the network).

**Queries.** Every sink (an operator with no downstream operator) is a query named
after it; an operator belongs to the query of the first sink it feeds, and the
estimator counts it in every query whose sink it feeds (:meth:`Topology.query_members`).
The latency probe names its rows the same way (``query`` defaults to ``sink``).

**Resources** (``NODE_MODES``):

``subtask`` (default)
    one node per vertex: its subtasks' threads, capacity = parallelism (a subtask is
    one thread, so a vertex saturates when its threads are busy all the time), each
    hosted by its TaskManager's node, capacity = the TaskManager's CPU cores as the
    hardware reports them. The threads' work adds up on the TaskManager, so
    operators that compete for a few cores saturate the TaskManager's node while
    none of their threads is full.
``taskmanager``
    one node per TaskManager, capacity = its cores, without the thread limit.

A TaskManager's node also records its task slots (``slotsNumber``), which a what-if
on parallelism fills before it needs another TaskManager.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from connectors.errors import ConnectorError
from estimator.model import MAX_BUNDLE_SIZE, MAX_SLOTS

COUNTERS = ("numRecordsIn", "numRecordsOut", "accumulateBusyTimeMs")
"""A subtask's cumulative counters: records in, records out, busy milliseconds."""
PENDING = "pendingRecords"
"""A source's records not read yet (FLIP-33: Kafka's consumer lag, for example)."""
CHECKPOINT_KEY = "execution.checkpointing.interval"
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|milli|millis|s|sec|secs|second|seconds|min|m)?")
_DURATION_UNITS = {
    "ms": 0.001, "milli": 0.001, "millis": 0.001,
    "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0,
    "min": 60.0, "m": 60.0,
}  # fmt: skip
BUNDLE_TIME_KEY = "python.fn-execution.bundle.time"
BUNDLE_SIZE_KEY = "python.fn-execution.bundle.size"
DEFAULT_BUNDLE_TIME = 1.0
"""Flink 2.x's ``python.fn-execution.bundle.time`` default, in seconds (1000 ms)."""
DEFAULT_BUNDLE_SIZE = 1000
"""Flink 2.x's ``python.fn-execution.bundle.size`` default (``PythonOptions``)."""
PRIOR_COST = 0.001
CHAINED_PRIOR_COST = 1e-6
"""Prior cost of an operator chained behind its vertex's head: its work is measured in
the head's busy time (one figure per thread)."""
MAX_PARALLELISM = 32768
"""Flink's own upper limit of a vertex's parallelism (its max parallelism is at most
2^15): a larger value in an answer is refused, not turned into that many subtasks."""
NODE_MODES = ("subtask", "taskmanager")
_SLUG = re.compile(r"[^A-Za-z0-9_.-]+")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_METRIC_NAME = re.compile(r"[ .:,]")
METRIC_NAME_LENGTH = 80
"""Flink cuts longer operator names in its metric scopes."""
_SQL_LINE = re.compile(r"^\[(\d+)\]:(\w+)")
_SQL_SCAN = re.compile(r"^\[(\d+)\]:TableSourceScan\(table=\[\[([^\]]*)")
_TREE_MARK = re.compile(r"[+:]- ")
_COMMITTER = re.compile(r":\s*(Global\s+)?Committer$")
_LEGACY_SINK = re.compile(r"Sink:\s*(?!(Global\s+)?Committer$|Writer$)\S")
"""``Sink: <name>``, Flink's name of a legacy sink; ``Sink: Writer`` is a sink writer
(a sink of the unified API left with the default name ``Sink``)."""
_TABLE_PYTHON = re.compile(r"^Python[A-Z]\w*\[\d+\]$")
"""A Table planner's Python operator as named in a plan (``PythonCalc[2]``,
``PythonGroupAggregate[5]``, ``PythonCorrelate[3]``): its UDFs run in a Python worker."""
_SINK_WRITER = re.compile(r"(:\s*Writer$)|(^Sink:)|(^\[\d+\]:Sink\b)", re.IGNORECASE)


@dataclass(frozen=True)
class ChainedOperator:
    """One operator of a vertex's chain: its name and the chained operator feeding it."""

    name: str
    parent: int | None  # index in the chain of the operator feeding it; None: the head
    label: str = ""  # its operator name in the vertex's name, where that can be told

    @property
    def metric_name(self) -> str:
        """The name its metrics have in Flink's REST API: the operator name cut at
        ``METRIC_NAME_LENGTH`` characters, then spaces, dots, colons and commas made
        ``_`` (``Source: clicks[1]`` -> ``Source__clicks[1]``, ``a, b`` -> ``a__b``).
        The operator name is the one in the vertex's name where that can be told: the
        plan's description may not show it (a PyFlink window is described as
        ``Window(...)`` and named after its Python functions)."""
        return _METRIC_NAME.sub("_", (self.label or self.name)[:METRIC_NAME_LENGTH])


@dataclass(frozen=True)
class Vertex:
    """A job vertex: its REST id, its chain of operators, and where its subtasks run."""

    vertex_id: str
    name: str
    parallelism: int
    inputs: tuple[str, ...]  # REST ids of the upstream vertices, in input order
    taskmanagers: tuple[str, ...]  # TaskManager id of each subtask
    chain: tuple[ChainedOperator, ...] = ()  # from the plan; () or one: the vertex itself

    @property
    def is_source(self) -> bool:
        """A vertex of one source operator (a chained source starts a longer chain)."""
        return not self.inputs and len(self.chain) <= 1

    @property
    def chained_source(self) -> bool:
        return not self.inputs and len(self.chain) > 1


@dataclass(frozen=True)
class Member:
    """A topology element the vertex yields: a source or an operator."""

    id: str
    chained: ChainedOperator | None  # None: the vertex as a whole (no chain known)
    inputs: tuple[str, ...]  # topology ids (empty for a source)
    is_source: bool
    is_head: bool  # carries the vertex's busy time
    metric: str = ""  # its name in operator-scoped metrics


@dataclass(frozen=True)
class JobGraph:
    """The vertices of a job with their topology members and the TaskManagers' cores."""

    job_id: str
    name: str
    start_time: float
    vertices: tuple[Vertex, ...]
    ids: dict[str, str]  # REST vertex id -> topology id of the vertex's head (or source)
    cores: dict[str, float]  # TaskManager id -> CPU cores
    members: dict[str, tuple[Member, ...]]  # REST vertex id -> its sources and operators
    slots: dict[str, int] = field(default_factory=dict)  # TaskManager id -> task slots
    python_bundle: tuple[float, int] = (DEFAULT_BUNDLE_TIME, DEFAULT_BUNDLE_SIZE)
    """The job's Python bundles: their time (seconds) and size (records)."""
    checkpoint_interval: float | None = None
    """Seconds between the job's checkpoints (None: it takes none)."""

    def node_of(self, vertex: Vertex, subtask: int, mode: str) -> str:
        """The node a subtask's samples are charged to (a source's: its TaskManager)."""
        if mode == "subtask" and not vertex.is_source:
            return _thread_node(self.ids[vertex.vertex_id])
        return tm_node(vertex.taskmanagers[subtask])

    def python_heads(self) -> frozenset[str]:
        """Topology ids of the vertices (their heads, which carry the thread's busy time)
        whose chain holds an operator the Table planner marks as Python. A DataStream
        job's Python operators carry their own names, which say nothing of it."""
        return frozenset(
            self.ids[v.vertex_id]
            for v in self.vertices
            if any(_TABLE_PYTHON.match(c.name) for c in v.chain)
        )

    def member_node(self, vertex: Vertex, member: Member, subtask: int, mode: str) -> str:
        """The node a member's samples are charged to: a source's (also one chained in
        front of operators) is its TaskManager, an operator's the vertex's node."""
        if member.is_source:
            return tm_node(vertex.taskmanagers[subtask])
        return self.node_of(vertex, subtask, mode)


@dataclass(frozen=True)
class MemberSample:
    """One subtask's cumulative counts of one source or operator of a vertex."""

    member: Member
    records_in: float
    records_out: float
    busy_seconds: float  # NaN for a source (Flink reports none)

    def row(self, time: float, node: str, subtask: int) -> dict[str, Any]:
        """The ``samples/`` row (docs/design.md, "Raw telemetry")."""
        return {
            "time": time,
            "node": node,
            "operator": self.member.id,
            "subtask": subtask,
            "port": -1,
            "records_in": self.records_in,
            "records_out": self.records_out,
            "busy_seconds": self.busy_seconds,
        }


def subtask_samples(members: tuple[Member, ...], values: Mapping[str, float]) -> list[MemberSample]:
    """The samples one subtask of a vertex yields, from its counters keyed like Flink's
    REST metric ids without the subtask: ``numRecordsIn`` (the task's),
    ``parse.numRecordsIn`` (a chained operator's), ``accumulateBusyTimeMs``,
    ``Source__clicks.pendingRecords``. Nothing until the task's records in and out are
    reported (a subtask still deploying).

    A member standing for the whole vertex has the task's counts; a chained one its
    operator-scoped counts (none until reported; a sink writer reports no records out).
    The thread's busy time goes to the head, none to the operators chained behind it; a
    source has no busy time, and its records out include those not read yet (offered =
    read + pending: a queue in front of the source counts)."""
    task_in, task_out = values.get(COUNTERS[0]), values.get(COUNTERS[1])
    if task_in is None or task_out is None:
        return []
    busy_ms = values.get(COUNTERS[2], math.nan)
    samples = []
    for member in members:
        if member.chained is None:
            records_in, records_out = task_in, task_out
        else:
            found = values.get(f"{member.metric}.{COUNTERS[0]}")
            if found is None:
                continue
            records_in, records_out = found, values.get(f"{member.metric}.{COUNTERS[1]}", 0.0)
        busy = busy_ms / 1000.0 if member.is_head else 0.0
        if member.is_source:
            busy = math.nan
            records_out += max(values.get(f"{member.metric}.{PENDING}", 0.0), 0.0)
        samples.append(MemberSample(member, records_in, records_out, busy))
    return samples


def tm_node(taskmanager_id: str) -> str:
    """A TaskManager's node id, stable while the TaskManager lives and distinct from its
    neighbours': a MiniCluster's TaskManager (a random UUID) by the UUID's first 8
    characters, any other by its whole id (a standalone cluster's ``<host>:<port>-<suffix>``
    shares its first characters with every TaskManager of the same host or subnet)."""
    short = taskmanager_id[:8] if _UUID.fullmatch(taskmanager_id) else taskmanager_id
    return f"tm-{_SLUG.sub('-', short)}"


def _thread_node(operator_id: str) -> str:
    return f"{operator_id}-threads"


def vertex_slug(name: str) -> str:
    """A topology id from a vertex or operator name: ``Source: clicks`` -> ``clicks``,
    ``sink: Writer`` -> ``sink``, ``Map -> Filter`` -> ``Map-Filter``,
    ``[3]:Calc(select=[a])`` -> ``Calc-3``; a legacy sink (``print()``, ``add_sink``) by
    the name it was given: ``Sink: out`` -> ``out``, as a sink writer is."""
    text = name.replace("<br/>", " ").strip()
    sql = _SQL_LINE.match(text)
    if sql:
        text = f"{sql.group(2)}-{sql.group(1)}"
    elif text.lower().startswith("source:") or _LEGACY_SINK.match(text):
        text = text.split(":", 1)[1]
    elif ":" in text:
        text = text.split(":", 1)[0]
    slug = _SLUG.sub("-", text.replace("->", "-")).strip("-._")
    return re.sub(r"-{2,}", "-", slug) or "vertex"


def parse_chain(description: str) -> tuple[ChainedOperator, ...]:
    """The chain tree of a plan node's description (lines split by ``<br/>``; a line's
    depth is the column of its ``+-``/``:-`` mark divided by 3, plus one). Committers
    (``sink: Committer``) carry commits, not records: they are left out."""
    chain: list[ChainedOperator] = []
    stack: list[int] = []  # chain index of the last operator seen at each depth
    for raw in description.split("<br/>"):
        if not raw.strip():
            continue
        mark = _TREE_MARK.search(raw)
        depth = 0 if mark is None else mark.start() // 3 + 1
        name = raw[mark.end() :].strip() if mark else raw.strip()
        name = _sql_operator_name(name)
        del stack[depth:]
        if _COMMITTER.search(name):
            continue
        parent = stack[-1] if stack else None
        if depth and parent is None:
            raise ConnectorError(f"plan description: line {raw.strip()!r} has no parent")
        chain.append(ChainedOperator(name, parent))
        stack.append(len(chain) - 1)
    return tuple(chain)


def _sql_operator_name(line: str) -> str:
    """The name Flink's metrics give a SQL plan line: ``[2]:Calc(select=...)`` is
    ``Calc[2]``, a scan ``[1]:TableSourceScan(table=[[catalog, db, clicks, filter=...]])``
    is its source ``Source: clicks[1]``; other lines are names already."""
    scan = _SQL_SCAN.match(line)
    if scan:
        path = list(itertools.takewhile(lambda p: "=" not in p, scan.group(2).split(",")))
        return f"Source: {path[-1].strip() if path else 'table'}[{scan.group(1)}]"
    sql = _SQL_LINE.match(line)
    return f"{sql.group(2)}[{sql.group(1)}]" if sql else line


def with_operator_names(
    chain: tuple[ChainedOperator, ...], vertex_name: str
) -> tuple[ChainedOperator, ...]:
    """``chain`` with each operator's name from the vertex's name, which Flink builds by
    joining the chained operators' names with `` -> `` (a branching chain puts its
    branches in parentheses: there the plan's names are kept)."""
    parts = [p for p in vertex_name.split(" -> ") if not _COMMITTER.search(p)]
    linear = all(c.parent == k - 1 for k, c in enumerate(chain) if k)
    if len(chain) < 1 or not linear or len(parts) != len(chain):
        return chain
    return tuple(replace(c, label=part.strip()) for c, part in zip(chain, parts, strict=True))


def job_graph(
    job: dict[str, Any], plan: dict[str, Any], vertex_details: dict[str, dict[str, Any]],
    taskmanagers: dict[str, Any], configuration: Mapping[str, str] | None = None,
) -> JobGraph:  # fmt: skip
    """Combine the REST answers (and the job's ``configuration``, for its Python bundles)
    into a :class:`JobGraph` (raises on an inconsistent job)."""
    edges: dict[str, tuple[str, ...]] = {}
    descriptions: dict[str, str] = {}
    for node in plan.get("plan", plan).get("nodes", []):
        ordered = sorted(node.get("inputs", []), key=lambda i: i.get("num", 0))
        edges[node["id"]] = tuple(i["id"] for i in ordered)
        descriptions[node["id"]] = str(node.get("description", ""))
    vertices = []
    for entry in job.get("vertices", []):
        vid = entry["id"]
        detail = vertex_details.get(vid, {})
        subtasks = sorted(detail.get("subtasks", []), key=lambda s: s.get("subtask", 0))
        where = tuple(str(s.get("taskmanager-id", "unknown")) for s in subtasks)
        parallelism = int(entry.get("parallelism", len(where) or 1))
        if not 1 <= parallelism <= MAX_PARALLELISM:
            raise ConnectorError(
                f"vertex {vid}: parallelism {parallelism} is not between 1 and {MAX_PARALLELISM}"
            )
        if len(where) != parallelism:
            where = (where[0] if where else "unknown",) * parallelism
        chain = with_operator_names(parse_chain(descriptions.get(vid, "")), entry["name"])
        inputs = edges.get(vid, ())
        vertices.append(Vertex(vid, entry["name"], parallelism, inputs, where, chain))
    if not vertices:
        raise ConnectorError(f"job {job.get('jid')}: the answer lists no vertices")
    known = {v.vertex_id for v in vertices}
    for vertex in vertices:
        missing = [u for u in vertex.inputs if u not in known]
        if missing:
            raise ConnectorError(
                f"job {job.get('jid')}: plan edge from unknown vertex {missing[0]}"
            )
    members = _members(vertices)
    cores, slots = {}, {}
    for tm in taskmanagers.get("taskmanagers", []):
        # the cores the JVM sees (a container's CPU limit inside one); Flink's configured
        # cores are a scheduling figure that limits nothing: 1e6 in a MiniCluster, the
        # number of slots on a standalone cluster (1 on a 2-core host, by default)
        hardware = float(tm.get("hardware", {}).get("cpuCores", 0) or 0)
        configured = float(tm.get("totalResource", {}).get("cpuCores", 0) or 0)
        cores[str(tm["id"])] = hardware if hardware > 0 else configured if configured > 0 else 1.0
        count = tm.get("slotsNumber")
        if isinstance(count, int) and not isinstance(count, bool) and 1 <= count <= MAX_SLOTS:
            slots[str(tm["id"])] = count
    return JobGraph(
        job_id=str(job.get("jid")),
        name=str(job.get("name") or job.get("jid")),
        start_time=float(job.get("start-time", 0)) / 1000.0,
        vertices=tuple(vertices),
        ids={vid: _vertex_id(ms) for vid, ms in members.items()},
        cores=cores,
        members=members,
        slots=slots,
        python_bundle=python_bundle(configuration or {}),
        checkpoint_interval=checkpoint_interval(configuration or {}),
    )


def _members(vertices: list[Vertex]) -> dict[str, tuple[Member, ...]]:
    """Each vertex's sources and operators with unique topology ids and their inputs."""
    taken: Counter[str] = Counter()

    def unique(name: str) -> str:
        base = vertex_slug(name)
        taken[base] += 1
        return base if taken[base] == 1 else f"{base}-{taken[base]}"

    named: dict[str, list[str]] = {}
    for vertex in vertices:
        parts = vertex.chain if len(vertex.chain) > 1 else ()
        named[vertex.vertex_id] = [unique(c.name) for c in parts] or [unique(vertex.name)]
    exits = {v.vertex_id: named[v.vertex_id][_exit_index(v)] for v in vertices}
    out: dict[str, tuple[Member, ...]] = {}
    for vertex in vertices:
        ids = named[vertex.vertex_id]
        upstream = tuple(exits[u] for u in vertex.inputs)
        if len(vertex.chain) <= 1:
            whole = vertex.chain[0] if vertex.chain else ChainedOperator(vertex.name, None)
            member = Member(
                ids[0], None, upstream, vertex.is_source, not vertex.is_source, whole.metric_name
            )
            out[vertex.vertex_id] = (member,)
            continue
        source = vertex.chained_source
        members = []
        for k, chained in enumerate(vertex.chain):
            is_source = source and k == 0
            if chained.parent is None:
                inputs: tuple[str, ...] = () if is_source else upstream
            else:
                inputs = (ids[chained.parent],)
            head = (k == 1) if source else (k == 0)
            members.append(Member(ids[k], chained, inputs, is_source, head, chained.metric_name))
        out[vertex.vertex_id] = tuple(members)
    return out


def _vertex_id(members: tuple[Member, ...]) -> str:
    """The topology id that stands for a vertex: its head's (a lone source's)."""
    return next((m.id for m in members if m.is_head), members[0].id)


def _exit_index(vertex: Vertex) -> int:
    """The chained operator a network edge leaves the vertex from (0 without a chain)."""
    if len(vertex.chain) <= 1:
        return 0
    parents = {c.parent for c in vertex.chain}
    leaves = [k for k in range(len(vertex.chain)) if k not in parents]
    feeding = [k for k in leaves if not _SINK_WRITER.search(vertex.chain[k].name)]
    return (feeding or leaves)[-1]


def topology_document(
    graph: JobGraph, mode: str = "subtask", subinterval: float = 1.0
) -> dict[str, Any]:
    """The topology file (docs/design.md, "Domain model and units") of the job, with
    ``origin`` = the job's start."""
    if mode not in NODE_MODES:
        raise ConnectorError(f"node mode must be one of {', '.join(NODE_MODES)}, got {mode!r}")
    sources = []
    operators: list[dict[str, Any]] = []
    placement: dict[str, str] = {}
    nodes: dict[str, dict[str, Any]] = {}
    for vertex in graph.vertices:
        busiest = Counter(vertex.taskmanagers).most_common(1)[0][0]
        if busiest not in graph.cores and len(graph.cores) == 1:
            # subtasks still being deployed have no TaskManager yet ("(unassigned)"):
            # with one TaskManager there is nowhere else they can run
            busiest = next(iter(graph.cores))
        host = tm_node(busiest)
        for member in graph.members[vertex.vertex_id]:
            if member.is_source:
                sources.append({"id": member.id})
                continue
            ports = len(member.inputs)
            prior = PRIOR_COST if member.is_head else CHAINED_PRIOR_COST
            operators.append(
                {
                    "id": member.id,
                    "inputs": list(member.inputs),
                    "cost": [prior] * ports if ports > 1 else prior,
                    "selectivity": [1.0] * ports if ports > 1 else 1.0,
                }
            )
            nodes.setdefault(host, _taskmanager_node(graph, busiest))
            if mode == "subtask":
                node = _thread_node(graph.ids[vertex.vertex_id])
                nodes.setdefault(
                    node, {"id": node, "capacity": float(vertex.parallelism), "host": host}
                )
            else:
                node = host
            placement[member.id] = node
    _assign_queries(operators)
    ordered = sorted(nodes.values(), key=lambda n: "host" not in n)  # threads first
    return {
        "name": graph.name,
        "subinterval": subinterval,
        "origin": graph.start_time,
        "nodes": ordered,
        "sources": sources,
        "operators": operators,
        "placement": placement,
    }


def _taskmanager_node(graph: JobGraph, taskmanager: str) -> dict[str, Any]:
    """A TaskManager's node: its cores, its task slots where Flink said, how it runs
    Python operators (:func:`python_workers`) and their bundles' settings (the job's,
    its checkpoint interval included: a barrier finishes every bundle)."""
    node: dict[str, Any] = {
        "id": tm_node(taskmanager),
        "capacity": graph.cores.get(taskmanager, 1.0),
        "python_workers": python_workers(taskmanager),
        "bundle_time": graph.python_bundle[0],
        "bundle_size": graph.python_bundle[1],
    }
    if graph.checkpoint_interval is not None:
        node["checkpoint_interval"] = graph.checkpoint_interval
    if taskmanager in graph.slots:
        node["slots"] = graph.slots[taskmanager]
    return node


def python_bundle(configuration: Mapping[str, str]) -> tuple[float, int]:
    """The Python bundles' time (seconds) and size (records) a job's ``configuration``
    sets (``python.fn-execution.bundle.time`` in ms, ``python.fn-execution.bundle.size``),
    Flink's defaults for what it does not set or sets to no positive number (as Flink
    itself falls back)."""
    time, size = DEFAULT_BUNDLE_TIME, DEFAULT_BUNDLE_SIZE
    with contextlib.suppress(ValueError):
        millis = float(configuration.get(BUNDLE_TIME_KEY, "").strip().removesuffix("ms"))
        if math.isfinite(millis) and millis > 0:
            time = millis / 1000.0
    with contextlib.suppress(ValueError):
        records = int(configuration.get(BUNDLE_SIZE_KEY, "").strip())
        if 0 < records <= MAX_BUNDLE_SIZE:
            size = records
    return time, size


def checkpoint_interval(configuration: Mapping[str, str]) -> float | None:
    """Seconds between the checkpoints a job's ``configuration`` asks for
    (``execution.checkpointing.interval``: ``1s``, ``500 ms``, ``2 min``, or plain
    milliseconds); None where it asks for none or for no positive, readable time."""
    text = configuration.get(CHECKPOINT_KEY, "").strip().lower()
    found = _DURATION.fullmatch(text)
    if found is None:
        return None
    value = float(found.group(1))
    seconds = value * _DURATION_UNITS[found.group(2) or "ms"]
    return seconds if math.isfinite(seconds) and seconds > 0 else None


def python_workers(taskmanager_id: str) -> str:
    """How a TaskManager runs its Python operators. A MiniCluster's TaskManager (its id
    a random UUID) runs in the PyFlink program that started it, which serves every
    Python operator of the job from its own process (loopback mode): ``shared``. A
    cluster's TaskManager starts a Python worker process per slot that holds Python
    operators (process mode, measured on ``start-cluster.sh``: two workers at
    parallelism 2): ``per-slot``."""
    return "shared" if _UUID.fullmatch(taskmanager_id) else "per-slot"


def _assign_queries(operators: list[dict[str, Any]]) -> None:
    """One query per sink, named after it; an operator joins the query of the first sink
    (in topology order) it feeds."""
    consumers: dict[str, list[str]] = {o["id"]: [] for o in operators}
    for op in operators:
        for upstream in op["inputs"]:
            if upstream in consumers:
                consumers[upstream].append(op["id"])
    sinks = [o["id"] for o in operators if not consumers[o["id"]]]
    owner: dict[str, str] = {}
    by_id = {o["id"]: o for o in operators}
    for sink in sinks:
        stack = [sink]
        while stack:
            current = stack.pop()
            if current in owner or current not in by_id:
                continue
            owner[current] = sink
            stack.extend(by_id[current]["inputs"])
    for op in operators:
        op["query"] = owner[op["id"]]
