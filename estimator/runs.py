"""Latency of a measured run: estimated (measured DLTS) and predicted (fitted model).

Placements (and node capacities: a rescaled Flink vertex) may change during a run,
so node loads, capacities and the nodes hosting each query are computed per interval
from the placement versions (which version
covers an interval is :func:`estimator.model.version_at`'s rule), and the
per-query Mace uses a node mask that varies over time. The estimator is any
entry of :data:`estimator.pathaware.ESTIMATORS`: it refines Mace per placement
version, with backlogs carried over from one version to the next.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

import numpy as np
import pandas as pd

from estimator.bundles import cycle_excess
from estimator.delays import NO_DELAY, QueryDelay
from estimator.evaluator import epsilon
from estimator.fitting import fit_operator_stats, training_window
from estimator.mace import Stops, estimate_from_dlts, stop_series
from estimator.model import BOUNDARY_TOLERANCE, Topology, replace_capacities
from estimator.pathaware import Detail, estimator_by_name
from estimator.propagation import LoadModel, build_load_model, fine_basis, port_load
from estimator.python_worker import with_worker_capacities

DEFAULT_TRAINING_SHARE = 0.1


@dataclass(frozen=True)
class RunAnalysis:
    """System and per-query estimate per interval, with CE/C per node and the bound width.

    ``estimate`` is the series of ``estimator`` (Mace, or a registered refinement) and
    ``upper`` the upper edge of its band (:attr:`Estimator.band`: Mace + w + eps for
    Mace, per-origin + (h + 2)w/k + eps for per-origin, ...); ``lower`` (Theorem 3's lower
    bound, Mace itself), ``ce_seconds`` and ``bottleneck`` are Mace's whatever the
    estimator; ``per_query`` holds the estimator's per-query series and
    ``per_query_lower`` each query's Mace (its lower bound).
    """

    node_ids: tuple[str, ...]
    ce_seconds: np.ndarray
    estimate: np.ndarray
    bottleneck: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    epsilon: float
    per_query: dict[str, np.ndarray]
    estimator: str = "mace"
    per_query_lower: Mapping[str, np.ndarray] = field(default_factory=dict)
    per_query_upper: Mapping[str, np.ndarray] = field(default_factory=dict)
    delays: Mapping[str, QueryDelay] = field(default_factory=dict)
    """Per query, the engine's fixed delay added to the series (empty: none is)."""
    bundle_rise: Mapping[str, np.ndarray] = field(default_factory=dict)
    """Per query crossing Python operators, their bundle cycles' rise above the calm
    cycle per interval, which ``per_query`` holds where it exceeds the backlog."""

    def query_upper(self, query: str) -> np.ndarray:
        """The upper bound of ``query``'s latency: its own when known, else its estimate
        plus the width the band adds to the system's estimate (w + eps for Mace)."""
        if query in self.per_query_upper:
            return self.per_query_upper[query]
        return self.per_query[query] + (self.upper - self.estimate)

    @property
    def bottleneck_nodes(self) -> list[str]:
        return [self.node_ids[k] for k in self.bottleneck]


def segments(starts: Sequence[int], intervals: int) -> list[tuple[int, int]]:
    """The half-open interval range [lo, hi) of each placement version."""
    bounds = [min(max(0, s), intervals) for s in starts] + [intervals]
    return [(bounds[k], max(bounds[k], bounds[k + 1])) for k in range(len(starts))]


def operator_matrix(
    topology: Topology, frame: pd.DataFrame, intervals: int, column: str = "cpu"
) -> np.ndarray:
    """Operators (topology order) x intervals from rows of ``operator, interval, <column>``
    (rows of unknown operators or outside [0, intervals) are left out; cells add up)."""
    shape = (len(topology.operator_ids), intervals)
    if frame.empty:
        return np.zeros(shape)
    rows = pd.Index(topology.operator_ids).get_indexer(pd.Index(frame["operator"]))  # -1: unknown
    cols = frame["interval"].to_numpy(dtype=np.int64)
    keep = (rows >= 0) & (cols >= 0) & (cols < intervals)
    # bincount over flat cell numbers adds up like np.add.at, several times faster
    cells = rows[keep] * intervals + cols[keep]
    values = frame[column].to_numpy(dtype=float)[keep]
    return np.bincount(cells, weights=values, minlength=shape[0] * intervals).reshape(shape)


