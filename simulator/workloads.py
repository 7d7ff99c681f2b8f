"""Workloads: topologies with nodes, capacities and a placement, plus source event times.

* ``clickstream``: the paper's 14-operator demographic query (section VIII)
  fed by On-Off arrivals (high/low rate ratio 100, duration ratio 0.33,
  exponential period durations and inter-arrival times).
* ``clickstream-5q``: five instances of it (70 operators), each with its own
  source and On-Off pattern, one node per query by default.
* ``stocks``: the stock-trades query of section IX-A.1 in its three plans (the
  expensive user-defined select at the source, in the middle, at the sink),
  as three queries on one trade stream, one node per plan by default.
* ``random``: the paper's Fig. 6(b) random DAGs (:mod:`estimator.placement.workload`).
* a path: a topology file; its sources get the clickstream On-Off arrivals.

``load`` is the average utilization of the busiest node (the idealistic load
of Fig. 6(b): mean arrival rate times expected CPU per event over capacity).
The defaults make a stressed run: bursts push the busiest node well past
its capacity, so worst-case latency spans several subintervals.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from estimator.loaders import load_topology
from estimator.model import Topology, topology_from_dict
from estimator.placement.workload import WorkloadParameters, random_operators
from estimator.propagation import build_load_model
from simulator.errors import SimulationError

WORKLOADS = ("clickstream", "clickstream-5q", "stocks", "random")
DEFAULT_NODES = {"clickstream": 1, "clickstream-5q": 5, "stocks": 3, "random": 4}
"""Nodes of each named workload when ``nodes`` is not given: one per query for the
multi-query workloads (clickstream-5q's 70 operators do not fit one node's share)."""
DEFAULT_LOAD = 0.85
DEFAULT_DURATION = 60.0
LINK_DELAY = 0.002
LINK_BANDWIDTH = 50_000_000.0


@dataclass(frozen=True)
class OnOff:
    """The On-Off arrival model: alternating low and high periods (low first)."""

    rate_ratio: float = 100.0  # average high rate / average low rate
    duration_ratio: float = 0.33  # average high duration / average low duration
    mean_low_duration: float = 6.0  # seconds

    def mean_rate_factor(self) -> float:
        """Mean rate over the low rate."""
        high = self.duration_ratio
        return (self.rate_ratio * high + 1.0) / (high + 1.0)


def on_off_times(
    model: OnOff,
    mean_rate: float,
    duration: float,
    rng: np.random.Generator,
    *,
    invert: bool = False,
) -> np.ndarray:
    """Event times in [0, duration) with the given long-run mean rate.

    Period boundaries are drawn first (exponential durations, low period
    first), then within each period events form a Poisson process
    (exponential inter-arrival times), drawn as a Poisson count with sorted
    uniform times, which is the same process. ``invert`` swaps the high and
    low rates over the same boundaries, so a stream drawn with the same
    generator state and ``invert`` is anti-correlated with the original.
    """
    low_rate = mean_rate / model.mean_rate_factor()
    means = np.array([model.mean_low_duration, model.mean_low_duration * model.duration_ratio])
    boundaries = [0.0]
    while boundaries[-1] < duration:
        phase = (len(boundaries) - 1) % 2
        boundaries.append(boundaries[-1] + float(rng.exponential(means[phase])))
    edges = np.minimum(np.array(boundaries), duration)
    chunks = []
    for k in range(len(edges) - 1):
        high = (k % 2 == 1) != invert
        length = edges[k + 1] - edges[k]
        rate = low_rate * (model.rate_ratio if high else 1.0)
        count = int(rng.poisson(rate * length))
        chunks.append(np.sort(edges[k] + rng.uniform(0.0, length, count)))
    return np.concatenate(chunks) if chunks else np.zeros(0)


class OnOffStream:
    """One source's On-Off events drawn period by period, so that a run read in pieces
    (:meth:`until` with growing ends) gets the same events as one read at once.

    Period lengths come from ``boundaries``, the events of each whole period (a Poisson
    count, sorted uniform times) from ``events``; a period is drawn the first time a read
    reaches into it and its events after the read's end are kept for the next read.
    ``invert`` swaps the high and low rates, as in :func:`on_off_times` (a twin stream
    drawn with the same boundary generator is anti-correlated with the original).
    """

    def __init__(
        self,
        model: OnOff,
        mean_rate: float,
        boundaries: np.random.Generator,
        events: np.random.Generator,
        *,
        invert: bool = False,
        offset: float = 0.0,
    ):
        self._model = model
        self._low_rate = mean_rate / model.mean_rate_factor()
        self._boundaries = boundaries
        self._events = events
        self._invert = invert
        self._period_end = offset  # the end of the periods drawn so far
        self._periods = 0
        self._left = np.zeros(0)  # drawn events after the previous read's end

    def until(self, end: float) -> np.ndarray:
        """The events in [end of the previous read (or the offset), ``end``), sorted."""
        chunks = [self._left]
        while self._period_end < end:
            high = (self._periods % 2 == 1) != self._invert
            mean = self._model.mean_low_duration * (
                self._model.duration_ratio if self._periods % 2 == 1 else 1.0
            )
            length = float(self._boundaries.exponential(mean))
            rate = self._low_rate * (self._model.rate_ratio if high else 1.0)
            count = int(self._events.poisson(rate * length))
            chunks.append(np.sort(self._period_end + self._events.uniform(0.0, length, count)))
            self._period_end += length
            self._periods += 1
        drawn = np.concatenate(chunks)
        cut = int(np.searchsorted(drawn, end, side="left"))
        self._left = drawn[cut:]
        return drawn[:cut]


class ArrivalStream:
    """Every source of an :class:`ArrivalModel` as :class:`OnOffStream`s: the arrivals of
    a run that has no end yet (the live simulator reads one segment at a time)."""

    def __init__(self, streams: Mapping[str, OnOffStream]):
        self._streams = dict(streams)

    def until(self, end: float) -> dict[str, np.ndarray]:
        """Event times per source from the previous read's end to ``end``."""
        return {name: stream.until(end) for name, stream in self._streams.items()}


