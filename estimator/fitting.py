"""Fitting per-port selectivity and cost from measured statistics (docs/design.md,
"Fitting and prediction").

The paper (section VI-B) measures cycles per event and selectivity per input
port over a small training sample; a topology with the fitted values then
predicts Mace for any other window from that window's arrivals alone.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from estimator.errors import ModelError
from estimator.model import Operator, Topology
from estimator.python_worker import WORK_COLUMN, worker_taskmanager

STATS_COLUMNS = ("operator", "port", "interval", "events_in", "events_out", "cpu_seconds")


@dataclass(frozen=True)
class PortFit:
    """Fitted figures of one operator port over the training window."""

    operator: str
    port: int
    events_in: float
    cost: float
    selectivity: float
    reading: str = "cpu per record"  # how the cost was read (thread_cost, worker time)
    busy_per_record: tuple[float, float] | None = None  # calmest, busiest third of a thread

    @property
    def waits(self) -> bool:
        """Whether the thread's busy time per record changes with its load by
        :data:`WAITS` or more: busy time that is waiting (for a core, a Python worker, a
        service, a rate limit), not work, so its cost is not busy time per record."""
        if self.busy_per_record is None:
            return False
        low, high = self.busy_per_record
        return min(low, high) > 0 and max(low, high) >= WAITS * min(low, high)


@dataclass(frozen=True)
class ThreadCost:
    """The cost of a record on a thread and the reading it came from."""

    cost: float
    reading: str  # "queued", "saturated" or "busy-time line"


@dataclass(frozen=True)
class FitResult:
    """The topology with fitted costs and selectivities, and what was (not) fitted."""

    topology: Topology
    ports: tuple[PortFit, ...]
    unfitted: tuple[tuple[str, int], ...]


def training_window(n_intervals: int, fraction: float = 0.1) -> tuple[int, int]:
    """The first ``fraction`` of a run's intervals (at least one), as [start, stop)."""
    if not 0 < fraction <= 1:
        raise ModelError(f"training fraction must be in (0, 1], got {fraction!r}")
    return 0, max(1, round(n_intervals * fraction))