def input_matrix(
    topology: Topology, frame: pd.DataFrame, intervals: int, column: str = "cpu_seconds"
) -> np.ndarray:
    """Operator input ports (rows of :attr:`Topology.input_offsets`) x intervals from rows
    of ``operator, port, interval, <column>`` (rows of unknown operators or ports, or
    outside [0, intervals), are left out; cells add up)."""
    offsets = np.array(topology.input_offsets, dtype=np.int64)
    shape = (int(offsets[-1]), intervals)
    if frame.empty:
        return np.zeros(shape)
    ops = pd.Index(topology.operator_ids).get_indexer(pd.Index(frame["operator"]))
    ports = frame["port"].to_numpy(dtype=np.int64)
    cols = frame["interval"].to_numpy(dtype=np.int64)
    known = ops >= 0
    width = np.where(known, np.diff(offsets)[np.where(known, ops, 0)], 0)
    keep = known & (ports >= 0) & (ports < width) & (cols >= 0) & (cols < intervals)
    cells = (offsets[ops[keep]] + ports[keep]) * intervals + cols[keep]
    values = frame[column].to_numpy(dtype=float)[keep]
    return np.bincount(cells, weights=values, minlength=shape[0] * intervals).reshape(shape)


def operator_sums(topology: Topology, port_work: np.ndarray) -> np.ndarray:
    """Operators x intervals: the sum over each operator's input ports of ``port_work``."""
    offsets = topology.input_offsets
    out = np.zeros((len(topology.operator_ids), port_work.shape[1]))
    for j in range(len(offsets) - 1):
        for row in range(offsets[j], offsets[j + 1]):
            out[j] += port_work[row]
    return out


def node_loads(
    topology: Topology,
    operator_dlts: np.ndarray,
    placements: Sequence[Mapping[str, str]],
    starts: Sequence[int],
) -> np.ndarray:
    """Node DLTS (nodes x intervals) from operator DLTS under placement versions."""
    node_index = {n: k for k, n in enumerate(topology.node_ids)}
    intervals = operator_dlts.shape[1]
    out = np.zeros((len(node_index), intervals))
    for placement, (lo, hi) in zip(placements, segments(starts, intervals), strict=True):
        rows = np.array([node_index[placement[op]] for op in topology.operator_ids], dtype=int)
        # one row after another, in operator order, as np.add.at did: the same sums to
        # the bit (a sum over a block of rows may round differently), in a fraction of
        # its time
        for k, node in enumerate(rows):
            out[node, lo:hi] += operator_dlts[k, lo:hi]
    return topology.with_hosts(out)


def measured_node_dlts(
    topology: Topology,
    cpu: pd.DataFrame,
    placements: Sequence[Mapping[str, str]],
    starts: Sequence[int],
    intervals: int,
) -> np.ndarray:
    """Measured node DLTS (nodes x intervals 0 .. intervals-1) from rows of
    ``operator, interval, cpu``, each interval's operators mapped by its placement version."""
    return node_loads(topology, operator_matrix(topology, cpu, intervals), placements, starts)


