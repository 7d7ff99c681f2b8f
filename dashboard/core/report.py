"""User latency report per query (shared by the Reports page and ``mace report``).

For each query and for the whole system, across the run's intervals:

- *estimated*: the estimator's series from the measured DLTS
  (``operator_stats.cpu_seconds``): Mace by default, or another registered one;
- *predicted*: the same estimator from the arrivals alone, with costs and
  selectivities fitted on a training window (default the first 10% of the run),
  and for the estimators that read a node profile the one the fitted model gives
  from the stored arrivals per sub-bucket (``source_profile``);
- *measured*: the measured maximum latency per interval (``lat_max``), over
  the intervals that had outputs.

The three of a row cover the same intervals: those in which it had outputs (all of
them if it has no measured latency at all). Where a query has no output, there is
nothing to compare with, and the per-origin estimate, the latency of the query's
outputs, is 0.

``changes`` verifies each placement change (:mod:`estimator.verification`): the
worst case predicted by the model fitted before the change, for the periods before
and after it (from the stored arrivals per sub-bucket too, as *predicted*, for the
estimators that read a node profile), against the measured worst case of the same
periods.

Each gets the worst case (max), p99 and mean across time. ``objective`` is the
stored latency objective and ``compliance`` the share of measured intervals
whose max latency meets it. The system objective is the strictest query
objective and its compliance the share of intervals where every query with an
objective meets it; ``bound_coverage`` is the share of measured intervals whose
max latency lies inside the estimator's band [Mace, upper] (``Estimator.band``:
Mace + w + eps for Mace, per-origin + (h + 2)w/k + eps for per-origin, docs/accuracy.md);
for the system the lower edge is the largest Mace among the queries with an output in
that subinterval (:func:`system_lower`).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from dashboard.core.data import RunData
from estimator.bundles import full_bundle_work
from estimator.delays import calibrate
from estimator.drift import refit
from estimator.fitting import (
    UNMEASURED,
    counts_fixed_time,
    fit_operator_stats,
    training_window,
)
from estimator.model import Topology
from estimator.pathaware import (
    NODE_FINE,
    PORT_WORK,
    SOURCE_FINE,
    Detail,
    estimator_by_name,
)
from estimator.python_worker import python_worker_of, worker_taskmanager
from estimator.runs import (
    DEFAULT_TRAINING_SHARE,
    RunAnalysis,
    analyse,
    fitted_node_profile,
    fitted_port_dlts,
    node_loads,
    predicted_operator_dlts,
    with_delays,
)
from estimator.verification import ChangeCheck, verify_changes
from storage.errors import StorageError

SYSTEM = "system"
FIGURES = ("wc", "p99", "mean")
KINDS = ("estimated", "predicted", "measured")
KEYS = (*(f"{k}_{f}" for f in FIGURES for k in KINDS), "objective", "compliance")
TOLERANCE = 1e-9


@dataclass(frozen=True)
class RunAnalyses:
    estimated: RunAnalysis
    predicted: RunAnalysis


def analyses(
    run: RunData,
    share: float = DEFAULT_TRAINING_SHARE,
    estimator: str = "mace",
    training: tuple[int, int] | None = None,
) -> RunAnalyses:
    """Estimated and predicted latency of a run with the registered ``estimator``,
    placement versions respected (the prediction: :func:`predicted_analysis`)."""
    return RunAnalyses(
        estimated_analysis(run, estimator), predicted_analysis(run, share, estimator, training)
    )


def estimated_analysis(run: RunData, estimator: str = "mace") -> RunAnalysis:
    """The latency estimated by ``estimator`` from the run's measured node DLTS (and the
    finer work it uses: the stored sub-bucket profile, the work of each operator port),
    with the run's restarts (:attr:`RunData.stops`): a real engine's measured load is the
    work offered, which its sources go on reading while the job's other vertices are
    stopped, so the stop is not in it (docs/flink.md, "A rescale, verified")."""

    def compute() -> RunAnalysis:
        placements = run.placements
        chosen = estimator_by_name(estimator)
        detail = run.detail(chosen.uses) if chosen.detailed is not None else None
        return engine_delays(
            run,
            analyse(
                run.topology,
                run.node_dlts,
                placements,
                run.version_starts,
                estimator,
                detail,
                run.capacities,
                run.stops,
                full_bundle_work(run.fitted(None)),
            ),
            None,
        )

    return run.derived(("estimated", estimator), compute)


def predicted_analysis(
    run: RunData,
    share: float = DEFAULT_TRAINING_SHARE,
    estimator: str = "mace",
    training: tuple[int, int] | None = None,
) -> RunAnalysis:
    """The latency predicted by ``estimator`` from the arrivals with the model fitted on
    the first ``share`` of the run, or on the window ``training`` ([start, stop)) when
    given (a refit, e.g. on :func:`estimator.drift.recent_window`).

    An estimator that reads a node profile gets the one the model predicts from the
    stored arrivals per sub-bucket (:func:`estimator.runs.fitted_node_profile`); a run
    without them (measured by counters, ingested before migration 9) has none, and the
    estimator spreads each subinterval evenly. The run's restarts serve nothing, as in
    the estimate (:func:`estimated_analysis`)."""
    placements = run.placements
    counts = run.counts

    def fitted_loads() -> np.ndarray:
        if training is None:
            op_dlts = predicted_operator_dlts(
                run.topology, run.operator_stats, counts, run.intervals, share
            )
        else:
            op_dlts = refit(run.topology, run.operator_stats, counts, training)
        return node_loads(run.topology, op_dlts, placements, run.version_starts)

    def window() -> tuple[int, int] | None:
        if training is None and run.intervals:
            return training_window(run.intervals, share)
        return training

    def fitted_ports() -> np.ndarray:
        return fitted_port_dlts(run.topology, run.operator_stats, counts, window())

    def compute() -> RunAnalysis:
        loads = run.derived(("predicted loads", share, training), fitted_loads)
        uses = estimator_by_name(estimator).uses
        ports = fine = None
        if PORT_WORK in uses:
            ports = run.derived(("predicted port work", share, training), fitted_ports)
        sources = run.source_profile if SOURCE_FINE in uses else None
        if NODE_FINE in uses and sources is None:
            fine = predicted_profile(run, window())
        detail = _detail(fine, ports, sources)
        computed = analyse(
            run.topology,
            loads,
            placements,
            run.version_starts,
            estimator,
            detail,
            run.capacities,
            run.stops,
            full_bundle_work(run.fitted(window())),
        )
        return engine_delays(run, computed, window())

    return run.derived(("predicted", share, estimator, training), compute)


def engine_delays(
    run: RunData, analysis: RunAnalysis, window: tuple[int, int] | None
) -> RunAnalysis:
    """A real engine's run (measured by counters) with each query's fixed pipeline
    delay, calibrated on the calm subintervals of ``window`` (:mod:`estimator.delays`);
    a simulated run as it is."""
    if not run.info.counters:
        return analysis
    measured = {q: run.latency[q].lat_max for q in analysis.per_query if q in run.latency}
    delays = calibrate(analysis.per_query, measured, run.subinterval, window)
    return with_delays(analysis, delays)


def predicted_profile(run: RunData, window: tuple[int, int] | None) -> np.ndarray | None:
    """The node profile (nodes x intervals x sub-buckets) that the model fitted on
    ``window`` predicts from the run's stored arrivals per sub-bucket
    (:func:`estimator.runs.fitted_node_profile`), once per loaded run and window; None
    for a run without them (measured by counters, ingested before migration 9)."""
    arrivals = run.source_profile
    if arrivals is None:
        return None
    return run.derived(
        ("predicted profile", window),
        lambda: fitted_node_profile(
            run.topology,
            run.operator_stats,
            run.counts,
            arrivals,
            window,
            run.placements,
            run.version_starts,
        ),
    )


def change_checks(run: RunData, estimator: str = "mace") -> tuple[ChangeCheck, ...]:
    """Every placement change of the run verified with ``estimator``
    (:func:`estimator.verification.verify_changes`), once per loaded run. A real
    engine's prediction gets the pipeline delays calibrated on the training window
    before the change, as the predicted figure does (:func:`engine_delays`)."""

    def finish(analysis: RunAnalysis, window: tuple[int, int]) -> RunAnalysis:
        return engine_delays(run, analysis, window)

    return run.derived(
        ("changes", estimator),
        lambda: tuple(verify_changes(run, estimator=estimator, finish=finish)),
    )


def _summary(series: np.ndarray) -> dict[str, float | None]:
    values = np.asarray(series, dtype=float)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return {"wc": None, "p99": None, "mean": None}
    return {
        "wc": float(values.max()),
        "p99": float(np.quantile(values, 0.99)),
        "mean": float(values.mean()),
    }


def _compliance(measured: np.ndarray, objective: float | None) -> float | None:
    finite = np.isfinite(measured)
    if objective is None or not finite.any():
        return None
    return float(np.mean(measured[finite] <= objective + TOLERANCE))


def system_lower(run: RunData, analysis: RunAnalysis) -> np.ndarray:
    """The system's lower bound per subinterval, to compare with its measured max (the
    worst query with an output there): the largest query Mace among the queries that had
    an output in that subinterval. A query without output measured nothing there, so its
    bound says nothing of the measured max (0 where no query had an output)."""
    lower = np.zeros(run.intervals)
    for query, latency in run.latency.items():
        if query in analysis.per_query_lower:
            had = latency.outputs > 0
            lower[had] = np.maximum(lower[had], analysis.per_query_lower[query][had])
    return lower


def bound_coverage(measured: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> float | None:
    """Share of measured intervals with lower bound <= measured max <= upper bound."""
    finite = np.isfinite(measured)
    if not finite.any():
        return None
    inside = (measured >= lower - TOLERANCE) & (measured <= upper + TOLERANCE)
    return float(np.mean(inside[finite]))


def _entry(
    estimated: np.ndarray,
    predicted: np.ndarray,
    measured: np.ndarray,
    objective: float | None,
    compliance: float | None,
) -> dict[str, Any]:
    # the three kinds over the same subintervals, those with outputs: where a query has
    # none, nothing is measured, and the per-origin estimate (the latency of outputs) is 0
    had = np.isfinite(measured)
    if not had.any():  # nothing measured (a counters-only run): the estimates over all
        had[:] = True
    parts = {
        "estimated": _summary(estimated[had]),
        "predicted": _summary(predicted[had]),
        "measured": _summary(measured),
    }
    out: dict[str, Any] = {f"{k}_{f}": parts[k][f] for f in FIGURES for k in KINDS}
    out["objective"] = objective
    out["compliance"] = compliance
    return out


def choose_run(ids: list[str], wanted: str | None) -> str:
    """``wanted`` if the store holds it, else the last run when none is asked for."""
    if wanted is not None:
        if wanted not in ids:
            known = ", ".join(ids) or "none"
            raise StorageError(f"unknown run '{wanted}' (runs in the database: {known})")
        return wanted
    if not ids:
        raise StorageError("the database holds no runs yet; ingest a landing folder first")
    return ids[-1]


def build_report(
    run: RunData,
    objectives: Mapping[str, float],
    share: float = DEFAULT_TRAINING_SHARE,
    computed: RunAnalyses | None = None,
    estimator: str = "mace",
) -> dict[str, Any]:
    """The report object printed by ``mace report --json`` (``computed`` overrides
    ``share`` and ``estimator``)."""
    result = computed or analyses(run, share, estimator)
    queries: dict[str, Any] = {}
    meets = np.ones(run.intervals, dtype=bool)
    measured_any = np.zeros(run.intervals, dtype=bool)
    for query in run.topology.queries:
        measured = run.latency[query].lat_max
        objective = objectives.get(query)
        queries[query] = _entry(
            result.estimated.per_query[query],
            result.predicted.per_query[query],
            measured,
            objective,
            _compliance(measured, objective),
        )
        delay = result.estimated.delays.get(query)
        if delay is not None:
            queries[query]["pipeline_delay"] = {
                "low": delay.low,
                "typical": delay.typical,
                "high": delay.high,
                "calm_subintervals": delay.calm,
            }
        finite = np.isfinite(measured)
        measured_any |= finite
        if objective is not None:
            meets &= ~finite | (measured <= objective + TOLERANCE)
    known = [objectives[q] for q in run.topology.queries if q in objectives]
    system_objective = min(known) if known else None
    system_compliance = (
        float(np.mean(meets[measured_any])) if known and measured_any.any() else None
    )
    system_measured = run.measured_system().lat_max
    system = _entry(
        result.estimated.estimate,
        result.predicted.estimate,
        system_measured,
        system_objective,
        system_compliance,
    )
    system["bound_coverage"] = bound_coverage(
        system_measured, system_lower(run, result.estimated), result.estimated.upper
    )
    checks = change_checks(run, result.predicted.estimator)
    out = {
        "run": run.info.run_id,
        "queries": queries,
        "system": system,
        "changes": [change_json(c) for c in checks],
    }
    threads = thread_readings(run, share)
    if threads:
        out["threads"] = threads
    return out


def thread_readings(
    run: RunData, share: float = DEFAULT_TRAINING_SHARE
) -> dict[str, dict[str, Any]]:
    """Per operator on an engine's thread (a run with TaskManager hosts): the cost of a
    record fitted over the whole run (the estimate's) and over the first ``share`` (the
    prediction's), how each was read, at how many records a second, whether the first
    part's cost counts the worker's fixed time per record
    (:func:`estimator.fitting.counts_fixed_time`), its busy time per record in the calmest
    and busiest third of the run, whether that busy time is its work, and the Python
    worker node it shares (:mod:`estimator.python_worker`) with its cores, if any."""
    if not any(n.host is not None for n in run.topology.nodes) or run.operator_stats.empty:
        return {}
    stats, counts = run.operator_stats, run.counts
    whole = fit_operator_stats(run.topology, stats, None, counts)
    window = training_window(run.intervals, share)
    trained = {
        (p.operator, p.port): p
        for p in fit_operator_stats(run.topology, stats, window, counts).ports
    }
    hosts = {n.id: n.host for n in run.topology.nodes}
    out: dict[str, dict[str, Any]] = {}
    for port in whole.ports:
        if port.reading in ("cpu per record", UNMEASURED):
            continue  # not on a thread (its cost is its CPU per record), or nothing read
        low, high = port.busy_per_record or (None, None)
        first = trained.get((port.operator, port.port))
        worker = python_worker_of(hosts, run.topology.placement[port.operator])
        rate = _records_a_second(run, port.operator, port.port, (0, run.intervals))
        first_rate = _records_a_second(run, port.operator, port.port, window)
        out[port.operator if port.port == 0 else f"{port.operator}:{port.port}"] = {
            "cost": port.cost,
            "reading": port.reading,
            "records_a_second": rate,
            "predicted_cost": None if first is None else first.cost,
            "predicted_reading": None if first is None else first.reading,
            "predicted_records_a_second": first_rate,
            "predicted_counts_fixed_time": first is not None
            and worker is not None
            and counts_fixed_time(port.cost, first.cost, rate, first_rate),
            "busy_per_record_calm": low,
            "busy_per_record_busy": high,
            "busy_time_is_work": not port.waits,
            "python_worker": worker,
            "python_worker_cores": None
            if worker is None
            else run.topology.capacity_by_node[worker],
            "python_workers": None if worker is None else _workers_mode(run.topology, worker),
        }
    return out


def _records_a_second(run: RunData, operator: str, port: int, window: tuple[int, int]) -> float:
    """The records a second an operator's port took over ``window`` ([start, stop)
    subintervals) of ``run``."""
    stats = run.operator_stats
    start, stop = window
    rows = stats[
        (stats["operator"] == operator)
        & (stats["port"] == port)
        & (stats["interval"] >= start)
        & (stats["interval"] < stop)
    ]
    return float(rows["events_in"].sum()) / (max(1, stop - start) * run.subinterval)


def _workers_mode(topology: Topology, worker: str) -> str | None:
    """How the TaskManager of the Python worker node ``worker`` runs Python operators
    (``per-slot``, ``shared``; None: not recorded)."""
    taskmanager = worker_taskmanager(worker)
    node = next((n for n in topology.nodes if n.id == taskmanager), None)
    return None if node is None else node.python_workers


def change_json(check: ChangeCheck) -> dict[str, Any]:
    """One entry of the report's ``changes``: the five figures of a change check (None
    where a period has no data), the version, the relative changes and the operators moved."""
    return {
        "interval": check.interval,
        "version": check.version,
        **{
            key: _finite_or_none(getattr(check, key))
            for key in (
                "predicted_wc_before",
                "predicted_wc_after",
                "measured_wc_before",
                "measured_wc_after",
                "predicted_change",
                "measured_change",
            )
        },
        "moved": [{"operator": op, "from": old, "to": new} for op, old, new in check.moved],
        "rescaled": [{"node": node, "from": old, "to": new} for node, old, new in check.rescaled],
    }


def change_text(check: ChangeCheck, topology: Topology, separator: str = ": ") -> str:
    """What a change did, for a table cell or a note: the operators it moved
    (``b: n2 → n1``) and the nodes it rescaled, a node inside a host (a Flink vertex's
    threads) by its subtasks (``op-threads: 1 → 2 subtasks``), a machine by its
    capacity (``n1: capacity 1 → 2``)."""
    hosted = {n.id for n in topology.nodes if n.host is not None}
    parts = [f"{op}{separator}{old} \u2192 {new}" for op, old, new in check.moved]
    for node, old, new in check.rescaled:
        if node in hosted:
            parts.append(f"{node}{separator}{old:g} \u2192 {new:g} subtasks")
        else:
            parts.append(f"{node}{separator}capacity {old:g} \u2192 {new:g}")
    return ", ".join(parts)


def _finite_or_none(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def report_csv(report: Mapping[str, Any]) -> str:
    """The report as a CSV table: one row per query and one for the system."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["run", "query", *KEYS, "bound_coverage"])
    rows = [*report["queries"].items(), (SYSTEM, report["system"])]
    for name, entry in rows:
        values = [*(entry[k] for k in KEYS), entry.get("bound_coverage")]
        writer.writerow([report["run"], name, *("" if v is None else _fmt(v) for v in values)])
    return buffer.getvalue()