def fit_operator_stats(
    topology: Topology,
    stats: pd.DataFrame,
    window: tuple[int, int] | None = None,
    source_counts: np.ndarray | None = None,
) -> FitResult:
    """Fit cost = cpu_seconds / events_in and selectivity = events_out / events_in per port.

    ``stats`` has the columns of ``operator_stats``; rows outside ``window``
    ([start, stop) intervals) are ignored. Ports without events in the window
    keep the topology's values and are listed in ``unfitted``. For a ``product``
    operator the coefficient is fitted as outputs / sum over intervals of the
    product of the per-port input counts. An operator on a thread of a real engine
    (a node with a host) gets the cost at which its thread serves records when a
    queue waits (:func:`thread_cost`); ``source_counts`` (sources x intervals, in
    ``topology.source_ids`` order) are the arrivals that show a queue in front of an
    operator a source feeds. A thread whose work was measured outside it (a Python
    operator's, :data:`WORK_COLUMN`) costs that work per record: its busy time is
    neither its work nor a bound of it (a full thread waits for its worker, whose
    interpreter its neighbours share: :mod:`estimator.python_worker` models that
    sharing; a calm thread can be idle while its worker works).
    """
    missing = [c for c in STATS_COLUMNS if c not in stats.columns]
    if missing:
        raise ModelError(f"operator statistics: missing column(s) {', '.join(missing)}")
    frame = stats
    if window is not None:
        start, stop = window
        frame = frame[(frame["interval"] >= start) & (frame["interval"] < stop)]
    known = set(topology.operator_ids)
    unknown = sorted(set(frame["operator"].astype(str)) - known)
    if unknown:
        raise ModelError(f"operator statistics: unknown operator '{unknown[0]}'")
    if WORK_COLUMN not in frame.columns:
        frame = frame.assign(**{WORK_COLUMN: np.nan})
    frame = settled(without_lumps(topology, frame))
    measured = frame[WORK_COLUMN].notna()
    frame = frame.assign(_work_in=frame["events_in"].where(measured, 0))
    summed = ["events_in", "events_out", "cpu_seconds", WORK_COLUMN, "_work_in"]
    grouped = frame.groupby(["operator", "port"])[summed].sum()
    totals: dict[tuple[str, int], tuple[float, float, float, float]] = {
        (str(op), int(port)): (float(ein), float(eout), float(cpu), _per(work, work_in))
        for (op, port), ein, eout, cpu, work, work_in in zip(
            grouped.index,
            grouped["events_in"].to_numpy(dtype=float),
            grouped["events_out"].to_numpy(dtype=float),
            grouped["cpu_seconds"].to_numpy(dtype=float),
            grouped[WORK_COLUMN].to_numpy(dtype=float),
            grouped["_work_in"].to_numpy(dtype=float),
            strict=True,
        )
    }

    fitted_ports: list[PortFit] = []
    unfitted: list[tuple[str, int]] = []
    operators: list[Operator] = []
    threads = _thread_capacities(topology)
    for op in topology.operators:
        costs = list(op.cost)
        selectivities = list(op.selectivity)
        for port in range(len(op.inputs)):
            key = (op.id, port)
            events, outputs, cpu, work = totals.get(key, (0.0, 0.0, 0.0, 0.0))
            if events <= 0:
                unfitted.append(key)
                continue
            reading, by_load = UNMEASURED, None
            on_thread = op.id in threads
            rows = (
                frame[(frame["operator"] == op.id) & (frame["port"] == port)]
                if on_thread
                else frame[:0]
            )
            if on_thread and work > 0:  # its worker's time, whatever its busy time
                by_load = busy_per_record_by_load(rows) if cpu > 0 else None
                costs[port], reading = work, "worker time per record"
            elif cpu > 0:
                reading = "cpu per record"
                costs[port] = cpu / events
                if on_thread:
                    by_load = busy_per_record_by_load(rows)
                    offered = None
                    if len(op.inputs) == 1:
                        offered = _offered(topology, frame, op.inputs[0], source_counts)
                    read = thread_cost(rows, threads[op.id], offered, topology.subinterval)
                    reading = "busy time per record"
                    if read is not None:
                        costs[port], reading = read.cost, read.reading
            selectivities[port] = outputs / events
            fitted_ports.append(
                PortFit(op.id, port, events, costs[port], selectivities[port], reading, by_load)
            )
        coefficient = op.product_coefficient
        if op.model == "product":
            coefficient = _fit_product(op, frame, coefficient)
        operators.append(
            replace(
                op,
                cost=tuple(costs),
                selectivity=tuple(selectivities),
                product_coefficient=coefficient,
            )
        )
    return FitResult(
        replace(topology, operators=tuple(operators)), tuple(fitted_ports), tuple(unfitted)
    )


UNMEASURED = "topology's cost (no time measured)"
"""The reading of a port whose records came in while no time was measured (a Flink
metric fetcher slower than the window, an operator that took no time): its cost stays
the topology's (the collector's prior on a Flink run)."""
SATURATED = 0.9
"""A thread busy for at least this share of its capacity in a subinterval is saturated
there: its busy time says how fast it can go, not how much it was offered."""
MIN_POINTS = 3
QUEUED = 5
"""Subintervals in which the fitted server has a queue (:data:`QUEUE_DEPTH`), at least,
for its rate to be read off the run: a shorter queue is within the counters' noise."""
QUEUE_DEPTH = 1.0
"""Subintervals of the fitted rate's service that must wait for a subinterval to count
as queued: records offered about as fast as a server of the peak offered rate serves
them keep a record or two waiting now and then, and such a server (a Python worker's
start, 15 records a second offered and served) is no measure of the thread's rate."""
FIT_GAIN = 0.6
"""A fitted server rate counts when it brings the gap between the records served and
the records a server without limit would have served to at most this share: counters
that come in lumps (a Python operator takes its records a bundle at a time) are
explained by no rate, so a rate must explain most of the gap to be more than noise."""
LAGS = 3
"""Subintervals a counter may lag its upstream's by (0, 1 or 2 here): a server without
limit is compared with the records served at its best lag, so that a counter read late
is not taken for a queue."""
RATES = 128
"""Server rates tried per pass (geometric grid; a second pass refines around the best)."""
WAITS = 2.0
"""Busy time per record that differs by this factor between a thread's calmest and
busiest third of blocks is not the thread's work (:attr:`PortFit.waits`)."""
WORK_SPREAD = 0.1
"""How far a record's work read from a real engine's run can be off, as a share: the
worker time line of one Python operator read from 40-50 s windows of the same run moved
by 10-30% between windows, and over one run by 2.38-2.90 ms with the length of its
blocks (docs/flink.md, "What a full worker's time is made of"). A prediction is shown
with what it becomes for a work this much lower and higher."""
FIXED_TIME_RISE = 1.25
"""A Python operator's cost read over a run's first part at least this many times the
whole run's, at fewer records a second, counts its worker's fixed time per record
(:func:`counts_fixed_time`)."""
LEVERAGE = 2.0
"""The busiest block's records over the calmest's that a line through busy time needs."""
BLOCK = 5
"""Subintervals summed into one reading of a thread's busy time: counters sampled every
second by wall clock are noisy per subinterval (a metric value can lag its neighbour's
by a sample), and sums over a few seconds are not."""


