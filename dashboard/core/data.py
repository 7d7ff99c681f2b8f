"""Loading a run from DuckDB into arrays the pages use, with a per-run cache.

:class:`Database` hands out short-lived cursors of one process-wide DuckDB
connection (DuckDB allows concurrent cursors of one database instance inside
a process, and ``mace serve --landing`` ingests through its own connection
to the same instance). :class:`RunCache` reloads a run only when its data
version (see :func:`storage.dashboard_reads.data_version`) changes.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import threading
import time
from collections.abc import Callable, Collection, Hashable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import duckdb
import numpy as np
import pandas as pd

from dashboard.core.errors import ViewError
from estimator.arrivals import Arrivals, arrivals_window
from estimator.fitting import fit_operator_stats
from estimator.mace import Stops
from estimator.model import Topology, version_starts
from estimator.pathaware import NODE_FINE, PORT_WORK, SOURCE_FINE, Detail
from estimator.python_worker import with_python_workers
from estimator.runs import (
    estimated_operator_dlts,
    estimated_port_dlts,
    measured_stops,
    node_loads,
    node_profile_matrix,
    restart_spans,
    source_profile_matrix,
)
from estimator.whatif import (
    RunInputs,
    ScenarioError,
    WhatIfEngine,
)
from storage import reads
from storage.dashboard_reads import data_version
from storage.db import connect
from storage.histogram import quantile_from_histogram


class Database:
    """One DuckDB connection per app; every use gets its own cursor (thread safe)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._con: duckdb.DuckDBPyConnection | None = None
        self._lock = threading.Lock()

    @contextmanager
    def cursor(self) -> Iterator[duckdb.DuckDBPyConnection]:
        with self._lock:
            if self._con is None:
                self._con = connect(self.path)
            cur = self._con.cursor()
        try:
            yield cur
        finally:
            cur.close()

    def close(self) -> None:
        with self._lock:
            if self._con is not None:
                self._con.close()
                self._con = None


@dataclass(frozen=True)
class QueryLatency:
    """Measured latency of one query per interval (NaN where it had no outputs)."""

    lat_max: np.ndarray
    lat_p99: np.ndarray
    lat_mean: np.ndarray
    outputs: np.ndarray


Derived = TypeVar("Derived")


class LazyProfile:
    """A run's sub-bucket profile (of the nodes' work or of the sources' arrivals), read
    from the store the first time it is asked for. Only the burst-aware and per-origin
    estimators use it, and reading it costs about as much as the rest of the run, so the
    other estimators never pay for it."""

    def __init__(self, read: Callable[[], np.ndarray | None]):
        self._read = read
        self._lock = threading.Lock()
        self._loaded = False
        self._value: np.ndarray | None = None

    def get(self) -> np.ndarray | None:
        with self._lock:
            if not self._loaded:
                self._value = self._read()
                self._loaded = True
            return self._value


