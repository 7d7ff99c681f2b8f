"""The simulator's Python API: run a topology on source event times, get telemetry."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from estimator.model import Topology
from simulator.errors import SimulationError
from simulator.plan import DEFAULT_TRAIN, Plan, compile_plan
from simulator.reference import simulate_reference
from simulator.telemetry import Telemetry, build_telemetry
from simulator.trace import Trace, stream_key

if TYPE_CHECKING:
    from simulator.fast import EngineState

ENGINES = ("fast", "reference")


@dataclass(frozen=True)
class SourceEvents:
    """All source events of a run, sorted by time (ties in source order)."""

    source: np.ndarray  # i8, index into topology.source_ids
    time: np.ndarray  # f8, absolute stimulus time

    @property
    def count(self) -> int:
        return int(self.time.size)


def source_events(topology: Topology, arrival_times: Mapping[str, np.ndarray]) -> SourceEvents:
    """Merge per-source event times into one time-ordered sequence."""
    index = {s: k for k, s in enumerate(topology.source_ids)}
    parts_source, parts_time = [], []
    for name, times in arrival_times.items():
        if name not in index:
            raise SimulationError(f"arrivals: unknown source '{name}'")
        values = np.asarray(times, dtype=np.float64)
        if values.size and not np.all(np.isfinite(values)):
            raise SimulationError(f"arrivals: source '{name}' has non-finite times")
        parts_time.append(values)
        parts_source.append(np.full(values.size, index[name], dtype=np.int64))
    source = np.concatenate(parts_source) if parts_source else np.zeros(0, np.int64)
    time = np.concatenate(parts_time) if parts_time else np.zeros(0)
    order = np.lexsort((source, time))
    return SourceEvents(source[order], time[order])


def stimulus_intervals(plan: Plan, events: SourceEvents) -> int:
    """How many stimulus subintervals the run's source events span."""
    if not events.count:
        return 1
    return max(1, math.floor((float(events.time.max()) - plan.origin) / plan.subinterval) + 1)


def run_engine(
    plan: Plan,
    events: SourceEvents,
    key: int,
    engine: str = "fast",
    changes: Sequence[tuple[float, Plan]] = (),
) -> Trace:
    """Simulate with the chosen engine (``fast``: numba, ``reference``: heapq);
    ``changes`` are (time, plan with the new placement) pairs in time order."""
    intervals = stimulus_intervals(plan, events)
    if engine == "reference":
        return simulate_reference(plan, events.source, events.time, key, intervals, changes)
    if engine == "fast":
        from simulator.fast import simulate_fast

        return simulate_fast(plan, events.source, events.time, key, intervals, changes)
    raise SimulationError(f"unknown engine '{engine}' (expected one of {', '.join(ENGINES)})")


PlacementChange = tuple[float, Mapping[str, str]]
"""At an absolute time, operators moved to nodes: ``(time, {operator: node, ...})``; the
operators not named stay where they are."""


def placement_versions(
    topology: Topology, changes: Sequence[PlacementChange]
) -> tuple[tuple[float, dict[str, str]], ...]:
    """The complete placement after each change, in time order, validated: times are finite,
    after the run's origin and distinct; operators and nodes exist."""
    versions: list[tuple[float, dict[str, str]]] = []
    placement = dict(topology.placement)
    for time, moves in sorted(changes, key=lambda change: change[0]):
        where = f"placement change at {time:g} s"
        if not math.isfinite(time) or time <= topology.origin:
            raise SimulationError(f"{where}: the time must be after the run's origin")
        if versions and versions[-1][0] == time:
            raise SimulationError(f"{where}: two changes at the same time")
        if not moves:
            raise SimulationError(f"{where}: it moves no operator")
        for op_id, node in moves.items():
            if op_id not in topology.operator_by_id:
                raise SimulationError(f"{where}: unknown operator '{op_id}'")
            if node not in topology.capacity_by_node:
                raise SimulationError(f"{where}: operator '{op_id}' moved to unknown node '{node}'")
        placement = {**placement, **{str(k): str(v) for k, v in moves.items()}}
        versions.append((float(time), placement))
    return tuple(versions)


@dataclass(frozen=True)
class Result:
    """A run: the compiled plan, the source events, the trace and its telemetry tables;
    ``versions`` are the placements after each change, (time, placement) in time order."""

    topology: Topology
    plan: Plan
    events: SourceEvents
    trace: Trace
    telemetry: Telemetry
    versions: tuple[tuple[float, dict[str, str]], ...] = ()