def _fmt(value: float) -> str:
    return repr(float(value)) if math.isfinite(value) else ""


REPORT_PATH = "/api/report"


def refit_analyses(run: RunData, estimator: str, training: tuple[int, int]) -> RunAnalyses:
    """Estimated and predicted latency with the model refit on ``training`` [start, stop).

    The predicted load is the estimated (measured) operator DLTS before ``start`` and the
    refit model's from ``start`` on, so the prediction starts from the backlog the run
    really had there, as a model refit at ``start`` would have predicted going on.
    (Adapter over :func:`estimator.drift.refit`: that module gives the refit model's
    DLTS for the whole run.)"""
    start = training[0]
    placements = run.placements
    counts = run.counts
    dlts = run.operator_dlts.copy()
    dlts[:, start:] = refit(run.topology, run.operator_stats, counts, training)[:, start:]
    loads = node_loads(run.topology, dlts, placements, run.version_starts)
    uses = estimator_by_name(estimator).uses
    port_work = node_fine = None
    if PORT_WORK in uses:
        port_work = run.port_work().copy()
        port_work[:, start:] = fitted_port_dlts(run.topology, run.operator_stats, counts, training)[
            :, start:
        ]
    sources = run.source_profile if SOURCE_FINE in uses else None
    if NODE_FINE in uses and sources is None:
        node_fine = _spliced_profile(
            run.node_profile, predicted_profile(run, training), loads, start
        )
    return RunAnalyses(
        estimated_analysis(run, estimator),
        analyse(
            run.topology,
            loads,
            placements,
            run.version_starts,
            estimator,
            _detail(node_fine, port_work, sources),
            run.capacities,
            run.stops,
        ),
    )


def _detail(
    node_fine: np.ndarray | None, port_work: np.ndarray | None, source_fine: np.ndarray | None
) -> Detail | None:
    """The finer work of a prediction, None when there is none (the arrivals per
    sub-bucket, ``source_fine``, are the run's measured ones: a model predicts from them)."""
    if node_fine is None and port_work is None and source_fine is None:
        return None
    return Detail(node_fine=node_fine, port_work=port_work, source_fine=source_fine)


def _spliced_profile(
    measured: np.ndarray | None, predicted: np.ndarray | None, loads: np.ndarray, start: int
) -> np.ndarray | None:
    """The node profile of a refit: the measured one before ``start``, the refit model's
    from ``start`` on; a part without a profile spreads its ``loads`` evenly (None when
    neither part has one: the estimator's own even spread)."""
    known = measured if measured is not None else predicted
    if known is None:
        return None
    k = known.shape[2]
    out = np.repeat(loads[:, :, None] / k, k, axis=2)
    if measured is not None:
        out[:, :start] = measured[:, :start]
    if predicted is not None:
        out[:, start:] = predicted[:, start:]
    return out