def offered_port_dlts(
    topology: Topology, operator_stats: pd.DataFrame, counts: np.ndarray, intervals: int
) -> np.ndarray:
    """Work offered to each operator input port per interval (inputs x intervals, rows of
    :attr:`Topology.input_offsets`) of a run measured by counters, by stimulus time: the
    sources' measured arrivals (rows of ``counts`` in ``topology.source_ids`` order)
    through the costs and selectivities fitted over the whole run.

    Busy time sampled by wall clock cannot show a backlog: a saturated subtask is busy
    100% of every second whatever arrives, so the measured busy time of an overloaded
    operator equals its capacity and its CE stays near 0. The arrivals do show it
    (docs/flink.md). Downstream of a bottleneck, an operator's records come when the
    bottleneck lets them through, not when their events arrived: the work they bring
    belongs to the interval of their stimulus (the paper's DLTS), which is what a
    resource shared by both operators (a Python interpreter, a TaskManager's cores)
    must serve to get those events through."""
    fitted = topology
    if not operator_stats.empty:
        fitted = fit_operator_stats(topology, operator_stats, None, counts).topology
    model = build_load_model(fitted, counts[:, :intervals])
    out = np.zeros((topology.input_offsets[-1], intervals))
    work = port_load(fitted, model)
    out[:, : work.shape[1]] = work
    return out


def offered_operator_dlts(
    topology: Topology, operator_stats: pd.DataFrame, counts: np.ndarray, intervals: int
) -> np.ndarray:
    """Operator DLTS of a run measured by counters: :func:`offered_port_dlts` summed over
    each operator's ports."""
    return operator_sums(topology, offered_port_dlts(topology, operator_stats, counts, intervals))


def estimated_operator_dlts(
    topology: Topology,
    *,
    cpu: pd.DataFrame,
    stats: pd.DataFrame,
    counts: np.ndarray,
    counters: bool,
    intervals: int,
) -> np.ndarray:
    """The operator DLTS (operators x intervals) the "estimated" latency of a run is
    computed from: the measured CPU of per-event records (rows ``operator, interval,
    cpu``), or for a run measured by counters the work offered to each operator
    (:func:`offered_operator_dlts`)."""
    if counters:
        return offered_operator_dlts(topology, stats, counts, intervals)
    return operator_matrix(topology, cpu, intervals)


def estimated_port_dlts(
    topology: Topology, *, stats: pd.DataFrame, counts: np.ndarray, counters: bool, intervals: int
) -> np.ndarray:
    """:func:`estimated_operator_dlts` per operator input port (inputs x intervals): the
    measured CPU of each port (``operator_stats.cpu_seconds``), or the work offered to it
    for a run measured by counters."""
    if counters:
        return offered_port_dlts(topology, stats, counts, intervals)
    return input_matrix(topology, stats, intervals)


def query_hosts(
    topology: Topology,
    placements: Sequence[Mapping[str, str]],
    starts: Sequence[int],
    intervals: int,
) -> dict[str, np.ndarray]:
    """Per query, the (nodes x intervals) mask of the nodes hosting it in each interval."""
    node_index = {n: k for k, n in enumerate(topology.node_ids)}
    masks: dict[str, np.ndarray] = {}
    for query in topology.queries:
        mask = np.zeros((len(node_index), intervals), dtype=bool)
        ops = topology.operators_of_query(query)
        for placement, (lo, hi) in zip(placements, segments(starts, intervals), strict=True):
            for node in topology.hosts_of(placement[op] for op in ops):
                mask[node_index[node], lo:hi] = True
        masks[query] = mask
    return masks


def node_profile_matrix(
    topology: Topology, frame: pd.DataFrame, intervals: int, sub_buckets: int
) -> np.ndarray | None:
    """Nodes (topology order) x intervals x sub-buckets of CPU-seconds from rows of
    ``node, interval, sub_bucket, cpu_seconds`` (the stored node_profile); None without
    rows (a run measured by counters, or ingested before the profile was stored). Rows
    of unknown nodes or outside [0, intervals) x [0, sub_buckets) are left out."""
    return _profile_matrix(topology.node_ids, frame, "node", "cpu_seconds", intervals, sub_buckets)


def source_profile_matrix(
    topology: Topology, frame: pd.DataFrame, intervals: int, sub_buckets: int
) -> np.ndarray | None:
    """Sources (topology order) x intervals x sub-buckets of events from rows of
    ``source, interval, sub_bucket, events`` (the stored source_profile); None without
    rows, as :func:`node_profile_matrix`."""
    return _profile_matrix(topology.source_ids, frame, "source", "events", intervals, sub_buckets)


