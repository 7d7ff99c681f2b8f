"""Live mode: the simulation paced in real time, appending Parquet files to the landing folder.

The run's origin is the wall-clock second at which it starts, and simulated
times are wall-clock epoch seconds. The simulation proceeds in segments of
``segment`` seconds, each simulated ahead of time by one
:class:`simulator.run.Simulation` that carries its whole state from one segment
to the next (clock, queued events, events in flight, node and link backlogs, the
random stream's position), and the arrivals are read from one
:class:`simulator.workloads.ArrivalStream`: a live run writes, record for record,
what :func:`simulator.run.simulate` writes for the same arrivals in one piece.
Every ``flush_every`` seconds the records whose time (arrival, execution start,
egress) has passed are written as one new file per record set.

Placement changes: ``changes`` scheduled up front (seconds after the start)
and placement requests that arrive while the run goes on (``requests``, polled
once per flush; the demo's What-if "Apply to the running system"). A request
takes effect at the next step, at a time T after everything already written
(wall clock, to the millisecond). At T the run writes ``topology-<T>.yaml``
(docs/design.md, "Raw telemetry") and the segments whose records are not all written yet are
simulated again with the change, from the state saved at the first one's start:
a change applies only to events at T or later (:mod:`simulator.reference` says
what happens to the moved operators' queued work), so the records already
written stay exactly as they were and only the rows after the last flush are
replaced. A scheduled change writes its file when the clock reaches it.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from estimator.model import Topology
from simulator.errors import SimulationError
from simulator.plan import DEFAULT_TRAIN
from simulator.run import Checkpoint, Simulation, placement_versions
from simulator.telemetry import (
    RECORD_SETS,
    TIME_COLUMN,
    write_table,
    write_topology,
    write_version,
)
from simulator.workloads import ArrivalModel

DEFAULT_FLUSH_EVERY = 2.0
DEFAULT_SEGMENT = 30.0
CHANGE_RESOLUTION = 0.001  # seconds: change times are whole milliseconds


def _first(pair: tuple[float, object]) -> float:
    return pair[0]


def _settle_nothing(applied_from: float | None, problem: str | None) -> None:
    """The default outcome handler of a request: nobody listens."""


@dataclass(frozen=True)
class PlacementRequest:
    """Operators to move in a running simulation (``{operator: node}``; the others stay).

    ``settle`` is called once from the simulation thread: with the time from which the
    new placement is valid, or with ``None`` and why the request was refused.
    """

    moves: Mapping[str, str]
    settle: Callable[[float | None, str | None], None] = _settle_nothing


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
    clock: Callable[[], float] = time.time,
    on_flush: Callable[[int, dict[str, int]], None] | None = None,
    changes: Sequence[tuple[float, Mapping[str, str]]] = (),
    requests: Callable[[], Sequence[PlacementRequest]] | None = None,
) -> Path:
    """Simulate and write in real time until ``stop`` is set; returns the run folder.

    Call it in a thread to run alongside a dashboard; set ``stop`` to end it
    (the records already due are written first). ``changes`` are (seconds after the
    start, moves) pairs; ``requests`` is polled once per flush for more moves.
    """
    if not (flush_every > 0 and segment > 0):
        raise SimulationError("live: flush interval and segment must be positive")
    run_dir = Path(landing) / run_id
    if run_dir.exists() and any(run_dir.iterdir()):
        raise SimulationError(f"live: run folder '{run_dir}' already exists and is not empty")
    origin = float(math.floor(clock()))
    live_topology = topology.with_changes(origin=origin)
    schedule = sorted(((origin + at, dict(moves)) for at, moves in changes), key=_first)
    placement_versions(live_topology, schedule)  # refuse bad changes before writing anything
    write_topology(live_topology, run_dir)
    recorded = 0  # scheduled changes whose topology-<epoch>.yaml is written
    simulation = Simulation(
        live_topology,
        policy,
        np.random.default_rng([seed, 3]),
        cost_distribution=cost_distribution,
        train=train,
        changes=schedule,
    )
    stream = model.stream(np.random.default_rng([seed, 2]), origin)
    # per segment not all written yet: its arrivals, the state at its start and its
    # records not written yet, by record set
    arrivals: dict[int, dict[str, np.ndarray]] = {}
    starts: dict[int, Checkpoint] = {}
    pending: dict[int, dict[str, pa.Table]] = {}
    written_until = -math.inf  # every record due by this time is written
    segment_index = 0
    flush_index = 0

    def run_segment(index: int) -> None:
        """Simulate segment ``index`` from the current state; keep its unwritten records."""
        starts[index] = simulation.checkpoint()
        telemetry = simulation.advance(arrivals[index], origin + (index + 1) * segment)
        pending[index] = {
            name: telemetry.table(name).filter(
                pc.greater(telemetry.table(name)[TIME_COLUMN[name]], written_until)
            )
            for name in RECORD_SETS
        }

    def simulate_segment() -> None:
        nonlocal segment_index
        arrivals[segment_index] = stream.until(origin + (segment_index + 1) * segment)
        run_segment(segment_index)
        segment_index += 1

    def apply(request: PlacementRequest, now: float) -> None:
        """Add a requested change at the next millisecond after what is written."""
        at = math.ceil(max(now, written_until) / CHANGE_RESOLUTION + 1) * CHANGE_RESOLUTION
        at = round(at, 3)
        try:
            versions = placement_versions(live_topology, [*schedule, (at, dict(request.moves))])
        except SimulationError as exc:
            request.settle(None, str(exc))
            return
        times = [time for time, _ in versions]
        placement = versions[times.index(at)][1]
        before = versions[times.index(at) - 1][1] if times.index(at) else live_topology.placement
        if placement == dict(before):
            request.settle(None, "the running system already has this placement")
            return
        schedule.append((at, dict(request.moves)))
        write_version(live_topology, run_dir, at, placement)
        # back to the start of the first segment not all written (before ``at``), then
        # the same segments again with the change
        simulation.restore(starts[min(pending)])
        simulation.set_changes(schedule)
        for index in sorted(pending):
            run_segment(index)
        request.settle(at, None)

    def record_scheduled(now: float) -> None:
        """Write topology-<epoch>.yaml of the scheduled changes whose time has come."""
        nonlocal recorded
        versions = placement_versions(live_topology, schedule)
        while recorded < len(changes) and schedule[recorded][0] <= now:
            at = schedule[recorded][0]
            write_version(live_topology, run_dir, at, dict(versions)[at])
            recorded += 1

    def flush(now: float) -> None:
        nonlocal flush_index, written_until
        written = {}
        for name in RECORD_SETS:
            tables = [pending[k][name] for k in sorted(pending)]
            if not tables:
                continue
            table = pa.concat_tables(tables)
            ready = table.filter(pc.less_equal(table[TIME_COLUMN[name]], now))
            for k in pending:
                rest = pending[k][name]
                pending[k][name] = rest.filter(pc.greater(rest[TIME_COLUMN[name]], now))
            written[name] = ready.num_rows
            if ready.num_rows:
                write_table(ready, run_dir / name, f"part-{flush_index:06d}.parquet")
        written_until = now
        # a segment's records all come before its end: once written, nothing left to
        # simulate again
        for k in [k for k in pending if origin + (k + 1) * segment <= written_until]:
            del pending[k], arrivals[k], starts[k]
        if on_flush is not None:
            on_flush(flush_index, written)
        flush_index += 1

    while not stop.is_set():
        while segment_index * segment < clock() - origin + segment / 2:
            simulate_segment()
        for request in requests() if requests is not None else ():
            apply(request, clock())
        now = clock()
        record_scheduled(now)
        flush(now)
        stop.wait(flush_every)
    now = clock()
    record_scheduled(now)
    flush(now)
    return run_dir