@dataclass(frozen=True)
class RunData:
    """Everything the pages draw for one run, as arrays over intervals 0 .. intervals-1."""

    info: reads.RunInfo
    version: tuple[int, int, int]
    topology: Topology
    versions: tuple[reads.PlacementVersion, ...]
    version_starts: tuple[int, ...]
    arrivals: Arrivals
    operator_stats: pd.DataFrame
    operator_dlts: np.ndarray  # the estimated operator DLTS (measured, or offered work)
    node_dlts: np.ndarray
    busy: np.ndarray
    latency: dict[str, QueryLatency]
    profile: LazyProfile | None = None
    arrival_profile: LazyProfile | None = None
    _derived: dict[Hashable, Any] = dataclasses.field(
        default_factory=dict, compare=False, repr=False
    )

    def derived(self, key: Hashable, compute: Callable[[], Derived]) -> Derived:
        """``compute()``, computed once per loaded run and ``key``: an estimate, a fitted
        model or a drift check of this data never changes, and ingestion that adds rows
        makes a new RunData. Callers must not modify what they get back. (Two threads
        asking at once may both compute it; the first result is kept.)"""
        try:
            return self._derived[key]
        except KeyError:
            return self._derived.setdefault(key, compute())

    @property
    def node_profile(self) -> np.ndarray | None:
        """Nodes x intervals x sub-buckets of CPU-seconds (the stored node_profile), read
        on first use; None for a run measured by counters or ingested without one."""
        return None if self.profile is None else self.profile.get()

    @property
    def source_profile(self) -> np.ndarray | None:
        """Sources x intervals x sub-buckets of events (the stored source_profile), read
        on first use; None for a run measured by counters or ingested without one."""
        return None if self.arrival_profile is None else self.arrival_profile.get()

    def port_work(self) -> np.ndarray:
        """The estimated work of every operator input port (inputs x intervals): measured
        CPU per port, or offered work for a run measured by counters (computed once per
        loaded run, like :meth:`derived`: do not modify it)."""
        return self.derived(
            "port work",
            lambda: estimated_port_dlts(
                self.topology,
                stats=self.operator_stats,
                counts=self.counts,
                counters=self.info.counters,
                intervals=self.intervals,
            ),
        )

    def detail(self, uses: Collection[str]) -> Detail:
        """The parts of the run's finer work that an estimator ``uses``: the stored source
        and node profiles (read on first use; the node profile not at all when the
        estimator reads the source profile and the run has one) and :meth:`port_work`."""
        sources = self.source_profile if SOURCE_FINE in uses else None
        return Detail(
            node_fine=self.node_profile if NODE_FINE in uses and sources is None else None,
            port_work=self.port_work() if PORT_WORK in uses else None,
            source_fine=sources,
        )

    def fitted(self, window: tuple[int, int] | None) -> Topology:
        """The run's topology with the costs and selectivities fitted on ``window`` of its
        statistics (None: the whole run), once per loaded run and window; the topology as
        stored for a run without statistics."""
        if self.operator_stats.empty:
            return self.topology
        return self.derived(
            ("fitted", window),
            lambda: (
                fit_operator_stats(self.topology, self.operator_stats, window, self.counts).topology
            ),
        )

    @property
    def intervals(self) -> int:
        return int(self.arrivals.intervals)

    @property
    def placements(self) -> list[dict[str, str]]:
        """The placement of each version, in order (with :attr:`version_starts`, what
        the estimator's functions take for a run whose placement changed)."""
        return [v.placement for v in self.versions]

    @property
    def capacities(self) -> list[dict[str, float]]:
        """The node capacities of each version, in order (a rescaled Flink vertex's
        threads node changes with its parallelism)."""
        return [v.capacities for v in self.versions]

    @functools.cached_property
    def restarts(self) -> tuple[tuple[float, float], ...]:
        """[stopped, resumed) of each restart measured on the run (a Flink rescale), the
        run's clock (:func:`estimator.runs.restart_spans`); none on a simulated run."""
        return tuple(restart_spans(self.versions))

    @functools.cached_property
    def stops(self) -> Stops | None:
        """The restarts as every analysis of the run sees them: nothing served while the
        job was stopped (:func:`estimator.runs.measured_stops`); None without one."""
        return measured_stops(
            self.versions, self.topology.origin, self.topology.subinterval, self.intervals
        )

    @functools.cached_property
    def counts(self) -> np.ndarray:
        """Arrivals per source of the topology and interval, computed once per loaded run
        (shared: do not modify it)."""
        return self.arrivals.for_topology(self.topology)

    @property
    def subinterval(self) -> float:
        return self.topology.subinterval

    @functools.cached_property
    def times(self) -> np.ndarray:
        """Start of each interval in seconds since the run's start (read-only: shared)."""
        times = np.arange(self.intervals) * self.subinterval
        times.setflags(write=False)
        return times

    @property
    def key(self) -> str:
        return f"{self.info.run_id}@{'.'.join(map(str, self.version))}"

    def measured_system(self) -> QueryLatency:
        """The system's measured latency per interval: the worst query in each interval."""
        if not self.latency:
            empty = np.full(self.intervals, np.nan)
            return QueryLatency(empty, empty, empty, np.zeros(self.intervals))
        stacked = {
            field: np.vstack([getattr(q, field) for q in self.latency.values()])
            for field in ("lat_max", "lat_p99", "lat_mean", "outputs")
        }
        outputs = stacked["outputs"].sum(axis=0)
        any_data = outputs > 0
        with np.errstate(invalid="ignore"):
            mean = np.nansum(stacked["lat_mean"] * stacked["outputs"], axis=0) / np.where(
                any_data, outputs, 1
            )
        mean = np.where(any_data, mean, np.nan)
        return QueryLatency(_nanmax(stacked["lat_max"]), _nanmax(stacked["lat_p99"]), mean, outputs)


