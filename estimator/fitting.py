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

STATS_COLUMNS = ("operator", "port", "interval", "events_in", "events_out", "cpu_seconds")


@dataclass(frozen=True)
class PortFit:
    """Fitted figures of one operator port over the training window."""

    operator: str
    port: int
    events_in: float
    cost: float
    selectivity: float


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
    operator a source feeds.
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
    grouped = frame.groupby(["operator", "port"])[["events_in", "events_out", "cpu_seconds"]].sum()
    totals: dict[tuple[str, int], tuple[float, float, float]] = {
        (str(op), int(port)): (float(ein), float(eout), float(cpu))
        for (op, port), ein, eout, cpu in zip(
            grouped.index,
            grouped["events_in"].to_numpy(dtype=float),
            grouped["events_out"].to_numpy(dtype=float),
            grouped["cpu_seconds"].to_numpy(dtype=float),
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
            events, outputs, cpu = totals.get(key, (0.0, 0.0, 0.0))
            if events <= 0:
                unfitted.append(key)
                continue
            if cpu > 0:
                costs[port] = cpu / events
                if op.id in threads:
                    rows = frame[(frame["operator"] == op.id) & (frame["port"] == port)]
                    offered = None
                    if len(op.inputs) == 1:
                        offered = _offered(topology, frame, op.inputs[0], source_counts)
                    costs[port] = thread_cost(rows, threads[op.id], offered) or costs[port]
            selectivities[port] = outputs / events
            fitted_ports.append(PortFit(op.id, port, events, costs[port], selectivities[port]))
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


SATURATED = 0.9
"""A thread busy for at least this share of its capacity in a subinterval is saturated
there: its busy time says how fast it can go, not how much it was offered."""
MIN_POINTS = 3
QUEUED = 2.0
"""Seconds of a thread's records that wait in front of it, at least, for it to count as
serving as fast as it can."""
BLOCK = 5
"""Subintervals summed into one reading of a thread: counters sampled every second by
wall clock are noisy per subinterval (a metric value can lag its neighbour's by a
sample), and sums over a few seconds are not."""


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


def thread_cost(
    rows: pd.DataFrame, capacity: float, offered: pd.Series | None = None
) -> float | None:
    """The busy time per record at which a thread (or ``capacity`` threads) serves
    records when a queue waits for them, from per-subinterval ``events_in`` and
    ``cpu_seconds`` (busy seconds), read in blocks of ``BLOCK`` subintervals.

    A backlog grows and drains at the rate the threads serve when records wait, and an
    engine's busy time does not say when that is: it is wall-clock time, part of which
    does not grow with the records (an operator waits for a core; a Python operator's
    thread waits for its bundles, and is idle, not busy, while the Python worker
    works). The first reading that applies:

    - **queued**: ``offered`` (records offered per interval) shows a queue in front of
      the threads all through some blocks (at every interval's end, at least
      ``QUEUED`` seconds of records at the fastest rate a block shows: counters sampled
      a second apart show a few records more or less in flight): the threads served
      as fast as they can there, and a record costs ``capacity`` over the records
      served per second;
    - **saturated**: blocks whose busy time is at least ``SATURATED`` of the capacity:
      the same reading;
    - **unsaturated**: busy time per second fitted as ``busy = c * records + f``
      (least squares) over the blocks; full threads serve ``(capacity - f) / c``
      records a second, so a record costs ``c / (1 - f / capacity)`` of their time.

    Each needs ``MIN_POINTS`` blocks with records; None (use the plain ratio) without
    them or when the fit is not a rising line."""
    if rows.empty:
        return None
    served = rows.groupby("interval")["events_in"].sum()
    busy_of = rows.groupby("interval")["cpu_seconds"].sum()
    span = np.arange(int(served.index.min()), int(served.index.max()) + 1)
    served = served.reindex(span, fill_value=0.0)
    busy_of = busy_of.reindex(span, fill_value=0.0)
    block = span // BLOCK
    events = served.groupby(block).sum().to_numpy(dtype=float)
    busy = busy_of.groupby(block).sum().to_numpy(dtype=float) / BLOCK
    rate = events / BLOCK
    if offered is not None:
        arriving = offered.reindex(span, fill_value=0.0).to_numpy(dtype=float)
        done = served.to_numpy(dtype=float)
        queue = np.zeros(span.size)
        backlog = 0.0
        for k in range(span.size):  # records offered and not served yet (none at the start)
            backlog = max(0.0, backlog + arriving[k] - done[k])
            queue[k] = backlog
        waiting = pd.Series(queue >= QUEUED * max(float(rate.max()), 1.0), index=span)
        queued = waiting.groupby(block).all().to_numpy() & (events > 0)
        if queued.sum() >= MIN_POINTS:
            return capacity / float(rate[queued].mean())
    full = (events > 0) & (busy >= SATURATED * capacity)
    if full.sum() >= MIN_POINTS:
        return capacity / float(rate[full].mean())
    keep = (events > 0) & ~full
    if keep.sum() < MIN_POINTS or np.ptp(rate[keep]) <= 0:
        return None
    slope, intercept = np.polyfit(rate[keep], busy[keep], 1)
    if slope <= 0:
        return None
    fixed = min(max(float(intercept), 0.0), SATURATED * capacity)
    return float(slope) / (1.0 - fixed / capacity)


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