def _profile_matrix(
    ids: Sequence[str],
    frame: pd.DataFrame,
    key: str,
    value: str,
    intervals: int,
    sub_buckets: int,
) -> np.ndarray | None:
    if frame.empty:
        return None
    out = np.zeros((len(ids), intervals, sub_buckets))
    index = {n: k for k, n in enumerate(ids)}
    rows = frame[key].map(index)
    cols = frame["interval"].to_numpy(dtype=np.int64)
    buckets = frame["sub_bucket"].to_numpy(dtype=np.int64)
    keep = (
        rows.notna().to_numpy()
        & (cols >= 0)
        & (cols < intervals)
        & (buckets >= 0)
        & (buckets < sub_buckets)
    )
    np.add.at(
        out,
        (rows[keep].to_numpy(dtype=np.int64), cols[keep], buckets[keep]),
        frame[value].to_numpy(dtype=float)[keep],
    )
    return out


def predicted_node_profile(
    topology: Topology,
    model: LoadModel,
    fine_counts: np.ndarray,
    placements: Sequence[Mapping[str, str]],
    starts: Sequence[int],
) -> np.ndarray:
    """The work the model predicts on each node per subinterval and sub-bucket (nodes x
    D x k, CPU-seconds; the prediction's counterpart of the stored node_profile): the
    arrivals per sub-bucket ``fine_counts`` (sources x D x k, e.g. the stored
    source_profile) pushed through ``model`` (:func:`estimator.propagation.fine_basis`),
    each interval's operators mapped by its placement version. Summed over the
    sub-buckets it is :func:`node_loads` of the model's operator DLTS."""
    basis = fine_basis(topology, model, fine_counts)
    node_index = {n: k for k, n in enumerate(topology.node_ids)}
    out = np.zeros((len(node_index), *basis.shape[1:]))
    for placement, (lo, hi) in zip(placements, segments(starts, model.intervals), strict=True):
        if lo == hi:
            continue
        weights = np.zeros((len(node_index), basis.shape[0]))
        for k, op in enumerate(topology.operator_ids):
            weights[node_index[placement[op]]] += model.op_load[k]
        part = basis[:, lo:hi].reshape(basis.shape[0], -1)
        out[:, lo:hi] = (weights @ part).reshape(len(node_index), hi - lo, basis.shape[2])
    return topology.with_hosts(out)


def version_topologies(
    topology: Topology,
    placements: Sequence[Mapping[str, str]],
    capacities: Sequence[Mapping[str, float]] | None = None,
) -> list[Topology]:
    """Per placement version, ``topology`` with that version's placement and node
    capacities (``capacities[k]``: version k's, e.g. a rescaled Flink vertex's threads
    node at its new parallelism; a node left out, or no ``capacities``: the
    topology's), and the Python workers' cores that follow from them
    (:func:`estimator.python_worker.worker_capacity`). A version equal to ``topology``
    is ``topology`` itself."""
    out = []
    for k, placement in enumerate(placements):
        version = topology.with_placement(placement)
        own = capacities[k] if capacities is not None and k < len(capacities) else {}
        changed = {n: c for n, c in own.items() if version.capacity_by_node.get(n) != c}
        if changed:
            version = with_worker_capacities(replace_capacities(version, changed))
        out.append(version)
    return out


class Restarted(Protocol):
    """A placement version as :func:`restart_spans` reads it."""

    @property
    def valid_from(self) -> float: ...

    @property
    def stopped_at(self) -> float | None: ...


