"""Complete subintervals: no event in flight (per-event runs), or the band's bound."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from estimator.completeness import complete_prefix, in_flight, settled_by_bound
from estimator.model import Topology
from simulator.run import Simulation, simulate
from tests.simulator.test_engines import bursty_arrivals, random_topology


def stats_of(executions: pd.DataFrame, origin: float, w: float) -> pd.DataFrame:
    """operator_stats as ingestion computes them: per operator, port and stimulus
    subinterval, the executions (events_in) and the outputs they emitted (events_out)."""
    frame = executions.assign(
        interval=np.floor((executions.stimulus_time - origin) / w).astype(np.int64)
    )
    return (
        frame.groupby(["operator", "port", "interval"])
        .agg(events_in=("outputs", "size"), events_out=("outputs", "sum"))
        .reset_index()
    )


def arrival_counts(topology: Topology, arrivals: pd.DataFrame, intervals: int) -> np.ndarray:
    counts = np.zeros((len(topology.source_ids), intervals))
    for row, source in enumerate(topology.source_ids):
        times = arrivals[arrivals.source == source].stimulus_time.to_numpy()
        p = np.floor((times - topology.origin) / topology.subinterval).astype(np.int64)
        np.add.at(counts[row], p[p < intervals], 1.0)
    return counts


def reference_in_flight(
    topology: Topology, arrivals: np.ndarray, stats: pd.DataFrame, intervals: int
) -> np.ndarray:
    """The same check, one subinterval and one edge at a time."""
    out = np.zeros(intervals, dtype=bool)
    for p in range(intervals):
        rows = stats[stats.interval == p]
        for op in topology.operators:
            for port, upstream in enumerate(op.inputs):
                if upstream in topology.source_ids:
                    sent = arrivals[topology.source_ids.index(upstream), p]
                else:
                    sent = rows[rows.operator == upstream].events_out.sum()
                got = rows[(rows.operator == op.id) & (rows.port == port)].events_in.sum()
                out[p] |= sent - got > 0.5
    return out


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 5000), cut=st.floats(0.2, 3.0), nodes=st.integers(1, 3))
def test_in_flight_marks_exactly_the_subintervals_with_work_left(
    seed: int, cut: float, nodes: int
) -> None:
    """A run stopped at ``cut`` (what a live run has written by then): a subinterval that
    ended before the cut has an event in flight exactly when the whole run executes an
    event of it after the cut; checked against the one-subinterval-at-a-time reference."""
    topology = random_topology(seed, nodes)
    arrivals = bursty_arrivals(seed, 300, 3.0)
    w = topology.subinterval
    whole = simulate(topology, arrivals, rng=np.random.default_rng(seed)).telemetry.frames()
    partial = Simulation(topology, rng=np.random.default_rng(seed))
    telemetry = partial.advance({s: t[t < cut] for s, t in arrivals.items()}, cut).frames()
    intervals = math.floor(cut / w)  # the subintervals whose arrivals are all in
    stats = stats_of(telemetry["executions"], 0.0, w)
    counts = arrival_counts(topology, telemetry["arrivals"], intervals)
    pending = in_flight(topology, counts, stats, intervals)
    assert np.array_equal(pending, reference_in_flight(topology, counts, stats, intervals))
    late = whole["executions"][whole["executions"].start_time >= cut]
    truth = np.zeros(intervals, dtype=bool)
    p = np.floor(late.stimulus_time.to_numpy() / w).astype(np.int64)
    truth[p[p < intervals]] = True
    assert np.array_equal(pending, truth)


def test_a_backlog_keeps_its_subintervals_incomplete() -> None:
    """By hand: s -> a (one node); 3 events in subinterval 0, a executed 1 of them, which
    emitted 2; subinterval 1 all done: 0 is in flight, 1 is not, the prefix is empty."""
    from estimator.model import topology_from_dict

    topology = topology_from_dict(
        {
            "nodes": [{"id": "n", "capacity": 1.0}],
            "sources": [{"id": "s"}],
            "operators": [
                {"id": "a", "query": "q", "inputs": ["s"], "cost": 0.1},
                {"id": "b", "query": "q", "inputs": ["a"], "cost": 0.1},
            ],
            "placement": {"a": "n", "b": "n"},
        }
    )
    stats = pd.DataFrame(
        {
            "operator": ["a", "a", "b"],
            "port": [0, 0, 0],
            "interval": [0, 1, 1],
            "events_in": [1.0, 2.0, 2.0],
            "events_out": [2.0, 2.0, 2.0],
        }
    )
    pending = in_flight(topology, np.array([[3.0, 2.0]]), stats, 2)
    assert pending.tolist() == [True, False]
    assert complete_prefix(~pending) == 0
    assert complete_prefix(np.array([True, True, False, True])) == 2
    assert complete_prefix(np.ones(3, dtype=bool)) == 3


def test_settled_by_bound() -> None:
    # 5 subintervals of 1 s, data up to t = 5: p = 2 with bound 2.0 ends at 5 (in), p = 3
    # with bound 1.5 at 5.5 (out), p = 4 with bound 0 at 5 (in); NaN bound: unknown, out
    upper = np.array([0.5, 3.0, 2.0, 1.5, 0.0])
    assert settled_by_bound(upper, 1.0).tolist() == [True, True, True, False, True]
    assert settled_by_bound(np.array([math.nan, 0.0]), 1.0).tolist() == [False, True]
