"""Verify each change: what the model fitted before a placement change predicted for it.

Each placement version after the first is a change, starting at subinterval
``interval``: operators moved, or nodes given another capacity (a Flink vertex rescaled
to another parallelism: its threads node's capacity is the parallelism), or both. The
model (costs and selectivities, docs/design.md, "Fitting and prediction") is fitted on
the period of the previous placement only (``training``, by default all of it), so it
knows nothing measured after the change. Applied to the run's arrivals under the run's
placement versions and their capacities (backlogs carried across the change), it gives
the predicted latency; its worst case over the period before the change (old placement
and capacities) and over the period after it (the new ones, until the next change or
the end of the run) are set against the measured worst case (``lat_max``) of the same
periods. The prediction sees the arrivals that really came after the change: it checks
the model's judgement of the deployment, not a forecast of the workload. A change that
began with a restart (the job stopped, then ran at the new parallelism) is predicted
with the restart: nothing is served while the job is stopped, so the backlog it leaves
is carried into the period after the change; each period ends where the next restart
began.
An estimator that reads a node profile (burst-aware, per-origin) gets the one the
fitted model predicts from the run's arrivals per sub-bucket, as the product's
predicted figure does (:func:`estimator.runs.predicted_node_profile`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pandas as pd

from estimator.arrivals import Arrivals
from estimator.bundles import full_bundle_work
from estimator.errors import ModelError
from estimator.mace import Stops
from estimator.model import Topology
from estimator.pathaware import NODE_FINE, PORT_WORK, SOURCE_FINE, Detail, estimator_by_name
from estimator.propagation import port_load
from estimator.runs import (
    RunAnalysis,
    analyse,
    fitted_model,
    measured_stops,
    node_loads,
    predicted_node_profile,
    restart_starts,
    segments,
    version_topologies,
)


@dataclass(frozen=True)
class ChangeCheck:
    """One placement change: predicted and measured worst case before and after it.

    Latencies are in seconds, NaN where a period has no data (e.g. no measured output
    yet after a change that just happened). ``before`` and ``after`` are the periods
    ([start, stop) subintervals), ``training`` the window the model was fitted on, and
    ``moved`` the operators the change moved, as (operator, old node, new node), and
    ``rescaled`` the nodes whose capacity it changed, as (node, old, new)."""

    interval: int
    version: int
    predicted_wc_before: float
    predicted_wc_after: float
    measured_wc_before: float
    measured_wc_after: float
    before: tuple[int, int]
    after: tuple[int, int]
    training: tuple[int, int]
    moved: tuple[tuple[str, str, str], ...]
    rescaled: tuple[tuple[str, float, float], ...] = ()

    @property
    def predicted_change(self) -> float:
        """Relative change of the predicted worst case (-0.35: 35% lower), NaN if unknown."""
        return _relative(self.predicted_wc_before, self.predicted_wc_after)

    @property
    def measured_change(self) -> float:
        """Relative change of the measured worst case, NaN if unknown."""
        return _relative(self.measured_wc_before, self.measured_wc_after)


def _relative(before: float, after: float) -> float:
    if not (math.isfinite(before) and math.isfinite(after)) or before <= 0:
        return math.nan
    return after / before - 1.0


class _Version(Protocol):
    @property
    def version(self) -> int: ...

    @property
    def placement(self) -> Mapping[str, str]: ...

    @property
    def capacities(self) -> Mapping[str, float]: ...

    @property
    def valid_from(self) -> float: ...

    @property
    def stopped_at(self) -> float | None: ...


class _Latency(Protocol):
    @property
    def lat_max(self) -> np.ndarray: ...


class MeasuredRun(Protocol):
    """What verification reads of a stored run (``dashboard.core.data.RunData`` has it)."""

    @property
    def topology(self) -> Topology: ...

    @property
    def versions(self) -> Sequence[_Version]: ...

    @property
    def version_starts(self) -> Sequence[int]: ...

    @property
    def operator_stats(self) -> pd.DataFrame: ...

    @property
    def arrivals(self) -> Arrivals: ...

    @property
    def intervals(self) -> int: ...

    @property
    def source_profile(self) -> np.ndarray | None: ...

    def measured_system(self) -> _Latency: ...


Finish = Callable[[RunAnalysis, tuple[int, int]], RunAnalysis]
"""Turns a prediction into the figure compared, given the training window (e.g. adds a
real engine's pipeline delays calibrated on that window: :mod:`estimator.delays`)."""


def verify_changes(
    run: MeasuredRun,
    *,
    estimator: str = "mace",
    training: int | None = None,
    finish: Finish | None = None,
) -> list[ChangeCheck]:
    """One :class:`ChangeCheck` per placement change of ``run`` (empty with one placement).

    ``training`` limits the fitting window to the last ``training`` subintervals of the
    previous placement's period (default: the whole period). The run's arrivals per
    sub-bucket (``source_profile``) are read only for an estimator that uses them or a
    node profile."""
    uses = estimator_by_name(estimator).uses
    profile = run.source_profile if NODE_FINE in uses or SOURCE_FINE in uses else None
    return check_changes(
        run.topology,
        run.operator_stats,
        run.arrivals.for_topology(run.topology),
        [v.placement for v in run.versions],
        run.version_starts,
        run.measured_system().lat_max,
        versions=[v.version for v in run.versions],
        estimator=estimator,
        training=training,
        profile=profile,
        capacities=[v.capacities for v in run.versions],
        finish=finish,
        stops=measured_stops(
            run.versions, run.topology.origin, run.topology.subinterval, run.intervals
        ),
        restarts=restart_starts(run.versions, run.topology.origin, run.topology.subinterval),
    )


def check_changes(
    topology: Topology,
    operator_stats: pd.DataFrame,
    counts: np.ndarray,
    placements: Sequence[Mapping[str, str]],
    starts: Sequence[int],
    measured: np.ndarray,
    *,
    versions: Sequence[int] | None = None,
    estimator: str = "mace",
    training: int | None = None,
    profile: np.ndarray | None = None,
    capacities: Sequence[Mapping[str, float]] | None = None,
    finish: Finish | None = None,
    stops: Stops | None = None,
    restarts: Sequence[int | None] | None = None,
) -> list[ChangeCheck]:
    """:func:`verify_changes` on arrays: ``operator_stats`` rows (columns of
    ``operator_stats``), ``counts`` the arrivals (``topology.source_ids`` rows),
    ``placements`` and ``starts`` the placement versions and their first subintervals,
    ``measured`` the measured max latency per subinterval (NaN: no outputs).
    ``profile`` is the arrivals per sub-bucket (sources x D x k, topology order: the
    stored source_profile), read by an estimator that uses a node profile; None: that
    estimator spreads each subinterval evenly (per-origin) or is Mace (burst-aware).
    ``capacities`` are each version's node capacities where they differ from the
    topology's (:func:`estimator.runs.version_topologies`); ``finish`` turns each
    prediction into the figure compared (:data:`Finish`); ``stops`` are the restarts
    measured before the changes (:func:`estimator.runs.restart_spans`), where the
    prediction serves nothing: the backlog a restart leaves is carried into the period
    after the change. ``restarts`` are the subintervals those restarts began in (None:
    a version without one): a period ends where the next restart begins, so the period
    before a change is the old configuration running and the one after it the new
    configuration with the backlog its restart left, not the next change's restart."""
    if training is not None and training < 1:
        raise ModelError(f"training must be at least 1 subinterval, got {training}")
    intervals = int(np.asarray(measured).shape[0])
    periods = _running(segments(starts, intervals), restarts)
    numbers = list(versions) if versions is not None else list(range(len(placements)))
    shapes = version_topologies(topology, placements, capacities)
    complete = [v.capacity_by_node for v in shapes]
    checks: list[ChangeCheck] = []
    for k in range(1, len(placements)):
        before, after = periods[k - 1], periods[k]
        lo, hi = before
        window = (lo if training is None else max(lo, hi - training), hi)
        analysis = _predicted(
            shapes[k - 1],
            operator_stats,
            counts,
            (placements, starts, complete),
            window,
            estimator,
            profile,
            finish,
            stops,
        )
        predicted = analysis.estimate
        margin = _in_flight(analysis, topology.subinterval)
        before = _before_stop(before, restarts, k - 1, margin)
        after = _before_stop(after, restarts, k, margin)
        checks.append(
            ChangeCheck(
                interval=int(starts[k]),
                version=int(numbers[k]),
                predicted_wc_before=_worst(predicted, before),
                predicted_wc_after=_worst(predicted, after),
                measured_wc_before=_worst(measured, before),
                measured_wc_after=_worst(measured, after),
                before=before,
                after=after,
                training=window,
                moved=tuple(
                    (op, placements[k - 1][op], placements[k][op])
                    for op in topology.operator_ids
                    if placements[k - 1][op] != placements[k][op]
                ),
                rescaled=_rescaled(shapes[k - 1], shapes[k]),
            )
        )
    return checks


def _running(
    periods: list[tuple[int, int]], restarts: Sequence[int | None] | None
) -> list[tuple[int, int]]:
    """Each version's period up to the restart of the next (the whole period without)."""
    if restarts is None:
        return periods
    out = []
    for k, (lo, hi) in enumerate(periods):
        following = restarts[k + 1] if k + 1 < len(restarts) else None
        out.append((lo, hi if following is None else min(hi, max(lo, following))))
    return out


def _in_flight(analysis: RunAnalysis, subinterval: float) -> int:
    """Subintervals before a stop whose records are still in the pipeline when it stops:
    the calibrated pipeline delay's typical figure, in whole subintervals (0 without
    one: a simulated run's latency is its backlog)."""
    typical = [d.typical for d in analysis.delays.values() if d.calibrated]
    return math.ceil(max(typical) / subinterval) if typical else 0


def _before_stop(
    period: tuple[int, int], restarts: Sequence[int | None] | None, version: int, margin: int
) -> tuple[int, int]:
    """``period`` (of ``version``) without its last ``margin`` subintervals when the next
    version began with a restart: their records were still in the pipeline when the job
    stopped and waited for the restart, a cost of the change, not of the configuration
    running (kept: at least one subinterval)."""
    lo, hi = period
    following = restarts[version + 1] if restarts and version + 1 < len(restarts) else None
    if following is None or margin <= 0 or hi - lo <= 1:
        return period
    return lo, max(lo + 1, hi - margin)


def _rescaled(old: Topology, new: Topology) -> tuple[tuple[str, float, float], ...]:
    before = old.capacity_by_node
    return tuple((n.id, before[n.id], n.capacity) for n in new.nodes if before[n.id] != n.capacity)


def _predicted(
    topology: Topology,
    operator_stats: pd.DataFrame,
    counts: np.ndarray,
    versions: tuple[Sequence[Mapping[str, str]], Sequence[int], Sequence[Mapping[str, float]]],
    window: tuple[int, int],
    estimator: str,
    profile: np.ndarray | None,
    finish: Finish | None,
    stops: Stops | None = None,
) -> RunAnalysis:
    """The latency predicted by the model fitted on ``window`` under the run's
    ``versions`` (placements, their first subintervals, their capacities), with the node
    profile that model predicts from ``profile`` when the estimator uses one; NaN
    everywhere when the window is empty (no model could be fitted before the change).
    ``topology`` is the version the window lies in: a thread's cost is read at the
    capacity it had there (:func:`estimator.fitting.thread_cost`)."""
    placements, starts, capacities = versions
    intervals = counts.shape[1]
    if window[0] >= window[1]:
        return _nothing(topology, intervals)
    fitted, model = fitted_model(topology, operator_stats, counts, window)
    loads = node_loads(topology, model.operator_dlts(), placements, starts)
    uses = estimator_by_name(estimator).uses
    ports = port_load(fitted, model) if PORT_WORK in uses else None
    fine = sources = None
    if SOURCE_FINE in uses:
        sources = profile
    if NODE_FINE in uses and profile is not None and sources is None:
        fine = predicted_node_profile(fitted, model, profile, placements, starts)
    detail = (
        None
        if ports is None and fine is None and sources is None
        else Detail(node_fine=fine, port_work=ports, source_fine=sources)
    )
    analysis = analyse(
        topology, loads, placements, starts, estimator, detail, capacities, stops,
        full_bundle_work(fitted),
    )  # fmt: skip
    return analysis if finish is None else finish(analysis, window)


def _nothing(topology: Topology, intervals: int) -> RunAnalysis:
    """A prediction of nothing (NaN everywhere): no model could be fitted."""
    empty = np.full(intervals, np.nan)
    return RunAnalysis(
        node_ids=topology.node_ids,
        ce_seconds=np.full((len(topology.nodes), intervals), np.nan),
        estimate=empty,
        bottleneck=np.zeros(intervals, dtype=np.int64),
        lower=empty,
        upper=empty,
        epsilon=0.0,
        per_query={},
    )


def _worst(series: np.ndarray, period: tuple[int, int]) -> float:
    values = np.asarray(series, dtype=float)[period[0] : period[1]]
    values = values[np.isfinite(values)]
    return float(values.max()) if values.size else math.nan
