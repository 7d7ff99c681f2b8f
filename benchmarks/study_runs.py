"""The simulated runs of the drift and verification studies, built in one place.

A run is three clickstream queries (42 operators) placed at random on 4..11 nodes of
capacity 1, the busiest node at 85% average load with On-Off bursts, stimulus-time
scheduling (the held-out style of the accuracy study, docs/accuracy.md). Its change
moment T is the first subinterval after 40% of the run that follows one at whose end no
node had a backlog: a change simulated from T on, from an empty system, is then what
the change at an idle moment T gives.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from benchmarks.accuracy import Measured, clickstream_topology, measure_frames
from estimator.burst import sub_bucket_work
from estimator.mace import cumulative_excess
from estimator.model import Topology
from simulator.run import simulate


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options every study takes: how many runs, how long, which seed."""
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--duration", type=float, default=120.0)
    parser.add_argument("--seed", type=int, default=7)


def idle(topology: Topology, dlts: np.ndarray) -> np.ndarray:
    """Subintervals at whose end no node has a backlog."""
    caps = np.array([n.capacity for n in topology.nodes]) * topology.subinterval
    return np.asarray(cumulative_excess(dlts, caps).max(axis=0) <= 1e-12)


@dataclass(frozen=True)
class StudyRun:
    """One simulated run, its measured figures and its change moment T (None: no idle
    moment in the middle of the run)."""

    seed: int
    nodes: int
    topology: Topology
    times: dict[str, np.ndarray]
    base: Measured
    change_at: int | None

    @property
    def intervals(self) -> int:
        return int(self.base.latency.size)

    def arrival_profile(self, sub_buckets: int) -> np.ndarray:
        """The run's source events per subinterval and sub-bucket (sources x D x k: what
        ingestion stores as source_profile)."""
        sources = self.topology.source_ids
        rows = np.concatenate([np.full(self.times[s].size, k) for k, s in enumerate(sources)])
        stimulus = np.concatenate([self.times[s] for s in sources]) - self.topology.origin
        return sub_bucket_work(
            rows,
            stimulus,
            np.ones(rows.size),
            len(sources),
            self.topology.subinterval,
            sub_buckets,
            self.intervals,
        )

    def simulated_after_change(self, topology: Topology, seed: int) -> Measured:
        """The arrivals from T on simulated again, from an empty system, on ``topology``."""
        t0 = self.change_at or 0
        later = {s: t[t >= t0 * self.topology.subinterval] for s, t in self.times.items()}
        return measure_frames(simulate(topology, later, "stimulus", np.random.default_rng(seed)))

    def spliced_latency(self, after: Measured) -> np.ndarray:
        """The measured latency of the changed run: the run's before T, ``after``'s from
        T on (NaN where ``after`` ends early)."""
        n, t0 = self.intervals, self.change_at or 0
        latency = self.base.latency.copy()
        latency[t0:] = np.nan
        m = min(n, after.latency.size)
        latency[t0:m] = after.latency[t0:m]
        return latency


def study_runs(args: argparse.Namespace) -> Iterator[StudyRun]:
    """The runs of ``--runs``, ``--duration`` and ``--seed`` (see :func:`add_arguments`),
    with one progress line on stderr as each is done."""
    for r in range(args.runs):
        seed = args.seed + 1000 * r
        nodes = 4 + r % 8
        topology, model = clickstream_topology(
            3, nodes, np.random.default_rng(seed + 100 + nodes), random_placement=True
        )
        times = model.sample(args.duration, np.random.default_rng([seed, 1]))
        base = measure_frames(simulate(topology, times, "stimulus", np.random.default_rng(seed)))
        n = base.latency.size
        quiet = idle(topology, base.dlts)
        candidates = [t for t in range(int(0.4 * n), int(0.8 * n)) if quiet[t - 1]]
        yield StudyRun(seed, nodes, topology, times, base, candidates[0] if candidates else None)
        print(f"run {r + 1}/{args.runs} done", file=sys.stderr, flush=True)