def _nanmax(matrix: np.ndarray) -> np.ndarray:
    finite = np.isfinite(matrix)
    values = np.where(finite, matrix, -np.inf).max(axis=0)
    return np.where(finite.any(axis=0), values, np.nan)


def load_run(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    reopen: Callable[[], AbstractContextManager[duckdb.DuckDBPyConnection]] | None = None,
) -> RunData:
    """Read a run's topology, placements and statistics over intervals [0, last]. Its
    sub-bucket profile is read later, on first use, through ``reopen()`` (default: ``con``,
    which must then stay open)."""
    info = reads.get_run(con, run_id)
    version = data_version(con, run_id)
    stop = 0 if info.last_interval is None else info.last_interval + 1
    versions = reads.placement_versions(con, run_id)
    topology = reads.run_topology(con, run_id, run=info, versions=versions)
    starts = version_starts([v.valid_from for v in versions], info.origin, info.subinterval)
    arrivals = arrivals_window(
        topology.source_ids, reads.source_arrivals_frame(con, run_id, 0, stop), 0, stop
    )
    stats = reads.operator_stats_frame(con, run_id, 0, stop)
    topology = with_python_workers(topology, stats)
    # the per-port rows add up per (operator, interval) in operator_matrix: no second
    # read, and no copy of the 290 k rows (the frame is renamed, its columns shared)
    cpu = stats.rename(columns={"cpu_seconds": "cpu"}, copy=False)
    operator_dlts = estimated_operator_dlts(
        topology,
        cpu=cpu,
        stats=stats,
        counts=arrivals.for_topology(topology),
        counters=info.counters,
        intervals=stop,
    )
    dlts = node_loads(topology, operator_dlts, [v.placement for v in versions], starts)
    profile = arrival_profile = None
    grid = info.profile_sub_buckets  # None: no profile rows stored yet
    if not info.counters and grid is not None:
        # (a counter-measured run's DLTS is offered work, not executions)
        connection = reopen or (lambda: nullcontext(con))

        def read_profile() -> np.ndarray | None:
            with connection() as cur:
                frame = reads.node_profile_frame(cur, run_id, 0, stop)
            return node_profile_matrix(topology, frame, stop, grid)

        def read_arrival_profile() -> np.ndarray | None:
            with connection() as cur:
                frame = reads.source_profile_frame(cur, run_id, 0, stop)
            return source_profile_matrix(topology, frame, stop, grid)

        profile = LazyProfile(read_profile)
        arrival_profile = LazyProfile(read_arrival_profile)
    node_index = {n: k for k, n in enumerate(topology.node_ids)}
    busy = np.zeros((len(node_index), stop))
    busy_frame = reads.node_busy_frame(con, run_id, 0, stop)
    node_rows = busy_frame["node"].map(node_index)
    known = node_rows.notna().to_numpy()
    cells = (
        node_rows[known].to_numpy(dtype=np.int64),
        busy_frame["interval"].to_numpy(dtype=np.int64)[known],
    )
    np.add.at(busy, cells, busy_frame["busy_seconds"].to_numpy(dtype=float)[known])
    frame = reads.latency_stats_frame(con, run_id, None, 0, stop)
    latency: dict[str, QueryLatency] = {}
    for query in topology.queries:
        rows = frame[frame["query"] == query]
        columns = {}
        index = rows["interval"].to_numpy(dtype=np.int64)
        for field in ("lat_max", "lat_p99", "lat_mean"):
            series = np.full(stop, np.nan)
            series[index] = rows[field].to_numpy(dtype=float)
            columns[field] = series
        outputs = np.zeros(stop)
        outputs[index] = rows["outputs"].to_numpy(dtype=float)
        latency[query] = QueryLatency(outputs=outputs, **columns)
    return RunData(
        info=info,
        version=version,
        topology=topology,
        versions=tuple(versions),
        version_starts=starts,
        arrivals=arrivals,
        operator_stats=stats,
        operator_dlts=operator_dlts,
        node_dlts=dlts,
        busy=busy,
        latency=latency,
        profile=profile,
        arrival_profile=arrival_profile,
    )