def restart_spans(versions: Sequence[Restarted]) -> list[tuple[float, float]]:
    """[stopped, resumed) of each version that began with a restart (a Flink rescale),
    the run's clock: from its ``stopped_at`` until its ``valid_from``, when every subtask
    of the job ran again. Flink switches a subtask to RUNNING once its operators are open
    (a Python operator's worker started) and its state restored; a rescaled job's latency
    probe wrote again 0.01-0.05 s after that time in every restart measured (docs/flink.md,
    "When the job stops and serves again"), while the busy time and the records in of the
    samples around a restart lag it by up to two seconds, so they do not say when the
    job serves."""
    return [(v.stopped_at, v.valid_from) for v in versions if v.stopped_at is not None]


def version_stops(
    spans: Sequence[tuple[float, float]], origin: float, subinterval: float, intervals: int
) -> Stops | None:
    """The restarts ``spans`` (:func:`restart_spans`) over the run's ``intervals``
    subintervals from ``origin``; None when the run has none."""
    return stop_series(spans, origin, subinterval, intervals) if spans else None


def measured_stops(
    versions: Sequence[Restarted], origin: float, subinterval: float, intervals: int
) -> Stops | None:
    """The restarts of a run's ``versions`` (:func:`restart_spans`) as the stops every
    analysis of the run serves nothing in (:func:`version_stops`); None without one."""
    return version_stops(restart_spans(versions), origin, subinterval, intervals)


def restart_starts(
    versions: Sequence[Restarted], origin: float, subinterval: float
) -> list[int | None]:
    """The subinterval each version's restart began in (None: it began without one)."""
    return [
        None
        if v.stopped_at is None
        else max(0, math.floor((v.stopped_at - origin) / subinterval + BOUNDARY_TOLERANCE))
        for v in versions
    ]


def capacity_series(
    versions: Sequence[Topology], starts: Sequence[int], intervals: int
) -> np.ndarray:
    """Node capacities for :func:`estimator.mace.estimate_from_dlts`: one per node
    (topology order) when every version has the same, else nodes x intervals, each
    interval with the capacities of its placement version."""
    rows = [np.array([n.capacity for n in v.nodes], dtype=float) for v in versions]
    if all(np.array_equal(r, rows[0]) for r in rows[1:]):
        return rows[0]
    out = np.empty((rows[0].size, intervals))
    for row, (lo, hi) in zip(rows, segments(starts, intervals), strict=True):
        out[:, lo:hi] = row[:, None]
    return out


def analyse(
    topology: Topology,
    node_dlts: np.ndarray,
    placements: Sequence[Mapping[str, str]],
    starts: Sequence[int],
    estimator: str = "mace",
    detail: Detail | None = None,
    capacities: Sequence[Mapping[str, float]] | None = None,
    stops: Stops | None = None,
    bundle_work: Mapping[str, float] | None = None,
) -> RunAnalysis:
    """CE, Mace, bottleneck, bounds and per-query series for node loads of a run, with
    the registered ``estimator`` applied in each placement version's segment (from the
    finer ``detail`` of the same loads when given: the node profile, the port work).

    ``capacities`` are the node capacities of each version where they change
    (:func:`version_topologies`): CE carries each node's backlog across a change and
    serves it at the capacity of the interval; a refinement sees the capacities of the
    segment it refines, as it sees its placement. ``stops`` are the restarts where
    nothing was served (:func:`estimator.mace.stop_series`): Mace serves nothing there
    and waits for the rest of the stop, and every estimate is at least Mace's (a
    refinement serves at the nodes' capacities and would not see the stop).
    ``bundle_work`` is the work of a full bundle per thread of Python operators with a
    bundle size (:func:`estimator.bundles.full_bundle_work` of the model the loads come
    from; :func:`bundle_excess`)."""
    chosen = estimator_by_name(estimator)
    intervals = node_dlts.shape[1]
    versions = version_topologies(topology, placements, capacities)
    caps = capacity_series(versions, starts, intervals)
    eps = max(epsilon(v, v.placement) for v in versions)
    base = estimate_from_dlts(
        node_dlts,
        caps,
        topology.node_ids,
        topology.subinterval,
        eps,
        query_hosts(topology, placements, starts, intervals),
        stops=stops,
    )
    series = base.series.copy()
    upper = base.upper.copy()
    per_query = {q: s.copy() for q, s in base.per_query.items()}
    for version, (lo, hi) in zip(versions, segments(starts, intervals), strict=True):
        if lo == hi:
            continue
        seen = base
        if caps.ndim == 2:
            seen = replace(base, capacities=caps[:, lo])
        refined = chosen.apply(version, seen, detail)
        series[lo:hi] = refined.series[lo:hi]
        upper[lo:hi] = refined.upper[lo:hi]
        for query in per_query:
            per_query[query][lo:hi] = refined.per_query[query][lo:hi]
    if topology.hosted or stops is not None:
        # refinements follow work from node to node and see neither hosts nor stops; a
        # host's backlog and a stop's are in Mace, which bounds every estimate from below
        series = np.maximum(series, base.series)
        upper = np.maximum(upper, base.upper)
        per_query = {q: np.maximum(s, base.per_query[q]) for q, s in per_query.items()}
    cycles = bundle_excess(topology, node_dlts, placements, starts, bundle_work, caps)
    if cycles:
        # the rise of a bundle cycle and a backlog at the same thread are two views of
        # one wait: the larger counts
        width = upper - series
        for query, rise in cycles.items():
            per_query[query] = np.maximum(per_query[query], rise)
        series = np.maximum(series, np.max(list(per_query.values()), axis=0))
        upper = np.maximum(upper, series + width)
    return RunAnalysis(
        node_ids=topology.node_ids,
        ce_seconds=base.ce_seconds,
        estimate=series,
        bottleneck=base.bottleneck_index,
        lower=base.lower,
        upper=upper,
        epsilon=eps,
        per_query=per_query,
        estimator=estimator,
        per_query_lower=base.per_query,
        bundle_rise=cycles,
    )