def counts_fixed_time(cost: float, first_cost: float, rate: float, first_rate: float) -> bool:
    """Whether a Python operator's cost read over a run's first part (``first_cost``, at
    ``first_rate`` records a second) counts per record time its worker spends every second
    whatever its records (a bundle's finish, its timers): such a time, f a second, reads as
    f / rate a record, so a cost read where fewer records came is higher than the whole
    run's (``cost`` at ``rate``), and a prediction with it is high where more come. Taken
    so when it is :data:`FIXED_TIME_RISE` times the whole run's or more."""
    return first_rate < rate and first_cost >= FIXED_TIME_RISE * cost


def fluid_served(offered: np.ndarray, rates: np.ndarray) -> np.ndarray:
    """Records a server of each rate in ``rates`` (records per subinterval) serves per
    subinterval when ``offered`` records arrive per subinterval, first come first
    served, starting empty: rates x subintervals."""
    served = np.empty((rates.size, offered.size))
    queue = np.zeros(rates.size)
    for k, arriving in enumerate(offered):
        queue += arriving
        served[:, k] = np.minimum(queue, rates)
        queue -= served[:, k]
    return served


def served_rate(offered: np.ndarray, served: np.ndarray) -> float | None:
    """The rate (records per subinterval) of the first-come-first-served server whose
    cumulative records served, fed ``offered``, stay closest to the ``served`` counts
    (mean absolute gap), when a server of that rate explains the gap between what was
    offered and what was served, even read a few subintervals late (:data:`FIT_GAIN`,
    :data:`LAGS`), and keeps a subinterval's service waiting in at least :data:`QUEUED`
    subintervals;
    None when no rate does (the operator kept up)."""
    taken = np.cumsum(served)
    arrived = np.cumsum(offered)
    unlimited = min(
        float(np.abs(taken[lag:] - arrived[: arrived.size - lag]).sum()) / taken.size
        for lag in range(min(LAGS, taken.size))
    )
    top = float(offered.max(initial=0.0))
    if unlimited <= 0 or top <= 0:
        return None
    rates = np.geomspace(top / 50, top, RATES)
    for _ in range(2):
        gaps = np.abs(np.cumsum(fluid_served(offered, rates), axis=1) - taken).mean(axis=1)
        best = int(gaps.argmin())
        rates = np.geomspace(rates[max(best - 1, 0)], rates[min(best + 1, rates.size - 1)],
                             RATES)  # fmt: skip
    rate = float(rates[RATES // 2])
    model = np.cumsum(fluid_served(offered, np.array([rate]))[0])
    gap = float(np.abs(model - taken).mean())
    waiting = arrived - model  # records queued at each subinterval's end
    depth = max(1.0, QUEUE_DEPTH * rate)
    if gap > FIT_GAIN * unlimited or int((waiting >= depth).sum()) < QUEUED:
        return None
    return rate


def thread_cost(
    rows: pd.DataFrame,
    capacity: float,
    offered: pd.Series | None = None,
    subinterval: float = 1.0,
) -> ThreadCost | None:
    """The busy time per record at which a thread (or ``capacity`` threads) serves
    records when a queue waits for them, from per-subinterval ``events_in`` and
    ``cpu_seconds`` (busy seconds).

    A backlog grows and drains at the rate the threads serve when records wait, and an
    engine's busy time does not say when that is: it is wall-clock time, part of which
    does not grow with the records (an operator waits for a core; a Python operator's
    thread waits for its bundles, and is idle, not busy, while the Python worker
    works). The first reading that applies:

    - **queued**: with ``offered`` (records offered per subinterval), the rate of the
      server that, fed what was offered, reproduces the records served
      (:func:`served_rate`): a record costs ``capacity`` over it;
    - **saturated**: blocks of ``BLOCK`` subintervals whose busy time is at least
      ``SATURATED`` of the capacity: the same reading from the records served there;
    - **unsaturated**: busy time per second fitted as ``busy = c * records + f``
      (least squares) over the blocks; full threads serve ``(capacity - f) / c``
      records a second, so a record costs ``c / (1 - f / capacity)`` of their time.

    Under ``busy = c * records + f`` (f >= 0) a block's busy time per record is
    ``c + f / records``, which at the saturating rate is exactly the line's cost and
    above it at any lower rate: no block's busy time per record is below the cost, and
    the line's cost is capped at the least a block shows (**least busy per record**).
    The line needs rates that differ by ``LEVERAGE`` at least: through a few blocks of
    nearly one rate, as a calm window gives, it can be wildly steep (31 ms a record
    where every block showed 14 ms or more). The block readings need ``MIN_POINTS``
    blocks with records and busy time; None (use the plain ratio) without them or
    without the leverage."""
    if rows.empty:
        return None
    served = rows.groupby("interval")["events_in"].sum()
    busy_of = rows.groupby("interval")["cpu_seconds"].sum()
    span = np.arange(int(served.index.min()), int(served.index.max()) + 1)
    served = served.reindex(span, fill_value=0.0)
    busy_of = busy_of.reindex(span, fill_value=0.0)
    if offered is not None:
        arriving = offered.reindex(span, fill_value=0.0).to_numpy(dtype=float)
        rate = served_rate(arriving, served.to_numpy(dtype=float))
        if rate is not None:
            return ThreadCost(capacity * subinterval / rate, "queued")
    block = span // BLOCK
    per_second = BLOCK * subinterval
    events = served.groupby(block).sum().to_numpy(dtype=float) / per_second
    busy = busy_of.groupby(block).sum().to_numpy(dtype=float) / per_second
    full = (events > 0) & (busy >= SATURATED * capacity)
    if full.sum() >= MIN_POINTS:
        return ThreadCost(capacity / float(events[full].mean()), "saturated")
    keep = (events > 0) & (busy > 0) & ~full
    if keep.sum() < MIN_POINTS or events[keep].max() < LEVERAGE * events[keep].min():
        return None
    least = ThreadCost(float((busy[keep] / events[keep]).min()), "least busy per record")
    slope, intercept = np.polyfit(events[keep], busy[keep], 1)
    if slope <= 0:
        return least
    fixed = min(max(float(intercept), 0.0), SATURATED * capacity)
    line = float(slope) / (1.0 - fixed / capacity)
    return ThreadCost(line, "busy-time line") if line <= least.cost else least


LUMP = 2.0
"""A Python worker charged more than this many times its host's cores in one
subinterval did no work there that can be read: no process does that much in a
second. Such a lump is the collector's late charge of a worker's start or a restart
(5-27 s in single seconds beside rescales, where a second's worker time is otherwise
at most 2.4 s on 2 cores)."""


def without_lumps(topology: Topology, stats: pd.DataFrame) -> pd.DataFrame:
    """``stats`` with the worker time of its Python operators left unmeasured (NaN) in
    the subintervals where their worker, summed over its operators, was charged more
    than :data:`LUMP` times its host's cores (the thread's host, or the TaskManager
    whose Python worker that is)."""
    if WORK_COLUMN not in stats.columns or stats[WORK_COLUMN].isna().all():
        return stats
    nodes = {n.id: n for n in topology.nodes}
    hosts = {op: nodes[node].host for op, node in topology.placement.items()}
    limits: dict[str, float] = {}
    for name in {h for h in hosts.values() if h is not None}:
        machine = worker_taskmanager(name) or name
        if machine in nodes:
            limits[name] = LUMP * nodes[machine].capacity * topology.subinterval
    worker = stats["operator"].map(hosts)
    limit = worker.map(limits)
    charged = stats.groupby([worker, stats["interval"]])[WORK_COLUMN].transform("sum")
    lumps = (charged > limit) & limit.notna()
    if not lumps.any():
        return stats
    return stats.assign(**{WORK_COLUMN: stats[WORK_COLUMN].mask(lumps)})


STARTUP = 3.0
"""The work per record, over that of the rest of its port's window, above which the
subinterval after a window's first finish holds the Python worker's start-up (its first
bundle spread over two subintervals by ingestion), not its records' work: a finish's
records and work may lag by a subinterval, which puts up to about twice the mean there."""


def settled(stats: pd.DataFrame) -> pd.DataFrame:
    """``stats`` with the worker time of each Python operator port read between bundle
    finishes only: after the first subinterval whose work it measured and up to the last
    (elsewhere left unmeasured, NaN). A bundle runs at its finish the records its thread
    took before, so the work of a window's first finish belongs to records taken before
    the window, and the records taken after its last finish are run after it. At a job's
    start that first finish also holds the worker's start-up, which ingestion may spread
    into the next subinterval: that one is left out too where its work per record is
    :data:`STARTUP` times that of the rest of the window or more (1.42 s of work for 87
    records in the second second of one chain run, 16 ms a record against 3.0 over the
    run; after a rescale's restart, a second of work with no record). A port with fewer
    than three subintervals of work keeps its rows."""
    if WORK_COLUMN not in stats.columns or stats[WORK_COLUMN].isna().all():
        return stats
    working = stats[stats[WORK_COLUMN] > 0]
    if working.empty:
        return stats
    keys = ["operator", "port"]
    span = working.groupby(keys)["interval"].agg(["min", "max", "nunique"])
    bounds = stats[keys].merge(span, left_on=keys, right_index=True, how="left")
    interval = stats["interval"].to_numpy()
    inside = (interval > bounds["min"].to_numpy()) & (interval <= bounds["max"].to_numpy())
    few = (bounds["nunique"].to_numpy() < 3) | bounds["min"].isna().to_numpy()
    work = np.nan_to_num(stats[WORK_COLUMN].to_numpy(dtype=float))
    records = stats["events_in"].to_numpy(dtype=float)
    ports = stats["operator"].astype(str) + "\0" + stats["port"].astype(str)
    for key, intervals in working.groupby(ports.loc[working.index])["interval"]:
        second = np.sort(intervals.to_numpy())[1:2]
        if second.size == 0:
            continue
        rows = (ports == key).to_numpy()
        candidate = rows & (interval == second[0])
        others = rows & inside & ~candidate
        if records[others].sum() <= 0:
            continue
        rest = work[others].sum() / records[others].sum()
        if work[candidate].sum() >= STARTUP * rest * records[candidate].sum():
            inside &= ~candidate
    return stats.assign(**{WORK_COLUMN: stats[WORK_COLUMN].where(inside | few)})


def busy_per_record_by_load(rows: pd.DataFrame) -> tuple[float, float] | None:
    """A thread's busy time per record in the calmest and in the busiest third of its
    blocks of ``BLOCK`` subintervals with records (None with fewer than two blocks a
    third)."""
    if rows.empty:
        return None
    block = rows["interval"].to_numpy(dtype=np.int64) // BLOCK
    sums = rows.groupby(block)[["events_in", "cpu_seconds"]].sum()
    sums = sums[sums["events_in"] > 0].sort_values("events_in")
    third = len(sums) // 3
    if third < 2:
        return None
    low, high = sums.iloc[:third], sums.iloc[-third:]
    return (
        float(low["cpu_seconds"].sum() / low["events_in"].sum()),
        float(high["cpu_seconds"].sum() / high["events_in"].sum()),
    )


def _per(total: float, records: float) -> float:
    """``total`` per record (0 without records)."""
    return float(total) / float(records) if records > 0 else 0.0


def _thread_capacities(topology: Topology) -> dict[str, float]:
    """Operators on a node inside a host (a thread of a real engine, whose measured
    ``cpu_seconds`` is busy time) with the capacity of that node."""
    nodes = {n.id: n for n in topology.nodes}
    return {
        op: nodes[node].capacity
        for op, node in topology.placement.items()
        if nodes[node].host is not None
    }


def _offered(
    topology: Topology, frame: pd.DataFrame, upstream: str, source_counts: np.ndarray | None
) -> pd.Series | None:
    """Records offered to an operator per interval: its upstream operator's outputs, or
    its source's arrivals (None where they are not known)."""
    if upstream in topology.operator_index:
        rows = frame[frame["operator"] == upstream]
        return rows.groupby("interval")["events_out"].sum()
    if source_counts is None:
        return None
    row = source_counts[topology.source_ids.index(upstream)]
    return pd.Series(row, index=np.arange(row.size))


def _fit_product(op: Operator, frame: pd.DataFrame, prior: float) -> float:
    rows = frame[frame["operator"] == op.id]
    if rows.empty:
        return prior
    table = rows.pivot_table(
        index="interval", columns="port", values="events_in", aggfunc="sum", fill_value=0
    )
    if table.shape[1] < len(op.inputs):
        return prior
    pairs = float(np.prod(table.to_numpy(dtype=float), axis=1).sum())
    outputs = float(rows["events_out"].sum())
    return outputs / pairs if pairs > 0 else prior