def latency_rollup(rows: pd.DataFrame, *, by_query: bool = True, factor: int = 1) -> pd.DataFrame:
    """Latency per (query or the whole system) and group of ``factor`` intervals.

    ``rows`` are :func:`storage.reads.latency_stats_frame` rows with their histograms.
    Counts, mean and max are exact; p50/p95/p99 come from the merged histograms
    (within one bucket), except that a group made of one stored row keeps that
    row's quantiles. ``interval`` is the first interval of each group.
    """
    if factor < 1:
        raise ViewError(f"rollup factor must be a positive integer, got {factor}")
    columns = ["outputs", "lat_max", "lat_mean", "lat_p50", "lat_p95", "lat_p99"]
    keys = (["query"] if by_query else []) + ["interval"]
    if rows.empty:
        return pd.DataFrame(columns=[*keys, *columns])
    rows = rows.assign(interval=(rows["interval"] // factor) * factor)
    out = []
    for key, group in rows.groupby(keys, sort=True):
        key_values = key if isinstance(key, tuple) else (key,)
        outputs = int(group["outputs"].sum())
        lat_max = float(group["lat_max"].max())
        mean = float(group["lat_sum"].sum()) / outputs
        if len(group) == 1:
            first = group.iloc[0]
            quantiles = [float(first["lat_p50"]), float(first["lat_p95"]), float(first["lat_p99"])]
        else:
            histogram = np.sum(np.stack([np.asarray(h) for h in group["histogram"]]), axis=0)
            quantiles = [quantile_from_histogram(histogram, q, lat_max) for q in (0.5, 0.95, 0.99)]
        out.append((*key_values, outputs, lat_max, mean, *quantiles))
    return pd.DataFrame(out, columns=[*keys, *columns])


class RunCache:
    """Runs loaded from a database, reloaded when ingestion changed them. A run is loaded
    by one thread at a time: the callbacks of one page load ask for the same run at once,
    and the others wait for that load instead of repeating it."""

    def __init__(self, database: Database, max_runs: int = 4):
        self.database = database
        self._runs: dict[str, RunData] = {}
        self._max = max_runs
        self._lock = threading.Lock()
        self._loading: dict[str, threading.Lock] = {}
        self._loaded_at: dict[str, float] = {}

    def run_ids(self) -> list[reads.RunInfo]:
        with self.database.cursor() as cur:
            return reads.list_runs(cur)

    def get(self, run_id: str) -> RunData:
        asked = time.monotonic()
        with self.database.cursor() as cur:
            version = data_version(cur, run_id)
        with self._lock:
            loading = self._loading.setdefault(run_id, threading.Lock())
        with loading:
            with self._lock:
                cached = self._runs.get(run_id)
                loaded_at = self._loaded_at.get(run_id, -math.inf)
            # a load begun after this thread read ``version`` holds data at least as new
            if cached is not None and (cached.version == version or loaded_at >= asked):
                return cached
            begun = time.monotonic()
            with self.database.cursor() as cur:
                run = load_run(cur, run_id, self.database.cursor)
            with self._lock:
                self._runs[run_id] = run
                self._loaded_at[run_id] = begun
                while len(self._runs) > self._max:
                    self._runs.pop(next(iter(self._runs)))
        return run


def inputs_for_run(
    engine: WhatIfEngine, run: RunData, window: tuple[int, int] | None = None
) -> RunInputs:
    """The What-if baseline of a run: its latest placement, with costs and selectivities
    fitted on its measured statistics in ``window`` (subintervals [start, stop); default
    all of them), and its measured arrivals in that window (once per run data,
    placement version and window)."""
    if run.intervals == 0:
        raise ScenarioError(f"run '{run.info.run_id}' has no statistics yet")
    start, stop = window or (0, run.intervals)
    stop = min(stop, run.intervals)
    if not 0 <= start < stop:
        raise ScenarioError(f"run '{run.info.run_id}' has no data in the baseline window")
    key = f"{run.key}/placement-{run.versions[-1].version}/window-{start}-{stop}"
    stats, arrivals = run.operator_stats, run.arrivals
    if (start, stop) != (0, run.intervals):
        stats = stats[(stats["interval"] >= start) & (stats["interval"] < stop)]
        arrivals = arrivals.window(start, stop)
    return engine.run_inputs(key, run.topology, arrivals, stats)