def bundle_excess(
    topology: Topology,
    node_dlts: np.ndarray,
    placements: Sequence[Mapping[str, str]],
    starts: Sequence[int],
    bundle_work: Mapping[str, float] | None = None,
    capacities: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Per query whose events cross a thread of Python operators (a node with a
    ``bundle_time``), what the bundle cycles add above the calm cycle in each interval
    (:func:`estimator.bundles.cycle_excess`): summed along a path from a source to the
    query's own operators, each thread counted once where the path enters it, the
    largest over the paths (the two inputs of a join are two paths, not one); empty when
    no node has a bundle time. ``bundle_work`` is the work of a full bundle per thread
    with a bundle size (:func:`estimator.bundles.full_bundle_work` of the model the
    loads come from); ``capacities`` are the node capacities (:func:`capacity_series`:
    per node, or nodes x intervals where a rescale changes them; the topology's when
    None): a thread of p subtasks plays each with its share of the work."""
    bundled = {n.id for n in topology.nodes if n.bundles}
    if not bundled:
        return {}
    intervals = node_dlts.shape[1]
    rises = {
        n.id: cycle_excess(
            node_dlts[k] / (n.capacity if capacities is None else capacities[k]),
            topology.subinterval,
            float(n.bundle_time or 0.0),
            bundle_work=(bundle_work or {}).get(n.id, math.inf),
            checkpoint=n.checkpoint_interval,
        )
        for k, n in enumerate(topology.nodes)
        if n.id in bundled
    }
    none = np.zeros(intervals)
    out: dict[str, np.ndarray] = {}
    for query in topology.queries:
        members = topology.operators_of_query(query)
        total = np.zeros(intervals)
        for placement, (lo, hi) in zip(placements, segments(starts, intervals), strict=True):
            reached: dict[str, np.ndarray] = {}
            for op in members:  # topology order: inputs first
                node = placement[op]
                entering = rises.get(node, none)[lo:hi]
                best = np.zeros(hi - lo)
                for upstream in topology.operator_by_id[op].inputs:
                    if upstream in reached:
                        same = placement[upstream] == node
                        best = np.maximum(best, reached[upstream] + (0.0 if same else entering))
                    else:  # a source
                        best = np.maximum(best, entering)
                reached[op] = best
            own = [reached[o.id] for o in topology.operators if o.query == query]
            total[lo:hi] = np.max(own, axis=0)
        if any(placement[o] in bundled for o in members for placement in placements):
            out[query] = total
    return out


def predicted_operator_dlts(
    topology: Topology,
    operator_stats: pd.DataFrame,
    counts: np.ndarray,
    intervals: int,
    share: float = DEFAULT_TRAINING_SHARE,
) -> np.ndarray:
    """Operator DLTS predicted from arrivals with costs and selectivities fitted on the
    first ``share`` of the run (docs/design.md, "Fitting and prediction")."""
    window = training_window(intervals, share) if intervals else None
    return fitted_operator_dlts(topology, operator_stats, counts, window)


def fitted_operator_dlts(
    topology: Topology,
    operator_stats: pd.DataFrame,
    counts: np.ndarray,
    window: tuple[int, int] | None,
) -> np.ndarray:
    """Operator DLTS predicted from arrivals ``counts`` with costs and selectivities
    fitted on the ``window`` [start, stop) of ``operator_stats`` (``None`` or no
    statistics: the topology's own costs)."""
    return fitted_model(topology, operator_stats, counts, window)[1].operator_dlts()


def fitted_port_dlts(
    topology: Topology,
    operator_stats: pd.DataFrame,
    counts: np.ndarray,
    window: tuple[int, int] | None,
) -> np.ndarray:
    """:func:`fitted_operator_dlts` per operator input port (inputs x intervals)."""
    fitted, model = fitted_model(topology, operator_stats, counts, window)
    return port_load(fitted, model)


def fitted_node_profile(
    topology: Topology,
    operator_stats: pd.DataFrame,
    counts: np.ndarray,
    fine_counts: np.ndarray,
    window: tuple[int, int] | None,
    placements: Sequence[Mapping[str, str]],
    starts: Sequence[int],
) -> np.ndarray:
    """:func:`predicted_node_profile` of the model fitted as :func:`fitted_port_dlts`
    (nodes x intervals x sub-buckets)."""
    fitted, model = fitted_model(topology, operator_stats, counts, window)
    return predicted_node_profile(fitted, model, fine_counts, placements, starts)


def fitted_model(
    topology: Topology,
    operator_stats: pd.DataFrame,
    counts: np.ndarray,
    window: tuple[int, int] | None,
) -> tuple[Topology, LoadModel]:
    """The topology with costs and selectivities fitted on ``window`` of
    ``operator_stats`` (as is without), and its load model for ``counts``."""
    fitted = topology
    if not operator_stats.empty and window is not None:
        fitted = fit_operator_stats(topology, operator_stats, window, counts).topology
    return fitted, build_load_model(fitted, counts)


def with_delays(analysis: RunAnalysis, delays: Mapping[str, QueryDelay]) -> RunAnalysis:
    """``analysis`` with each query's fixed delay added: the high one (the top of the calm
    spread, :mod:`estimator.delays`) to its estimate and its upper edge, the low one to
    its lower edge. The system's series are the largest of the queries' (its latency is
    its slowest query's)."""
    if not any(d.calibrated for d in delays.values()):
        return analysis
    per_query, lower, upper = {}, {}, {}
    for query, series in analysis.per_query.items():
        delay = delays.get(query, NO_DELAY)
        per_query[query] = series + delay.high
        own_lower = analysis.per_query_lower.get(query, analysis.lower)
        lower[query] = own_lower + delay.low
        upper[query] = analysis.query_upper(query) + delay.high
    stack = list(per_query)
    return replace(
        analysis,
        estimate=np.max([per_query[q] for q in stack], axis=0),
        lower=np.max([lower[q] for q in stack], axis=0),
        upper=np.max([upper[q] for q in stack], axis=0),
        per_query=per_query,
        per_query_lower=lower,
        per_query_upper=upper,
        delays=dict(delays),
    )
