"""Small runs written into a real DuckDB file with storage.writes (no Spark)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from estimator.model import Topology, topology_from_dict
from storage.db import connect, transaction
from storage.histogram import BUCKETS
from storage.writes import (
    Version,
    merge_latency_stats,
    merge_node_busy,
    merge_operator_stats,
    merge_source_arrivals,
    write_run,
)

SMALL_TOPOLOGY = {
    "name": "small",
    "subinterval": 1.0,
    "nodes": [{"id": "n1", "capacity": 1.0}, {"id": "n2", "capacity": 2.0}],
    "sources": [{"id": "s"}],
    "operators": [
        {"id": "a", "query": "q1", "inputs": ["s"], "cost": 0.1, "selectivity": 1.0},
        {"id": "b", "query": "q1", "inputs": ["a"], "cost": 0.2, "selectivity": 1.0},
        {"id": "c", "query": "q2", "inputs": ["s"], "cost": 0.1, "selectivity": 1.0},
    ],
    "placement": {"a": "n2", "b": "n2", "c": "n1"},
}
SMALL_ARRIVALS = [5, 12, 5, 0, 10]
# a's measured CPU in interval 0: its cost fitted on the training window (interval 0) is 0.15
SMALL_CPU = {("a", 0): 0.75}
# measured max latency per interval (None: no outputs in that interval)
SMALL_LATENCY = {"q1": [0.3, 1.2, 1.0, None, 0.4], "q2": [0.1, 0.5, 0.2, None, 0.15]}


def latency_frame(run_id: str, latency: Mapping[str, Sequence[float | None]]) -> pd.DataFrame:
    rows = []
    for query, series in latency.items():
        for interval, value in enumerate(series):
            if value is None:
                continue
            rows.append(
                {
                    "run_id": run_id,
                    "query": query,
                    "interval": interval,
                    "outputs": 2,
                    "lat_sum": value * 1.5,
                    "lat_max": value,
                    "lat_p50": value * 0.5,
                    "lat_p95": value * 0.9,
                    "lat_p99": value * 0.95,
                    "histogram": np.zeros(BUCKETS, dtype=np.int64),
                }
            )
    return pd.DataFrame(rows)


def _merge_counts(
    con: Any, run_id: str, arrivals: Sequence[float], stats: list[tuple], start: int = 0
) -> None:
    """Source s's ``arrivals`` from interval ``start`` on, and operator ``stats`` rows
    (:data:`STATS_COLUMNS`), as ingestion merges them."""
    merge_source_arrivals(
        con,
        pd.DataFrame(
            {
                "run_id": run_id,
                "source": "s",
                "interval": range(start, start + len(arrivals)),
                "events": arrivals,
            }
        ).astype({"events": "int64"}),
    )
    merge_operator_stats(con, pd.DataFrame(stats, columns=list(STATS_COLUMNS)))


def write_small_run(
    db: Path,
    run_id: str = "small",
    versions: Sequence[Version] = (),
    document: Mapping[str, object] = SMALL_TOPOLOGY,
    measured_cpu: Mapping[tuple[str, int], float] = SMALL_CPU,
    arrivals: Sequence[float] = SMALL_ARRIVALS,
) -> Topology:
    """A hand-computed run: operator CPU is cost * events except the ``measured_cpu``
    entries, keyed by (operator, interval); ``arrivals`` are the events of source s."""
    topology = topology_from_dict(dict(document))
    s = np.array(arrivals, dtype=float)
    stats = []
    for op in topology.operators:
        for interval, events in enumerate(s):
            cpu = measured_cpu.get((op.id, interval), op.cost[0] * events)
            stats.append((run_id, op.id, 0, interval, int(events), int(events), cpu))
    con = connect(db)
    try:
        with transaction(con, "test run"):
            write_run(con, run_id, topology, versions)
            _merge_counts(con, run_id, s, stats)
            merge_node_busy(
                con,
                pd.DataFrame(
                    {
                        "run_id": run_id,
                        "node": ["n1"] * len(s) + ["n2"] * len(s),
                        "interval": list(range(len(s))) * 2,
                        "busy_seconds": list(np.minimum(0.1 * s, 1.0))
                        + list(np.minimum(0.15 * s, 1.0)),
                    }
                ),
            )
            merge_latency_stats(con, latency_frame(run_id, SMALL_LATENCY))
    finally:
        con.close()
    return topology


def append_small_intervals(
    db: Path, arrivals: Sequence[float], start: int = len(SMALL_ARRIVALS), run_id: str = "small"
) -> None:
    """What a later ingestion pass adds to the small run: ``arrivals`` of source s from
    interval ``start`` on, each operator's CPU its cost times its events."""
    topology = topology_from_dict(dict(SMALL_TOPOLOGY))
    intervals = range(start, start + len(arrivals))
    stats = [
        (run_id, op.id, 0, interval, int(events), int(events), op.cost[0] * events)
        for op in topology.operators
        for interval, events in zip(intervals, arrivals, strict=True)
    ]
    con = connect(db)
    try:
        with transaction(con, "test ingest"):
            _merge_counts(con, run_id, arrivals, stats, start)
    finally:
        con.close()