@dataclass(frozen=True)
class StreamModel:
    """How one source's events are drawn: On-Off with a mean rate, or the inverted
    phases of another source (``twin``) for anti-correlated streams."""

    on_off: OnOff
    rate: float
    twin: str | None = None


@dataclass(frozen=True)
class ArrivalModel:
    """The arrival processes of a workload's sources."""

    streams: Mapping[str, StreamModel]

    def sample(
        self, duration: float, rng: np.random.Generator, offset: float = 0.0
    ) -> dict[str, np.ndarray]:
        """Event times per source in [offset, offset + duration)."""
        seeds = {
            name: int(rng.integers(2**32)) for name, m in self.streams.items() if m.twin is None
        }
        out = {}
        for name, m in self.streams.items():
            base = m.twin or name
            times = on_off_times(
                m.on_off,
                m.rate,
                duration,
                np.random.default_rng(seeds[base]),
                invert=m.twin is not None,
            )
            out[name] = times + offset
        return out

    def stream(self, rng: np.random.Generator, offset: float = 0.0) -> ArrivalStream:
        """The same processes without an end, read piece by piece from ``offset`` on:
        reads up to T give the same events however the time before T is cut."""
        seeds = {
            name: int(rng.integers(2**32)) for name, m in self.streams.items() if m.twin is None
        }
        return ArrivalStream(
            {
                name: OnOffStream(
                    m.on_off,
                    m.rate,
                    np.random.default_rng([seeds[m.twin or name], 0]),
                    np.random.default_rng([seeds[m.twin or name], 1, m.twin is not None]),
                    invert=m.twin is not None,
                    offset=offset,
                )
                for name, m in self.streams.items()
            }
        )


