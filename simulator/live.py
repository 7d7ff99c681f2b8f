"""Live mode: the simulation paced in real time, appending Parquet files to the landing folder.

The run's origin is the wall-clock second at which it starts, and simulated
times are wall-clock epoch seconds. The simulation proceeds in segments of
``segment`` seconds, each simulated ahead of time; a segment's run starts
with the previous segment's last ``warmup`` seconds of arrivals so that the
queues carried over a boundary are present (only records whose stimulus time
falls in the segment are kept, so nothing is written twice). Every
``flush_every`` seconds the records whose time (arrival, execution start,
egress) has passed are written as one new file per record set.

A segment's run does not see the arrivals of the next segment, so events
still queued at a boundary are simulated without the newer competition; under
the stimulus policy on one node that is exact (newer events never overtake
older ones), under other policies it slightly favours the older events.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from estimator.model import Topology
from simulator.errors import SimulationError
from simulator.plan import DEFAULT_TRAIN
from simulator.run import simulate
from simulator.telemetry import RECORD_SETS, TIME_COLUMN, write_table, write_topology
from simulator.workloads import ArrivalModel

DEFAULT_FLUSH_EVERY = 2.0
DEFAULT_SEGMENT = 30.0
DEFAULT_WARMUP = 20.0


def run_live(
    topology: Topology,
    model: ArrivalModel,
    landing: str | Path,
    run_id: str,
    stop: threading.Event,
    *,
    policy: str | Mapping[str, str] = "stimulus",
    seed: int = 0,
    cost_distribution: str = "exponential",
    train: int = DEFAULT_TRAIN,
    flush_every: float = DEFAULT_FLUSH_EVERY,
    segment: float = DEFAULT_SEGMENT,
    warmup: float = DEFAULT_WARMUP,
    clock: Callable[[], float] = time.time,
    on_flush: Callable[[int, dict[str, int]], None] | None = None,
) -> Path:
    """Simulate and write in real time until ``stop`` is set; returns the run folder.

    Call it in a thread to run alongside a dashboard; set ``stop`` to end it
    (the records already due are written first).
    """
    if not (flush_every > 0 and segment > 0 and 0 <= warmup <= segment):
        raise SimulationError(
            "live: flush interval and segment must be positive, warmup within [0, segment]"
        )
    run_dir = Path(landing) / run_id
    if run_dir.exists() and any(run_dir.iterdir()):
        raise SimulationError(f"live: run folder '{run_dir}' already exists and is not empty")
    origin = float(math.floor(clock()))
    live_topology = topology.with_changes(origin=origin)
    write_topology(live_topology, run_dir)
    pending: dict[str, list[pa.Table]] = {name: [] for name in RECORD_SETS}
    carried: dict[str, np.ndarray] = {}
    simulated_until = 0.0
    segment_index = 0
    flush_index = 0

    def simulate_segment() -> None:
        nonlocal simulated_until, segment_index, carried
        start = origin + segment_index * segment
        fresh = model.sample(segment, np.random.default_rng([seed, 2, segment_index]), start)
        arrivals = {s: np.concatenate([carried.get(s, np.zeros(0)), t]) for s, t in fresh.items()}
        result = simulate(
            live_topology,
            arrivals,
            policy,
            np.random.default_rng([seed, 3, segment_index]),
            cost_distribution=cost_distribution,
            train=train,
        )
        for name in RECORD_SETS:
            table = result.telemetry.table(name)
            pending[name].append(table.filter(pc.greater_equal(table["stimulus_time"], start)))
        carried = {s: t[t >= start + segment - warmup] for s, t in fresh.items()}
        segment_index += 1
        simulated_until = segment_index * segment

    def flush(now: float) -> None:
        nonlocal flush_index
        written = {}
        for name in RECORD_SETS:
            if not pending[name]:
                continue
            table = pa.concat_tables(pending[name])
            due = pc.less_equal(table[TIME_COLUMN[name]], now)
            ready = table.filter(due)
            pending[name] = [table.filter(pc.invert(due))]
            written[name] = ready.num_rows
            if ready.num_rows:
                write_table(ready, run_dir / name, f"part-{flush_index:06d}.parquet")
        if on_flush is not None:
            on_flush(flush_index, written)
        flush_index += 1

    while not stop.is_set():
        while simulated_until < clock() - origin + segment / 2:
            simulate_segment()
        flush(clock())
        stop.wait(flush_every)
    flush(clock())
    return run_dir