# A tandem q1 = a on n1 -> b on n2 (capacities 1) with q2 = c on n1, the same arrivals
# s = [5, 12, 5, 0, 10] and costs a 0.1, b 0.2, c 0.1, except measured CPU a 1.75 in
# interval 0 and b 3.0 in interval 1. By hand:
#   n1 load [2.25, 2.4, 1.0, 0, 2.0] -> CE/C [1.25, 2.65, 2.65, 1.65, 2.65],
#          release R1 = T + CE/C = [2.25, 4.65, 5.65, 5.65, 7.65];
#   n2 load [1.0, 3.0, 1.0, 0, 2.0]  -> CE/C [0, 2.0, 2.0, 1.0, 2.0]; Mace = n1's series.
# Path-aware, stage n2 (R2_p = max(R1_p, max(R2_{p-1}, R1_{p-1}) + x2_p)):
#   R2 = [2.25, 5.25, 6.25, 6.25, 8.25] -> lag [1.25, 3.25, 3.25, 2.25, 3.25]:
#   b's heavy interval 1 can only start when n1 has released interval 0, at 2.25.
TANDEM_TOPOLOGY = {
    **SMALL_TOPOLOGY,
    "nodes": [{"id": "n1", "capacity": 1.0}, {"id": "n2", "capacity": 1.0}],
    "placement": {"a": "n1", "b": "n2", "c": "n1"},
}
TANDEM_CPU = {("a", 0): 1.75, ("b", 1): 3.0}


# SMALL_TOPOLOGY with c's measured CPU 2.0 in interval 0 (a 0.75 as in SMALL_CPU): the
# bottleneck moves from n1 to n2. By hand:
#   n1 (C = 1) carries c: load [2.0, 1.2, 0.5, 0, 1.0] -> CE/C [1.0, 1.2, 0.7, 0, 0];
#   n2 (C = 2) carries a and b: load [1.75, 3.6, 1.5, 0, 3.0] -> CE/C [0, 0.8, 0.55, 0, 0.5].
# Worst: interval 1 on n1 (1.2 s, busy since 0, all of it c's). At interval 4: n2 (0.5 s,
# busy since 4), split by DLTS a 1.0, b 2.0 -> a 0.5/3, b 1.0/3.
SHIFTING_CPU = {("a", 0): 0.75, ("c", 0): 2.0}


STATS_COLUMNS = ("run_id", "operator", "port", "interval", "events_in", "events_out", "cpu_seconds")


# Query and plan files for the small run's planning. A query that fits next
# to it, and one that, on n2 as its file says, adds 0.5 * 4 = 2 CPU-s per interval to
# n2's 0.3078125 * s: loads [3.539, 5.694, 3.539, 2.0, 5.078] against 2 leave CE 9.85
# at the end, CE/C 4.925 s for q1.
QUERY_FITS = """query: q9
operators:
  - {id: x, inputs: [s2], cost: 0.01, selectivity: 1.0}
sources:
  - {id: s2, arrivals: [1, 1, 1, 1, 1]}
"""
QUERY_BREAKS_Q1 = """query: q9
operators:
  - {id: x, inputs: [s2], cost: 0.5, selectivity: 1.0}
sources:
  - {id: s2, arrivals: [4, 4, 4, 4, 4]}
placement: {x: n2}
"""
# An alternative plan of q1 on one node of capacity 2 (0.15 * s never exceeds it).
PLAN_B = """nodes: [{id: m, capacity: 2.0}]
sources: [{id: s}]
operators:
  - {id: a2, query: q1, inputs: [s], cost: 0.05, selectivity: 1.0}
  - {id: b2, query: q1, inputs: [a2], cost: 0.1, selectivity: 1.0}
placement: {a2: m, b2: m}
"""
ONE_NODE_TOPOLOGY = {
    "name": "one-node",
    "subinterval": 1.0,
    "nodes": [{"id": "n1", "capacity": 1.0}],
    "sources": [{"id": "s"}],
    "operators": [{"id": "a", "query": "q1", "inputs": ["s"], "cost": 0.1, "selectivity": 1.0}],
    "placement": {"a": "n1"},
}