# ---------------------------------------------------------------------------
# Query templates
# ---------------------------------------------------------------------------

# (id, inputs, cost in CPU-s per event per port, selectivity per port)
CLICKSTREAM_OPERATORS: tuple[
    tuple[str, tuple[str, ...], tuple[float, ...], tuple[float, ...]], ...
] = (
    ("input", ("clicks",), (20e-6,), (1.0,)),
    ("parse_url", ("input",), (45e-6,), (1.0,)),
    ("project", ("parse_url",), (6e-6,), (1.0,)),
    ("select_domain", ("project",), (10e-6,), (0.45,)),
    ("extract_demographics", ("select_domain",), (35e-6,), (1.0,)),
    ("select_valid", ("extract_demographics",), (8e-6,), (0.9,)),
    ("select_male", ("select_valid",), (5e-6,), (0.5,)),
    ("select_female", ("select_valid",), (5e-6,), (0.5,)),
    ("window_male", ("select_male",), (15e-6,), (0.3,)),
    ("window_female", ("select_female",), (15e-6,), (0.3,)),
    ("window_total", ("select_valid",), (12e-6,), (0.2,)),
    (
        "join",
        ("window_male", "window_female", "window_total"),
        (20e-6, 20e-6, 20e-6),
        (0.5, 0.5, 0.5),
    ),
    ("percentage", ("join",), (25e-6,), (1.0,)),
    ("output", ("percentage",), (8e-6,), (1.0,)),
)


def clickstream_operators(prefix: str, source: str, query: str) -> list[dict[str, Any]]:
    """The 14 operators of one clickstream query, ids prefixed."""
    rename = {"clicks": source}
    ops = []
    for op_id, inputs, cost, sel in CLICKSTREAM_OPERATORS:
        ops.append(
            {
                "id": f"{prefix}{op_id}",
                "query": query,
                "inputs": [rename.get(i, f"{prefix}{i}") for i in inputs],
                "cost": list(cost),
                "selectivity": list(sel),
            }
        )
    return ops


def stocks_operators() -> list[dict[str, Any]]:
    """The three plans of the stock-trades query: the UDS at the source, middle and sink.

    Trades rise with probability 0.8, so about 20% are falling trades; pairs of
    falling trades with similar volumes within a minute are few; the UDS on
    the reviews is the expensive operator with a low selectivity.
    """
    uds_cost, uds_sel = 400e-6, 0.3
    plans = {
        "source": [
            ("uds", "trades", uds_cost, uds_sel),
            ("falling", "uds", 10e-6, 0.2),
            ("pairs", "falling", 30e-6, 2.0),
            ("output", "pairs", 5e-6, 1.0),
        ],
        "middle": [
            ("falling", "trades", 10e-6, 0.2),
            ("uds", "falling", uds_cost, uds_sel),
            ("pairs", "uds", 30e-6, 2.0),
            ("output", "pairs", 5e-6, 1.0),
        ],
        "sink": [
            ("falling", "trades", 10e-6, 0.2),
            ("pairs", "falling", 30e-6, 2.0),
            ("uds", "pairs", uds_cost, uds_sel),
            ("output", "uds", 5e-6, 1.0),
        ],
    }
    ops = []
    for plan, steps in plans.items():
        for op_id, upstream, cost, sel in steps:
            ops.append(
                {
                    "id": f"{plan}_{op_id}",
                    "query": f"plan_{plan}",
                    "inputs": [upstream if upstream == "trades" else f"{plan}_{upstream}"],
                    "cost": cost,
                    "selectivity": sel,
                }
            )
    return ops


# ---------------------------------------------------------------------------
# Placement, links and load scaling
# ---------------------------------------------------------------------------