def simulate(
    topology: Topology,
    arrival_times: Mapping[str, np.ndarray],
    policy: str | Mapping[str, str] = "stimulus",
    rng: np.random.Generator | None = None,
    *,
    cost_distribution: str = "exponential",
    train: int = DEFAULT_TRAIN,
    engine: str = "fast",
    changes: Sequence[PlacementChange] = (),
) -> Result:
    """Simulate ``topology`` on per-source event times (absolute seconds).

    ``policy`` is one policy for every node or a mapping node -> policy;
    ``rng`` seeds every random draw (same Generator state, same result);
    ``changes`` move operators during the run (see :mod:`simulator.reference` for
    what happens to their queued work, and :func:`simulator.telemetry.write_run` for
    the ``topology-<epoch>.yaml`` files that record them).
    """
    plan = compile_plan(topology, policy, train=train, cost_distribution=cost_distribution)
    versions = placement_versions(topology, changes)
    later = [
        (time, compile_plan(
            topology.with_placement(placement), policy, train=train,
            cost_distribution=cost_distribution,
        ))
        for time, placement in versions
    ]  # fmt: skip
    events = source_events(topology, arrival_times)
    key = stream_key(rng if rng is not None else np.random.default_rng(0))
    trace = run_engine(plan, events, key, engine, later)
    telemetry = build_telemetry(plan, events.source, events.time, trace)
    return Result(topology, plan, events, trace, telemetry, versions)


Checkpoint = tuple["EngineState", float]
"""A :class:`Simulation`'s state and horizon, to go back to (:meth:`Simulation.restore`)."""


class Simulation:
    """A run taken piece by piece: :meth:`advance` with the source events up to a horizon
    returns the records of every event before it, and the state (clock, queued events,
    events in flight, node and link backlogs, the random stream's position, the counter
    that breaks ties) goes on to the next piece. The pieces' records, concatenated, equal
    :func:`simulate` of all the events in one piece (fast engine), record for record.
    """

    def __init__(
        self,
        topology: Topology,
        policy: str | Mapping[str, str] = "stimulus",
        rng: np.random.Generator | None = None,
        *,
        cost_distribution: str = "exponential",
        train: int = DEFAULT_TRAIN,
        changes: Sequence[PlacementChange] = (),
    ):
        from simulator.fast import EngineState

        self.topology = topology
        self._policy = policy
        self._train = train
        self._cost_distribution = cost_distribution
        self.plan = compile_plan(topology, policy, train=train, cost_distribution=cost_distribution)
        self._key = stream_key(rng if rng is not None else np.random.default_rng(0))
        self._state = EngineState.new(self.plan)
        self.horizon = -math.inf  # every event before it is taken
        self._later: list[tuple[float, Plan]] = []
        self.versions: tuple[tuple[float, dict[str, str]], ...] = ()
        self.set_changes(changes)

    def set_changes(self, changes: Sequence[PlacementChange]) -> None:
        """The run's placement changes, all of them (validated); those before the horizon
        must be the ones already in effect (the past is not rewritten)."""
        versions = placement_versions(self.topology, changes)
        kept = [(t, p) for t, p in self.versions if t < self.horizon]
        if kept != [(t, p) for t, p in versions if t < self.horizon]:
            raise SimulationError("a placement change before the simulated time cannot change")
        self.versions = versions
        self._later = [
            (time, compile_plan(
                self.topology.with_placement(placement), self._policy, train=self._train,
                cost_distribution=self._cost_distribution,
            ))
            for time, placement in versions
        ]  # fmt: skip

    def advance(self, arrival_times: Mapping[str, np.ndarray], until: float) -> Telemetry:
        """Take the source events in [horizon, ``until``) and every event before ``until``;
        returns their records (arrivals, executions started, outputs out before it)."""
        from simulator.fast import advance

        if not until > self.horizon:
            raise SimulationError(f"simulation: {until:g} is not after {self.horizon:g}")
        events = source_events(self.topology, arrival_times)
        if events.count and not (events.time[0] >= self.horizon and events.time[-1] < until):
            raise SimulationError(
                f"simulation: source events must lie in [{self.horizon:g}, {until:g})"
            )
        trace = advance(
            self.plan, self._state, events.source, events.time, self._key, until, self._later
        )
        self.horizon = until
        return build_telemetry(self.plan, events.source, events.time, trace)

    @property
    def in_flight(self) -> int:
        """Events queued or on their way (executing, on a link) at the horizon."""
        return self._state.in_flight

    def checkpoint(self) -> Checkpoint:
        """The state now, to :meth:`restore` later (an independent copy)."""
        return self._state.copy(), self.horizon

    def restore(self, checkpoint: Checkpoint) -> None:
        """Go back to a :meth:`checkpoint` (which stays usable); the changes stay as set."""
        state, horizon = checkpoint
        self._state = state.copy()
        self.horizon = horizon