def write_series_run(
    db: Path,
    run_id: str,
    document: Mapping[str, object],
    arrivals: Sequence[int],
    cpu: Mapping[str, Sequence[float]],
    latency: Mapping[str, Sequence[float | None]],
    versions: Sequence[tuple[float, Mapping[str, str]]] = (),
) -> Topology:
    """A run of one source ``s`` with the given arrivals, measured CPU per operator and
    interval (every event passes every operator) and measured max latency per query."""
    topology = topology_from_dict(dict(document))
    n = len(arrivals)
    stats = [
        (run_id, op, 0, k, int(arrivals[k]), int(arrivals[k]), float(cpu[op][k]))
        for op in topology.operator_ids
        for k in range(n)
    ]
    busy = [
        (
            run_id,
            node,
            k,
            min(1.0, sum(cpu[op][k] for op, at in topology.placement.items() if at == node)),
        )
        for node in topology.node_ids
        for k in range(n)
    ]
    con = connect(db)
    try:
        with transaction(con, "test run"):
            write_run(con, run_id, topology, versions)
            _merge_counts(con, run_id, arrivals, stats)
            merge_node_busy(
                con, pd.DataFrame(busy, columns=["run_id", "node", "interval", "busy_seconds"])
            )
            merge_latency_stats(con, latency_frame(run_id, latency))
    finally:
        con.close()
    return topology


DRIFT_INTERVALS = 40
DRIFT_FROM = 20


def write_drift_run(db: Path, run_id: str, drifting: bool) -> None:
    """One node (C = 1) and 5 events per second at 0.1 CPU-s each: no backlog, so the
    predicted band is [0, 0 + w + eps] = [0, 1.1] s and the measured latency 0.3 s is
    inside it. ``drifting``: from DRIFT_FROM on an event costs 0.3 CPU-s (1.5 CPU-s of
    work per second), the backlog grows by 0.5 s per second and the measured latency
    0.3 + 0.5 (p - 19) leaves the band (fitted on the first 10%, before the change;
    widened by w, so its top is 2.1 s) at p = 23 for good. Subintervals after 37 are not
    settled ((p + 1) + 1.1 > 40 s): one drift event, above the band, from 23 to 37,
    peak 0.3 + 0.5 * 18 - 2.1 = 7.2 s."""
    arrivals = [5] * DRIFT_INTERVALS
    cost = [0.3 if drifting and k >= DRIFT_FROM else 0.1 for k in range(DRIFT_INTERVALS)]
    latency = [
        0.3 + (0.5 * (k - DRIFT_FROM + 1) if drifting and k >= DRIFT_FROM else 0.0)
        for k in range(DRIFT_INTERVALS)
    ]
    write_series_run(
        db,
        run_id,
        ONE_NODE_TOPOLOGY,
        arrivals,
        {"a": [5 * c for c in cost]},
        {"q1": latency},
    )


def write_workload_run(db: Path, run_id: str, topology: Topology, intervals: int = 60) -> None:
    """A run of a many-query ``topology`` (e.g. the simulator's clickstream-5q): each
    source sends 2,000 to 12,000 events per subinterval (seeded), every operator of a
    query sees all of its source's events on each port, CPU is cost * events, and each
    query's measured max latency follows its node's load."""
    rng = np.random.default_rng(7)
    arrivals = {s: rng.integers(2_000, 12_000, intervals) for s in topology.source_ids}
    source_of: dict[str, str] = {}
    for op_id in topology.topological_order:
        op = topology.operator_by_id[op_id]
        first = op.inputs[0]
        source_of[op_id] = first if first in arrivals else source_of[first]
    stats = []
    cpu_of: dict[str, np.ndarray] = {}
    for op in topology.operators:
        events = arrivals[source_of[op.id]]
        cpu_of[op.id] = sum(op.cost) * events
        for port, cost in enumerate(op.cost):
            stats += [
                (run_id, op.id, port, k, int(events[k]), int(events[k]), float(cost * events[k]))
                for k in range(intervals)
            ]
    busy = []
    for node in topology.node_ids:
        load = sum(
            (cpu_of[o] for o, at in topology.placement.items() if at == node),
            np.zeros(intervals),
        )
        capacity = topology.capacity_by_node[node]
        busy += [(run_id, node, k, float(min(load[k], capacity))) for k in range(intervals)]
    latency = {q: [0.2 + 0.05 * (k % 7) for k in range(intervals)] for q in topology.queries}
    events = [(run_id, s, k, int(a[k])) for s, a in arrivals.items() for k in range(intervals)]
    con = connect(db)
    try:
        with transaction(con, "test run"):
            write_run(con, run_id, topology)
            merge_source_arrivals(
                con,
                pd.DataFrame(events, columns=["run_id", "source", "interval", "events"]).astype(
                    {"events": "int64"}
                ),
            )
            merge_operator_stats(con, pd.DataFrame(stats, columns=list(STATS_COLUMNS)))
            merge_node_busy(
                con, pd.DataFrame(busy, columns=["run_id", "node", "interval", "busy_seconds"])
            )
            merge_latency_stats(con, latency_frame(run_id, latency))
    finally:
        con.close()