def contiguous_placement(groups: list[list[str]], nodes: list[str]) -> dict[str, str]:
    """Split each group (a query in topological order) into contiguous runs over the nodes."""
    placement = {}
    for g, ops in enumerate(groups):
        if len(nodes) <= len(groups):
            for op in ops:
                placement[op] = nodes[g % len(nodes)]
            continue
        for k, op in enumerate(ops):
            placement[op] = nodes[min(k * len(nodes) // len(ops), len(nodes) - 1)]
    return placement


def full_mesh(nodes: list[str]) -> list[dict[str, Any]]:
    return [
        {"from": a, "to": b, "delay": LINK_DELAY, "bandwidth": LINK_BANDWIDTH}
        for a in nodes
        for b in nodes
        if a != b
    ]


def rate_for_load(
    topology: Topology, load: float, weights: Mapping[str, float]
) -> dict[str, float]:
    """Per-source mean rates (proportional to ``weights``) giving the busiest node ``load``."""
    unit = np.array([[weights.get(s, 0.0)] for s in topology.source_ids])
    model = build_load_model(topology, unit)
    per_op = model.operator_dlts()[:, 0]
    busy = dict.fromkeys(topology.node_ids, 0.0)
    for k, op in enumerate(topology.operator_ids):
        busy[topology.placement[op]] += per_op[k]
    worst = max(busy[n] / topology.capacity_by_node[n] for n in busy)
    if worst <= 0:
        raise SimulationError("workload: the operators carry no load")
    scale = load / worst
    return {s: weights.get(s, 0.0) * scale for s in topology.source_ids}


def _check(nodes: int, load: float) -> None:
    if nodes < 1:
        raise SimulationError(f"--nodes must be at least 1, got {nodes}")
    if not (load > 0 and math.isfinite(load)):
        raise SimulationError(f"--load must be positive, got {load}")


# ---------------------------------------------------------------------------
# Workload builders
# ---------------------------------------------------------------------------


def workload_model(
    name: str, *, nodes: int | None = None, load: float = DEFAULT_LOAD, seed: int = 0
) -> tuple[Topology, ArrivalModel]:
    """A workload by name (or topology file path): the topology and its arrival processes."""
    rng = np.random.default_rng(seed)
    count = DEFAULT_NODES.get(name, 1) if nodes is None else nodes
    if name == "clickstream":
        return _clickstream(1, count, load, rng)
    if name == "clickstream-5q":
        return _clickstream(5, count, load, rng)
    if name == "stocks":
        return _stocks(count, load)
    if name == "random":
        return _random(count, load, rng)
    path = Path(name)
    if path.suffix.lower() in (".yaml", ".yml", ".json") or path.exists():
        _check(1, load)
        topology = load_topology(path)
        rates = rate_for_load(topology, load, dict.fromkeys(topology.source_ids, 1.0))
        return topology, ArrivalModel({s: StreamModel(OnOff(), r) for s, r in rates.items()})
    raise SimulationError(
        f"unknown workload '{name}' (expected one of {', '.join(WORKLOADS)} or a topology file)"
    )


def workload(
    name: str,
    *,
    nodes: int | None = None,
    duration: float = DEFAULT_DURATION,
    load: float = DEFAULT_LOAD,
    seed: int = 0,
) -> tuple[Topology, dict[str, np.ndarray]]:
    """A workload by name (or topology file path): the topology and its source event times
    over ``duration`` seconds from 0 (the topology's origin)."""
    if not (duration > 0 and math.isfinite(duration)):
        raise SimulationError(f"--duration must be a positive number of seconds, got {duration}")
    topology, model = workload_model(name, nodes=nodes, load=load, seed=seed)
    return topology, model.sample(duration, np.random.default_rng([seed, 1]))


def _clickstream(
    queries: int, nodes: int, load: float, rng: np.random.Generator
) -> tuple[Topology, ArrivalModel]:
    _check(nodes, load)
    node_ids = [f"n{k + 1}" for k in range(nodes)]
    ops: list[dict[str, Any]] = []
    groups = []
    sources: list[dict[str, Any]] = []
    for q in range(queries):
        prefix = "" if queries == 1 else f"q{q + 1}_"
        source = "clicks" if queries == 1 else f"clicks{q + 1}"
        query = "clickstream" if queries == 1 else f"q{q + 1}"
        sources.append({"id": source, "event_bytes": 400})
        block = clickstream_operators(prefix, source, query)
        ops.extend(block)
        groups.append([o["id"] for o in block])
    document: dict[str, Any] = {
        "name": "clickstream" if queries == 1 else f"clickstream-{queries}q",
        "subinterval": 1.0,
        "nodes": [{"id": n, "capacity": 1.0} for n in node_ids],
        "sources": sources,
        "operators": ops,
        "placement": contiguous_placement(groups, node_ids),
    }
    if nodes > 1:
        document["links"] = full_mesh(node_ids)
    topology = topology_from_dict(document)
    weights = {str(s["id"]): float(rng.uniform(0.6, 1.4)) if queries > 1 else 1.0 for s in sources}
    rates = rate_for_load(topology, load, weights)
    return topology, ArrivalModel({s: StreamModel(OnOff(), r) for s, r in rates.items()})


def _stocks(nodes: int, load: float) -> tuple[Topology, ArrivalModel]:
    _check(nodes, load)
    node_ids = [f"n{k + 1}" for k in range(nodes)]
    ops = stocks_operators()
    groups = [
        [o["id"] for o in ops if o["query"] == q] for q in dict.fromkeys(o["query"] for o in ops)
    ]
    document: dict[str, Any] = {
        "name": "stocks",
        "subinterval": 1.0,
        "nodes": [{"id": n, "capacity": 1.0} for n in node_ids],
        "sources": [{"id": "trades", "event_bytes": 200}],
        "operators": ops,
        "placement": contiguous_placement(groups, node_ids),
    }
    if nodes > 1:
        document["links"] = full_mesh(node_ids)
    topology = topology_from_dict(document)
    rates = rate_for_load(topology, load, {"trades": 1.0})
    return topology, ArrivalModel({"trades": StreamModel(OnOff(), rates["trades"])})


RANDOM = WorkloadParameters(low_duration=6.0)
"""Fig. 6(b) as the simulator runs it: mean low periods of 6 s (1 s subintervals)."""
RANDOM_ON_OFF = OnOff(
    RANDOM.rate_ratio, RANDOM.duration_ratio, RANDOM.low_duration * RANDOM.subinterval
)


def _random(nodes: int, load: float, rng: np.random.Generator) -> tuple[Topology, ArrivalModel]:
    """Fig. 6(b) (:func:`estimator.placement.workload.random_operators`, operators per node
    as in the paper), random placement, a full link mesh, busiest node at ``load``;
    anti-correlated operators read the inverted On-Off phases of their source."""
    _check(nodes, load)
    node_ids = [f"n{k + 1}" for k in range(nodes)]
    graph = random_operators(
        rng, nodes * RANDOM.operators_per_scale // RANDOM.nodes_per_scale, RANDOM
    )
    sources = [*graph.sources, *graph.twins]
    document = {
        "name": "random",
        "subinterval": RANDOM.subinterval,
        "nodes": [{"id": n, "capacity": 1.0} for n in node_ids],
        "sources": [{"id": s} for s in sources],
        "operators": list(graph.operators),
        "placement": {o["id"]: node_ids[int(rng.integers(nodes))] for o in graph.operators},
        "links": full_mesh(node_ids) if nodes > 1 else [],
    }
    topology = topology_from_dict(document)
    rates = rate_for_load(topology, load, dict.fromkeys(sources, 1.0))
    return topology, ArrivalModel(
        {s: StreamModel(RANDOM_ON_OFF, rates[s], graph.twins.get(s)) for s in sources}
    )
