"""Domain model: nodes, sources, operators, placement and links (docs/design.md, "Domain
model and units").

A :class:`Topology` is immutable and validated on construction through
:func:`topology_from_dict`; every later stage (estimator, simulator, ingestion,
dashboard) can rely on ids being unique, references resolving, the operator
graph being acyclic and all numbers being finite and in range.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np

from estimator.errors import ModelError

DEFAULT_SUBINTERVAL = 1.0
MAX_MAGNITUDE = 1e15
"""Largest magnitude of any number in a topology, arrival series or query file: far
above every real cost, rate, bandwidth or epoch time, and low enough that products and
sums of them stay finite (1e300 would overflow to infinity)."""
SUBINTERVAL_RANGE = (1e-3, 86_400.0)
"""Accepted subinterval widths in seconds (a millisecond to a day): a width outside
makes interval numbers overflow or every run one interval long."""
CAPACITY_RANGE = (1e-3, 1e6)
"""Accepted node capacities in reference cores: a smaller one turns a second of work
into a busy span of weeks, a larger one is no machine."""
BUNDLE_TIME_RANGE = (1e-3, 3_600.0)
MAX_BUNDLE_SIZE = 100_000_000
"""Accepted bundle times of a Python operator in seconds (Flink's is a positive number
of milliseconds; an hour-long bundle is no streaming job)."""
MAX_SLOTS = 1024
"""Task slots a TaskManager may have, recorded or asked for in a what-if."""
PYTHON_WORKERS = ("per-slot", "shared")
"""How a TaskManager runs its Python operators: one Python worker process per task slot
that holds any (PyFlink's process mode, on a cluster), or one interpreter for all of
them (loopback mode: a job on the MiniCluster its PyFlink program starts)."""
DEFAULT_EVENT_BYTES = 100.0
OPERATOR_MODELS = ("linear", "product")


@dataclass(frozen=True)
class Node:
    """A machine; ``capacity`` is in reference CPU-seconds per second.

    ``host`` names a node whose capacity this node's work also uses: a thread (or
    slot) inside a machine. The work placed on the node loads the node and its host,
    so a host saturates when the threads it carries together want more than its
    cores, although none of them is full (a Flink TaskManager's cores shared by its
    subtasks' threads). A host has no host of its own.

    ``bundle_time`` (seconds) marks a thread that runs Python operators in bundles
    (Flink's ``python.fn-execution.bundle.time``), each bundle finished at once when it
    holds ``bundle_size`` records (``python.fn-execution.bundle.size``; None: no such
    limit): their bundle cycle adds latency that rises with the thread's work well
    before it is full (:mod:`estimator.bundles`). A checkpoint barrier also finishes
    every bundle: ``checkpoint_interval`` (seconds; Flink's
    ``execution.checkpointing.interval``, None: no checkpoints) is how often one comes.
    On a TaskManager (a node with ``python_workers``) they are the settings its Python
    operators run with, which their threads take
    (:func:`estimator.python_worker.with_python_workers`).

    ``slots`` are a TaskManager's task slots where the engine said how many it has
    (Flink's ``taskmanager.numberOfTaskSlots``): a rescale fills them before it needs
    another TaskManager (:mod:`estimator.parallelism`). ``python_workers`` says how a
    TaskManager runs Python operators (:data:`PYTHON_WORKERS`; None: one interpreter,
    :mod:`estimator.python_worker`).
    """

    id: str
    capacity: float
    host: str | None = None
    bundle_time: float | None = None
    bundle_size: int | None = None
    slots: int | None = None
    python_workers: str | None = None
    checkpoint_interval: float | None = None

    @property
    def bundles(self) -> bool:
        """Whether the node is a thread of Python operators with a bundle cycle."""
        return self.bundle_time is not None and self.python_workers is None


def node_entry(
    node_id: str,
    capacity: float,
    host: str | None = None,
    bundle_time: float | None = None,
    bundle_size: int | None = None,
    slots: int | None = None,
    python_workers: str | None = None,
    checkpoint_interval: float | None = None,
) -> dict[str, Any]:
    """A node as the topology document writes it: optional keys only when set."""
    entry: dict[str, Any] = {"id": node_id, "capacity": capacity}
    if host is not None:
        entry["host"] = host
    if slots is not None:
        entry["slots"] = slots
    if python_workers is not None:
        entry["python_workers"] = python_workers
    if bundle_time is not None:
        entry["bundle_time"] = bundle_time
        if bundle_size is not None:
            entry["bundle_size"] = bundle_size
        if checkpoint_interval is not None:
            entry["checkpoint_interval"] = checkpoint_interval
    return entry


@dataclass(frozen=True)
class Source:
    """An external event stream; ``event_bytes`` sizes its events on network links."""

    id: str
    event_bytes: float = DEFAULT_EVENT_BYTES


@dataclass(frozen=True)
class Operator:
    """A streaming operator with per-input-port cost (CPU-s/event) and selectivity.

    ``model`` is ``linear`` (outputs = sum of sigma_q * A_q) or ``product``
    (a windowed join: outputs = product_coefficient * prod_q A_q per subinterval,
    the non-linear model of the paper's section VI-C).
    """

    id: str
    query: str
    inputs: tuple[str, ...]
    cost: tuple[float, ...]
    selectivity: tuple[float, ...]
    model: str = "linear"
    product_coefficient: float = 0.0
    event_bytes: float = DEFAULT_EVENT_BYTES


@dataclass(frozen=True)
class Link:
    """A directed network link between two nodes (paper section VII-B).

    ``bandwidth`` is in bytes per second (``None``: unconstrained) and
    ``delay`` is the propagation delay in seconds.
    """

    src: str
    dst: str
    delay: float = 0.0
    bandwidth: float | None = None


@dataclass(frozen=True)
class Topology:
    """A validated query graph with its placement; build it with :func:`topology_from_dict`."""

    name: str
    subinterval: float
    nodes: tuple[Node, ...]
    sources: tuple[Source, ...]
    operators: tuple[Operator, ...]
    placement: Mapping[str, str]
    links: tuple[Link, ...] = ()
    origin: float = 0.0
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @cached_property
    def node_ids(self) -> tuple[str, ...]:
        return tuple(n.id for n in self.nodes)

    @cached_property
    def source_ids(self) -> tuple[str, ...]:
        return tuple(s.id for s in self.sources)

    @cached_property
    def operator_ids(self) -> tuple[str, ...]:
        return tuple(o.id for o in self.operators)

    @cached_property
    def node_index(self) -> dict[str, int]:
        """Node id -> its row in ``node_ids``."""
        return {n: k for k, n in enumerate(self.node_ids)}

    @cached_property
    def operator_index(self) -> dict[str, int]:
        """Operator id -> its row in ``operator_ids``."""
        return {o: k for k, o in enumerate(self.operator_ids)}

    @cached_property
    def operator_query_rows(self) -> tuple[int, ...]:
        """Per operator, the row of its query in ``queries``."""
        row = {q: k for k, q in enumerate(self.queries)}
        return tuple(row[o.query] for o in self.operators)

    @cached_property
    def operator_cost(self) -> tuple[float, ...]:
        """Per operator, its per-event cost summed over its input ports."""
        return tuple(sum(o.cost) for o in self.operators)

    @cached_property
    def input_offsets(self) -> tuple[int, ...]:
        """Rows of the operators' input ports, one per (operator, port) in topology order:
        operator j's ports are rows ``input_offsets[j]`` .. ``input_offsets[j + 1] - 1``
        (the layout of per-port work, e.g. :func:`estimator.runs.input_matrix`)."""
        out = [0]
        for op in self.operators:
            out.append(out[-1] + len(op.inputs))
        return tuple(out)

    @cached_property
    def operator_by_id(self) -> dict[str, Operator]:
        return {o.id: o for o in self.operators}

    @cached_property
    def capacity_by_node(self) -> dict[str, float]:
        return {n.id: n.capacity for n in self.nodes}

    @cached_property
    def queries(self) -> tuple[str, ...]:
        """Query ids in first-appearance order."""
        return tuple(dict.fromkeys(o.query for o in self.operators))

    @cached_property
    def sinks(self) -> tuple[str, ...]:
        """Operators with no downstream operator."""
        consumed = {i for o in self.operators for i in o.inputs}
        return tuple(o.id for o in self.operators if o.id not in consumed)

    @cached_property
    def downstream(self) -> dict[str, tuple[tuple[str, int], ...]]:
        """For every source and operator, the (operator, port) pairs it feeds."""
        out: dict[str, list[tuple[str, int]]] = {i: [] for i in self.source_ids}
        out.update({o.id: [] for o in self.operators})
        for op in self.operators:
            for port, upstream in enumerate(op.inputs):
                out[upstream].append((op.id, port))
        return {k: tuple(v) for k, v in out.items()}

    @cached_property
    def topological_order(self) -> tuple[str, ...]:
        """Operator ids so that every operator follows all of its upstream operators."""
        return _topological_order(self.operators, set(self.source_ids))

    def operators_of_query(self, query: str) -> tuple[str, ...]:
        """The operators whose work the query's events go through: its own and every
        operator upstream of them (an operator shared by two queries' sinks is in both)."""
        return self.query_members[query]

    @cached_property
    def query_members(self) -> dict[str, tuple[str, ...]]:
        """Per query, :meth:`operators_of_query` in topology order."""
        by_id = self.operator_by_id
        out: dict[str, tuple[str, ...]] = {}
        for query in self.queries:
            members: set[str] = set()
            stack = [o.id for o in self.operators if o.query == query]
            while stack:
                current = stack.pop()
                if current in members or current not in by_id:
                    continue
                members.add(current)
                stack.extend(by_id[current].inputs)
            out[query] = tuple(o for o in self.operator_ids if o in members)
        return out

    @cached_property
    def hosted(self) -> bool:
        """Whether some node has a host (its work also loads another node)."""
        return any(n.host is not None for n in self.nodes)

    def with_hosts(self, node_rows: np.ndarray) -> np.ndarray:
        """Node rows (nodes first, in ``node_ids`` order, any trailing shape) with each
        host's row raised by the rows of the nodes it hosts; the rows themselves when no
        node has a host."""
        if not self.hosted:
            return node_rows
        out = node_rows.copy()
        index = self.node_index
        for node in self.nodes:
            if node.host is not None:
                out[index[node.host]] += node_rows[index[node.id]]
        return out

    def hosts_of(self, nodes: Iterable[str]) -> set[str]:
        """``nodes`` and the hosts they are in."""
        host = {n.id: n.host for n in self.nodes}
        return {x for n in nodes for x in (n, host.get(n)) if x is not None}

    def with_placement(self, placement: Mapping[str, str]) -> Topology:
        """A copy with another placement (validated); itself if the placement is its own.
        Only the placement is checked again: nothing else in a topology depends on it."""
        checked = validate_placement(placement, self.operator_ids, self.node_ids)
        if checked == dict(self.placement):
            return self
        return replace(self, placement=checked)

    def with_changes(self, **changes: Any) -> Topology:
        """A copy with top-level fields of the file format replaced, validated again."""
        return topology_from_dict({**self.to_dict(), **changes})

    def to_dict(self) -> dict[str, Any]:
        """The topology in the file format of docs/design.md, "Domain model and units"
        (round-trips)."""

        def scalar_or_list(values: tuple[float, ...]) -> float | list[float]:
            return values[0] if len(values) == 1 else list(values)

        ops = []
        for o in self.operators:
            entry: dict[str, Any] = {
                "id": o.id,
                "query": o.query,
                "inputs": list(o.inputs),
                "cost": scalar_or_list(o.cost),
                "selectivity": scalar_or_list(o.selectivity),
            }
            if o.model != "linear":
                entry["model"] = o.model
                entry["product_coefficient"] = o.product_coefficient
            if o.event_bytes != DEFAULT_EVENT_BYTES:
                entry["event_bytes"] = o.event_bytes
            ops.append(entry)
        sources: list[dict[str, Any]] = []
        for s in self.sources:
            src: dict[str, Any] = {"id": s.id}
            if s.event_bytes != DEFAULT_EVENT_BYTES:
                src["event_bytes"] = s.event_bytes
            sources.append(src)
        out: dict[str, Any] = {
            **dict(self.extra),
            "name": self.name,
            "subinterval": self.subinterval,
            "origin": self.origin,
            "nodes": [
                node_entry(
                    n.id,
                    n.capacity,
                    n.host,
                    n.bundle_time,
                    n.bundle_size,
                    n.slots,
                    n.python_workers,
                    n.checkpoint_interval,
                )
                for n in self.nodes
            ],
            "sources": sources,
            "operators": ops,
            "placement": dict(self.placement),
        }
        if self.links:
            out["links"] = [
                {"from": lk.src, "to": lk.dst, "delay": lk.delay, "bandwidth": lk.bandwidth}
                for lk in self.links
            ]
        return out


def _topological_order(operators: Sequence[Operator], sources: set[str]) -> tuple[str, ...]:
    """Kahn's algorithm in file order; raises ModelError naming an operator on a cycle."""
    position = {o.id: k for k, o in enumerate(operators)}
    pending = {o.id: {i for i in o.inputs if i not in sources} for o in operators}
    children: dict[str, list[str]] = {o.id: [] for o in operators}
    for o in operators:
        for i in set(o.inputs) - sources:
            children[i].append(o.id)
    ready = [position[o.id] for o in operators if not pending[o.id]]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        current = operators[heapq.heappop(ready)].id
        order.append(current)
        for child in children[current]:
            pending[child].discard(current)
            if not pending[child]:
                heapq.heappush(ready, position[child])
    if len(order) != len(operators):
        stuck = sorted(k for k, v in pending.items() if v)
        raise ModelError(f"operator graph has a cycle through operator '{stuck[0]}'")
    return tuple(order)


# ---------------------------------------------------------------------------
# Parsing and validation
# ---------------------------------------------------------------------------


def _require(mapping: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in mapping:
        raise ModelError(f"{where}: missing field '{key}'")
    return mapping[key]


def _finite(value: Any, where: str, *, positive: bool = False, nonneg: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ModelError(f"{where}: expected a number, got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise ModelError(f"{where}: must be finite, got {value!r}")
    if abs(number) > MAX_MAGNITUDE:
        raise ModelError(f"{where}: must be at most {MAX_MAGNITUDE:g} in magnitude, got {value!r}")
    if positive and number <= 0:
        raise ModelError(f"{where}: must be positive, got {value!r}")
    if nonneg and number < 0:
        raise ModelError(f"{where}: must not be negative, got {value!r}")
    return number


def _within(value: Any, where: str, bounds: tuple[float, float]) -> float:
    """A finite number within ``bounds`` (inclusive), or a ModelError naming ``where``."""
    number = _finite(value, where, positive=True)
    low, high = bounds
    if not low <= number <= high:
        raise ModelError(f"{where}: must be between {low:g} and {high:g}, got {value!r}")
    return number


def _ident(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ModelError(f"{where}: id must be a non-empty string, got {value!r}")
    return value


def _entries(data: Mapping[str, Any], key: str, *, required: bool = True) -> list[Any]:
    value = data.get(key)
    if value is None:
        if required:
            raise ModelError(f"topology: missing section '{key}'")
        return []
    if not isinstance(value, list):
        raise ModelError(f"topology: '{key}' must be a list")
    for k, entry in enumerate(value):
        if not isinstance(entry, Mapping):
            raise ModelError(f"{key}[{k}]: expected a mapping, got {entry!r}")
    return value


def _ports(value: Any, n_ports: int, where: str, *, positive: bool) -> tuple[float, ...]:
    """A per-port number list; a scalar applies to every port."""
    if isinstance(value, list):
        if len(value) != n_ports:
            raise ModelError(
                f"{where}: has {len(value)} entries but the operator has {n_ports} input(s)"
            )
        items = value
    else:
        items = [value] * n_ports
    return tuple(
        _finite(
            v,
            f"{where}[{k}]" if isinstance(value, list) else where,
            positive=positive,
            nonneg=not positive,
        )
        for k, v in enumerate(items)
    )


def topology_from_dict(data: Any) -> Topology:
    """Validate a parsed topology document and build the model; raise ModelError on problems."""
    if not isinstance(data, Mapping):
        raise ModelError("topology: the document must be a mapping at the top level")
    name = str(data.get("name", "topology"))
    subinterval = _within(
        data.get("subinterval", DEFAULT_SUBINTERVAL), "subinterval", SUBINTERVAL_RANGE
    )
    origin = _finite(data.get("origin", 0.0), "origin")

    seen: dict[str, str] = {}

    def claim(ident: str, kind: str) -> None:
        if ident in seen:
            raise ModelError(f"duplicate id '{ident}' ({kind}; already used by a {seen[ident]})")
        seen[ident] = kind

    nodes = []
    for k, entry in enumerate(_entries(data, "nodes")):
        node_id = _ident(_require(entry, "id", f"nodes[{k}]"), f"nodes[{k}]")
        claim(node_id, "node")
        capacity = _within(
            _require(entry, "capacity", f"node '{node_id}'"),
            f"node '{node_id}' capacity",
            CAPACITY_RANGE,
        )
        host = entry.get("host")
        if host is not None and not isinstance(host, str):
            raise ModelError(f"node '{node_id}' host: expected a node id, got {host!r}")
        bundle_time = entry.get("bundle_time")
        if bundle_time is not None:
            bundle_time = _within(bundle_time, f"node '{node_id}' bundle_time", BUNDLE_TIME_RANGE)
        size = entry.get("bundle_size")
        if size is not None and (
            isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= MAX_BUNDLE_SIZE
        ):
            raise ModelError(
                f"node '{node_id}' bundle_size: expected an integer in [1, {MAX_BUNDLE_SIZE}],"
                f" got {size!r}"
            )
        checkpoints = entry.get("checkpoint_interval")
        if checkpoints is not None:
            checkpoints = _within(
                checkpoints, f"node '{node_id}' checkpoint_interval", BUNDLE_TIME_RANGE
            )
        slots = entry.get("slots")
        if slots is not None and (
            isinstance(slots, bool) or not isinstance(slots, int) or not 1 <= slots <= MAX_SLOTS
        ):
            raise ModelError(
                f"node '{node_id}' slots: expected an integer in [1, {MAX_SLOTS}], got {slots!r}"
            )
        workers = entry.get("python_workers")
        if workers is not None and workers not in PYTHON_WORKERS:
            raise ModelError(
                f"node '{node_id}' python_workers: expected one of {', '.join(PYTHON_WORKERS)},"
                f" got {workers!r}"
            )
        nodes.append(Node(node_id, capacity, host, bundle_time, size, slots, workers, checkpoints))
    if not nodes:
        raise ModelError("topology: 'nodes' must list at least one node")
    _check_hosts(nodes)

    sources = []
    for k, entry in enumerate(_entries(data, "sources")):
        source_id = _ident(_require(entry, "id", f"sources[{k}]"), f"sources[{k}]")
        claim(source_id, "source")
        size = _finite(
            entry.get("event_bytes", DEFAULT_EVENT_BYTES),
            f"source '{source_id}' event_bytes",
            positive=True,
        )
        sources.append(Source(source_id, size))
    if not sources:
        raise ModelError("topology: 'sources' must list at least one source")

    raw_ops = _entries(data, "operators")
    for k, entry in enumerate(raw_ops):
        claim(_ident(_require(entry, "id", f"operators[{k}]"), f"operators[{k}]"), "operator")
    known_inputs = {s.id for s in sources} | {e["id"] for e in raw_ops}
    operators = []
    for entry in raw_ops:
        op_id = entry["id"]
        where = f"operator '{op_id}'"
        inputs = _require(entry, "inputs", where)
        if isinstance(inputs, str):
            inputs = [inputs]
        if not isinstance(inputs, list) or not inputs:
            raise ModelError(
                f"{where}: 'inputs' must be a non-empty list of source or operator ids"
            )
        for upstream in inputs:
            if not isinstance(upstream, str):
                raise ModelError(f"{where}: 'inputs' must list source or operator ids")
            if upstream not in known_inputs:
                raise ModelError(f"{where}: unknown input '{upstream}'")
            if upstream == op_id:
                raise ModelError(f"operator graph has a cycle through operator '{op_id}'")
        cost = _ports(_require(entry, "cost", where), len(inputs), f"{where} cost", positive=True)
        selectivity = _ports(
            entry.get("selectivity", 1.0), len(inputs), f"{where} selectivity", positive=False
        )
        model = entry.get("model", "linear")
        if model not in OPERATOR_MODELS:
            raise ModelError(
                f"{where}: unknown model '{model}' (expected one of {', '.join(OPERATOR_MODELS)})"
            )
        coefficient = 0.0
        if model == "product":
            if len(inputs) < 2:
                raise ModelError(f"{where}: model 'product' needs at least two inputs")
            coefficient = _finite(
                _require(entry, "product_coefficient", where),
                f"{where} product_coefficient",
                nonneg=True,
            )
        size = _finite(
            entry.get("event_bytes", DEFAULT_EVENT_BYTES), f"{where} event_bytes", positive=True
        )
        operators.append(
            Operator(
                id=op_id,
                query=str(entry.get("query", "default")),
                inputs=tuple(inputs),
                cost=cost,
                selectivity=selectivity,
                model=model,
                product_coefficient=coefficient,
                event_bytes=size,
            )
        )
    if not operators:
        raise ModelError("topology: 'operators' must list at least one operator")
    _topological_order(operators, {s.id for s in sources})

    placement = data.get("placement")
    if not isinstance(placement, Mapping):
        raise ModelError("topology: missing section 'placement' (operator id -> node id)")
    placement = validate_placement(placement, [o.id for o in operators], [n.id for n in nodes])

    links = []
    node_ids = {n.id for n in nodes}
    pairs: set[tuple[str, str]] = set()
    for k, entry in enumerate(_entries(data, "links", required=False)):
        src = _require(entry, "from", f"links[{k}]")
        dst = _require(entry, "to", f"links[{k}]")
        for end in (src, dst):
            if end not in node_ids:
                raise ModelError(f"links[{k}]: unknown node '{end}'")
        if src == dst:
            raise ModelError(f"links[{k}]: a link must join two different nodes, got '{src}' twice")
        if (src, dst) in pairs:
            raise ModelError(f"links[{k}]: duplicate link {src} -> {dst}")
        pairs.add((src, dst))
        delay = _finite(entry.get("delay", 0.0), f"link {src}->{dst} delay", nonneg=True)
        bandwidth = entry.get("bandwidth")
        if bandwidth is not None:
            bandwidth = _finite(bandwidth, f"link {src}->{dst} bandwidth", positive=True)
        links.append(Link(src, dst, delay, bandwidth))

    known_keys = {
        "name",
        "subinterval",
        "origin",
        "nodes",
        "sources",
        "operators",
        "placement",
        "links",
    }
    extra = {k: v for k, v in data.items() if k not in known_keys}
    return Topology(
        name=name,
        subinterval=subinterval,
        nodes=tuple(nodes),
        sources=tuple(sources),
        operators=tuple(operators),
        placement=placement,
        links=tuple(links),
        origin=origin,
        extra=extra,
    )


def _check_hosts(nodes: Sequence[Node]) -> None:
    """A node's host is another known node that has no host itself."""
    host = {n.id: n.host for n in nodes}
    for node in nodes:
        if node.host is None:
            continue
        if node.host not in host:
            raise ModelError(f"node '{node.id}' host: unknown node '{node.host}'")
        if node.host == node.id:
            raise ModelError(f"node '{node.id}' host: a node cannot host itself")
        if host[node.host] is not None:
            raise ModelError(
                f"node '{node.id}' host: '{node.host}' is hosted by '{host[node.host]}' itself"
            )


def validate_placement(
    placement: Mapping[str, Any], operator_ids: Iterable[str], node_ids: Iterable[str]
) -> dict[str, str]:
    """Check that a placement maps every operator, and only operators, to a known node."""
    ops = list(operator_ids)
    nodes = set(node_ids)
    known_ops = set(ops)
    for op_id, node in placement.items():
        if op_id not in known_ops:
            raise ModelError(f"placement: unknown operator '{op_id}'")
        if node not in nodes:
            raise ModelError(f"placement: operator '{op_id}' is placed on unknown node '{node}'")
    for op_id in ops:
        if op_id not in placement:
            raise ModelError(f"placement: operator '{op_id}' has no node")
    return {op_id: str(placement[op_id]) for op_id in ops}


def replace_capacities(topology: Topology, capacities: Mapping[str, float]) -> Topology:
    """A copy with some node capacities changed (validated)."""
    for node_id, value in capacities.items():
        if node_id not in topology.capacity_by_node:
            raise ModelError(f"capacities: unknown node '{node_id}'")
        _within(value, f"node '{node_id}' capacity", CAPACITY_RANGE)
    nodes = tuple(
        replace(n, capacity=float(capacities.get(n.id, n.capacity))) for n in topology.nodes
    )
    return replace(topology, nodes=nodes)


# -- placement versions over time ------------------------------------------------
BOUNDARY_TOLERANCE = 1e-9
"""Relative slack (in subintervals) under which a version time counts as on a boundary."""


def first_interval_from(valid_from: float, origin: float, subinterval: float) -> int:
    """The first subinterval a placement version valid from ``valid_from`` covers.

    Subinterval k covers [origin + k*w, origin + (k+1)*w) and takes the version in
    force at its start, so a version covers k when valid_from <= origin + k*w. A
    valid_from within :data:`BOUNDARY_TOLERANCE` subintervals of a boundary counts as
    on it, so the float rounding of origin + k*w cannot move a change by one interval.
    This is the one rule for "which version covers interval k" (see
    :func:`version_at`); storage and the dashboard both use it.
    """
    return max(0, math.ceil((valid_from - origin) / subinterval - BOUNDARY_TOLERANCE))


def version_starts(
    valid_from: Sequence[float], origin: float, subinterval: float
) -> tuple[int, ...]:
    """First subinterval of each version (sorted by valid_from); the first starts at 0."""
    return tuple(
        0 if k == 0 else first_interval_from(t, origin, subinterval)
        for k, t in enumerate(valid_from)
    )


def version_at(starts: Sequence[int], interval: int) -> int:
    """Index of the version covering ``interval``: the last one starting at or before it
    (the first version also covers anything before it)."""
    return max(0, bisect.bisect_right(list(starts), interval) - 1)
