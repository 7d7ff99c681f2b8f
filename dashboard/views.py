"""Logic of the Overview, Nodes and Reports pages as plain functions."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import plotly.graph_objects as go

from dashboard import figures, operator_graph, timeaxis
from dashboard.data import RunData
from dashboard.errors import ViewError
from dashboard.monitoring import run_drift
from dashboard.report import (
    KEYS,
    TOLERANCE,
    RunAnalyses,
    analyses,
    bound_coverage,
    build_report,
    change_checks,
    estimated_analysis,
    predicted_profile,
)
from dashboard.timeaxis import PRESETS, Clock, TimeRange
from estimator.alerts import MEASURED_BREACH, breaches
from estimator.blame import Blame, blame
from estimator.drift import (
    DEFAULT_ERROR_WINDOW,
    DEFAULT_K,
    DriftEvent,
    refit,
    rolling_error,
)
from estimator.errors import ModelError
from estimator.fitting import training_window
from estimator.model import version_at
from estimator.pathaware import (
    ESTIMATOR_LABELS,
    NODE_FINE,
    PORT_WORK,
    Detail,
    estimator_by_name,
)
from estimator.pathblame import PathBlame, path_blame
from estimator.placement.planning import HostsTimeline, hosts_over_time
from estimator.runs import (
    DEFAULT_TRAINING_SHARE,
    RunAnalysis,
    analyse,
    fitted_port_dlts,
    node_loads,
)
from estimator.verification import ChangeCheck
from estimator.whatif import MAX_CAPACITY, RunInputs, parse_positive
from storage.alerts import StoredAlert


def window(run: RunData, range_key: str | None) -> slice:
    """The intervals of the chosen preset time range (the latest ones)."""
    return timeaxis.window(time_range(range_key), run.intervals, run.subinterval)[0]


@dataclass(frozen=True)
class OverviewView:
    figure: dict[str, Any]
    predicted_wc: float
    estimated_wc: float
    measured_wc: float | None
    error_percent: float | None
    coverage: float | None
    bottleneck: str
    label: str = "Mace"
    changes: tuple[ChangeCheck, ...] = ()
    drift: tuple[DriftEvent, ...] = ()
    training: tuple[int, int] = (0, 0)
    error_figure: dict[str, Any] | None = None
    clock: Clock = field(default_factory=Clock)
    violations: tuple[Violation, ...] = ()
    range_note: str = ""

    def kpis(self) -> tuple[str, str, str]:
        """The worst-case, bound coverage and bottleneck cards, in the names the chart's
        lines have (estimated, predicted, measured)."""
        measured = "-" if self.measured_wc is None else f"{self.measured_wc:.3f} s"
        error = (
            ""
            if self.error_percent is None
            else f" (estimated {self.error_percent:+.1f}% vs measured)".replace("-", "−")
        )
        worst = (
            f"estimated {self.label} {self.estimated_wc:.3f} s · predicted {self.label} "
            f"{self.predicted_wc:.3f} s · measured {measured}{error}"
        )
        coverage = "-" if self.coverage is None else f"{self.coverage:.1%}"
        return worst, coverage, self.bottleneck


@dataclass(frozen=True)
class Violation:
    """A stretch where a query's measured max latency was above its objective, in
    seconds since the run's start, with its peak (seconds of latency)."""

    query: str
    start: float
    end: float
    peak: float
    objective: float
    subintervals: int

    def text(self, clock: Clock) -> str:
        """E.g. "12:03:04–12:03:19 UTC, 15 s, peak 3.2 s"."""
        return (
            f"{clock.span(self.start, self.end)}, {self.end - self.start:g} s, "
            f"peak {self.peak:.3g} s"
        )


def violations(
    run: RunData, objectives: Mapping[str, float], query: str | None = None
) -> list[Violation]:
    """Each query's (or ``query``'s) measured violations of its objective, in time
    order: stretches of subintervals above it (:func:`estimator.alerts.breaches`, gap 0:
    exactly the subintervals above)."""
    w = run.subinterval
    found = [
        Violation(
            q,
            b.start * w,
            (b.end + 1) * w,
            b.value,
            objectives[q],
            b.end - b.start + 1,
        )
        for q in run.topology.queries
        if q in objectives and q in run.latency and query in (None, q)
        for b in breaches(
            run.latency[q].lat_max,
            objectives[q] + TOLERANCE,
            query=q,
            kind=MEASURED_BREACH,
            gap=0,
        )
    ]
    return sorted(found, key=lambda v: (v.start, v.query))


def violation_rows(view: OverviewView) -> list[dict[str, Any]]:
    """The Overview's violations list, newest first, times on the view's clock."""
    clock = view.clock
    return [
        {
            "query": v.query,
            "range": clock.span(v.start, v.end),
            "duration": v.end - v.start,
            "peak": round(v.peak, 4),
            "objective": v.objective,
        }
        for v in reversed(view.violations)
    ]


MAX_LISTED = 20
"""Violations a sentence lists (the newest); the count says how many there are."""


def violations_summary(
    query: str, objective: float | None, found: Sequence[Violation], clock: Clock
) -> str:
    """One query's violations as a sentence of time ranges (the Reports page)."""
    if objective is None:
        return f"{query}: no objective set"
    if not found:
        return f"{query}: never above its objective of {objective:g} s"
    count = sum(v.subintervals for v in found)
    listed = "; ".join(v.text(clock) for v in found[-MAX_LISTED:])
    more = f" (the newest {MAX_LISTED})" if len(found) > MAX_LISTED else ""
    return (
        f"{query}: above its objective of {objective:g} s in {count} subinterval"
        f"{'s' * (count != 1)}, {len(found)} range{'s' * (len(found) != 1)}{more}: {listed}"
    )


def violations_note(objectives: Mapping[str, float], shown: int) -> str:
    """The line above the Overview's violations list."""
    if not objectives:
        return "No objective set for this run: set one per query on the Reports page."
    if not shown:
        return "No violation in the shown range."
    return f"{shown} violation{'s' * (shown != 1)} in the shown range."


def time_range(value: TimeRange | str | None) -> TimeRange:
    """A range from a preset's key (ViewError if unknown) or a range itself."""
    if isinstance(value, TimeRange):
        return value
    if value not in PRESETS:
        raise ViewError(f"time range: unknown choice {value!r}")
    return TimeRange(value)


def overview(
    run: RunData,
    shown: TimeRange | str | None,
    estimator: str = "mace",
    explain: int | None = None,
    *,
    k: int = DEFAULT_K,
    training: tuple[int, int] | None = None,
    clock: str | None = None,
    objectives: Mapping[str, float] | None = None,
    zone: str | None = None,
) -> OverviewView:
    """The Overview's panels over the ``shown`` range (a preset key or a :class:`TimeRange`) on
    the ``clock`` chosen ("since", "wall" or "local": the wall clock in UTC or in the
    browser's ``zone`` if the run has one), with its KPIs, for ``estimator``: measured,
    estimated and predicted latency, CE/C per node, source event rates, the bottleneck.
    The busy period behind subinterval ``explain`` (default: the worst one) is shaded,
    each placement change marked with its verification and each violation of
    ``objectives`` shaded. The model is fitted on ``training`` ([start, stop), a refit)
    or the run's first share; drift events (:func:`dashboard.monitoring.run_drift`) are
    stretches of ``k`` settled subintervals outside its band."""
    if run.intervals == 0:
        raise ViewError(f"run '{run.info.run_id}' has no statistics yet")
    k = drift_k(k)
    chosen = time_range(shown)
    axis = Clock.of(run.info.origin, clock, zone)
    w = run.subinterval
    part, x_range = timeaxis.window(chosen, run.intervals, w)
    range_note = ""
    if chosen.custom and x_range[0] >= run.intervals * w:
        range_note = (
            f"The range {axis.span(*x_range)} starts after the newest data "
            f"({axis.point(run.intervals * w)}): showing the whole run."
        )
        chosen = TimeRange("all")
        part, x_range = timeaxis.window(chosen, run.intervals, w)
    result = (
        analyses(run, estimator=estimator)
        if training is None
        else refit_analyses(run, estimator, training)
    )
    label = ESTIMATOR_LABELS[estimator]
    est = result.estimated
    measured = run.measured_system()
    times = run.times[part]
    checks = change_checks(run, estimator)
    shown_checks = [c for c in checks if part.start <= c.interval < part.stop]
    fitted_on = training or training_window(run.intervals, DEFAULT_TRAINING_SHARE)
    found = tuple(violations(run, objectives or {}))
    in_range = [v for v in found if v.end > x_range[0] and v.start < x_range[1]]
    span = explained_span(run, explain, result.estimated)
    busy = None
    if span is not None:
        busy = figures.Span(
            float(run.times[span[0]]),
            float(run.times[span[1]]) + w,
            f"explained: backlog on {span[2]}",
        )
    fig = figures.overview_panels(
        axis,
        times,
        figures.LatencySeries(
            measured_max=measured.lat_max[part],
            measured_p99=measured.lat_p99[part],
            estimated=est.estimate[part],
            lower=est.lower[part],
            upper=est.upper[part],
            predicted=result.predicted.estimate[part],
            label=label,
            predicted_name=None if training is None else f"predicted {label} (refit)",
            band=estimator_by_name(estimator).band,
        ),
        node_ids=est.node_ids,
        ce_seconds=est.ce_seconds[:, part],
        bottleneck=est.bottleneck_nodes[part],
        sources=run.arrivals.sources,
        rates=run.arrivals.counts[:, part] / w,
        x_range=x_range,
        changes=[
            figures.Span(
                float(run.times[c.interval]),
                float(run.times[c.interval]),
                f"at {axis.point(float(run.times[c.interval]))} {change_note(c)}",
            )
            for c in shown_checks
        ],
        violations=[
            (
                figures.Span(v.start, v.end, f"{v.query} above {v.objective:g} s, {v.text(axis)}"),
                v.objective,
            )
            for v in in_range
        ],
        busy=busy,
        uirevision=f"{run.info.run_id}-{axis.key}",
    )
    drift = tuple(run_drift(run, k, training=training))
    rolling = rolling_error(result.predicted.estimate, measured.lat_max, DEFAULT_ERROR_WINDOW)
    error_figure = figures.rolling_error_figure(times, rolling[part], DEFAULT_ERROR_WINDOW, axis)
    finite = measured.lat_max[part][np.isfinite(measured.lat_max[part])]
    measured_wc = float(finite.max()) if finite.size else None
    estimated_wc = float(est.estimate[part].max())
    predicted_wc = float(result.predicted.estimate[part].max())
    error = (
        100.0 * (estimated_wc - measured_wc) / measured_wc
        if measured_wc is not None and measured_wc > 0
        else None
    )
    # the newest intervals are still filling up while ingestion runs (their executions
    # lag their arrivals), so report the bottleneck of the newest interval with a backlog
    backlog = np.flatnonzero(est.estimate[part] > 0)
    if backlog.size:
        last = part.start + int(backlog[-1])
        bottleneck = (
            f"{est.node_ids[est.bottleneck[last]]} (CE/C {est.estimate[last]:.3f} s "
            f"at {axis.point(float(run.times[last]))})"
        )
    else:
        bottleneck = "none (no backlog)"
    return OverviewView(
        figure=fig,
        predicted_wc=predicted_wc,
        estimated_wc=estimated_wc,
        measured_wc=measured_wc,
        error_percent=error,
        coverage=bound_coverage(measured.lat_max[part], est.lower[part], est.upper[part]),
        bottleneck=bottleneck,
        label=label,
        changes=checks,
        drift=drift,
        training=fitted_on,
        error_figure=error_figure,
        clock=axis,
        violations=tuple(in_range),
        range_note=range_note,
    )


def _signed_percent(change: float) -> str:
    return f"{change:+.0%}".replace("-", "\u2212")


def change_note(check: ChangeCheck) -> str:
    """The hover text of a change marker, e.g. "predicted −35% worst case, measured −31%"."""
    moved = ", ".join(f"{op} {old} \u2192 {new}" for op, old, new in check.moved)
    predicted = (
        "no prediction (no data before the change)"
        if not np.isfinite(check.predicted_change)
        else f"predicted {_signed_percent(check.predicted_change)} worst case"
    )
    measured = (
        "measured: no data yet"
        if not np.isfinite(check.measured_change)
        else f"measured {_signed_percent(check.measured_change)}"
    )
    return f"(version {check.version}{': ' + moved if moved else ''}): {predicted}, {measured}"


def _number(value: float, digits: int = 4) -> float | None:
    return round(float(value), digits) if np.isfinite(value) else None


def change_rows(
    run: RunData, checks: Sequence[ChangeCheck], clock: Clock | None = None
) -> list[dict[str, Any]]:
    """The Changes table: one row per placement change at its time on ``clock``,
    seconds and shares (fractions: the table shows them as percentages), None where a
    period has no data."""
    clock = clock or Clock()
    return [
        {
            # a change may lie ahead of the data (applied, not yet measured)
            "time": clock.cell(c.interval * run.subinterval),
            "interval": c.interval,
            "version": c.version,
            "moved": ", ".join(f"{op}: {old} \u2192 {new}" for op, old, new in c.moved),
            "predicted_wc_before": _number(c.predicted_wc_before),
            "predicted_wc_after": _number(c.predicted_wc_after),
            "predicted_change": _number(c.predicted_change),
            "measured_wc_before": _number(c.measured_wc_before),
            "measured_wc_after": _number(c.measured_wc_after),
            "measured_change": _number(c.measured_change),
        }
        for c in checks
    ]


def drift_rows(
    run: RunData, events: Sequence[DriftEvent], clock: Clock | None = None
) -> list[dict[str, Any]]:
    """The drift events table, times on ``clock`` (newest first); the query column says
    whose latency left its band ("system": the worst query's)."""
    w = run.subinterval
    clock = clock or Clock()
    return [
        {
            "query": e.query or "system",
            "start": clock.cell(float(run.times[e.start])),
            "end": clock.cell(float(run.times[e.end] + w)),
            "duration": (e.end - e.start + 1) * w,
            "direction": f"{e.direction} the band",
            "flagged": clock.cell(float(run.times[e.flagged_at] + w)),
            "peak": round(e.peak, 4),
        }
        for e in reversed(events)
    ]


def drift_banner(run: RunData, view: OverviewView, k: int) -> str:
    """The Overview's banner when the measured latency left the predicted band ("" if not)."""
    if not view.drift:
        return ""
    latest = view.drift[-1]
    w = run.subinterval
    lo, hi = view.training
    whose = "system" if latest.query is None else f"query {latest.query}"
    start, end = float(run.times[latest.start]), float(run.times[latest.end] + w)
    clock = view.clock
    when = (
        f"during {clock.span(start, end)}" if clock.wall else f"from t = {start:g} s to {end:g} s"
    )
    return (
        f"Model drift: the measured latency left the predicted band for at least {k} "
        f"consecutive subintervals {len(view.drift)} time(s). Latest ({whose}): "
        f"{latest.direction} "
        f"the band {when}, by up to {latest.peak:.3f} s. The model fitted on "
        f"{clock.span(lo * w, hi * w)} may no longer hold: see the drift events below, or "
        "refit it on a recent window."
    )


def refit_analyses(run: RunData, estimator: str, training: tuple[int, int]) -> RunAnalyses:
    """Estimated and predicted latency with the model refit on ``training`` [start, stop).

    The predicted load is the estimated (measured) operator DLTS before ``start`` and the
    refit model's from ``start`` on, so the prediction starts from the backlog the run
    really had there, as a model refit at ``start`` would have predicted going on.
    (Adapter over :func:`estimator.drift.refit`: that module gives the refit model's
    DLTS for the whole run.)"""
    start = training[0]
    placements = [v.placement for v in run.versions]
    counts = run.arrivals.for_topology(run.topology)
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
    if NODE_FINE in uses:
        node_fine = _spliced_profile(
            run.node_profile, predicted_profile(run, training), loads, start
        )
    detail = (
        None
        if port_work is None and node_fine is None
        else Detail(node_fine=node_fine, port_work=port_work)
    )
    return RunAnalyses(
        estimated_analysis(run, estimator),
        analyse(run.topology, loads, placements, run.version_starts, estimator, detail),
    )


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


def drift_k(value: Any) -> int:
    """The k field: a whole number of subintervals, at least 1 (ViewError otherwise)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise ViewError(f"drift: k must be a whole number of subintervals, got {value!r}")
    if value < 1:
        raise ViewError(f"drift: k must be at least 1 subinterval, got {value!r}")
    return int(value)


def refit_window(run: RunData, minutes: Any) -> tuple[int, int]:
    """The run's last ``minutes`` as of now (the whole run if it is shorter), as
    subintervals [start, stop): the window a refit fits the model on."""
    if not isinstance(minutes, int | float) or isinstance(minutes, bool) or not minutes > 0:
        raise ViewError(f"refit: enter the window as a positive number of minutes, got {minutes!r}")
    if run.intervals == 0:
        raise ViewError(f"run '{run.info.run_id}' has no statistics yet")
    length = max(1, round(float(minutes) * 60.0 / run.subinterval))
    return max(0, run.intervals - length), run.intervals


def stored_training(run: RunData, window: tuple[int, int] | None) -> tuple[int, int] | None:
    """The run's stored refit window inside its data (None: the original model)."""
    if window is None or not 0 <= window[0] < min(window[1], run.intervals):
        return None
    return window[0], min(window[1], run.intervals)


def model_note(run: RunData, view: OverviewView, refit: bool) -> str:
    """Which window the predicted line's model was fitted on."""
    lo, hi = view.training
    w = run.subinterval
    fitted = view.clock.span(lo * w, hi * w)
    if not refit:
        return (
            f"Predicted line: model fitted on {fitted} (the first "
            f"{DEFAULT_TRAINING_SHARE:.0%} of the run)."
        )
    return (
        f"Predicted line: model refit on {fitted}, predicting from "
        f"{view.clock.point(lo * w)} on (before it, the predicted line is the estimated "
        "one); drift is looked for from there on. The window is stored for this run, so the "
        "alert pass predicts with it too; the measurements are not changed."
    )


ALERT_KINDS = {
    "measured_breach": "measured above objective",
    "predicted_breach": "predicted above objective",
    "drift": "model drift",
}


def alert_rows(
    run: RunData, alerts: Sequence[StoredAlert], clock: Clock | None = None
) -> list[dict[str, Any]]:
    """The Overview's alerts list, newest first, times on ``clock``."""
    w = run.subinterval
    clock = clock or Clock()
    return [
        {
            "kind": ALERT_KINDS.get(a.kind, a.kind),
            "query": a.query or "system",
            "start": clock.cell(a.start * w),
            "end": clock.cell((a.end + 1) * w),
            "value": round(a.value, 4),
            "objective": a.objective,
            "detail": a.detail,
            "delivered": "yes" if a.delivered else "no",
        }
        for a in reversed(alerts)
    ]


def clicked_point(
    run_id: str | None, click: Mapping[str, Any] | None, clock: Clock | None = None
) -> dict[str, Any] | None:
    """The store entry of a click on the latency chart: the run and the clicked time in
    seconds since the start (the chart's x on ``clock``: a date on the wall clock)."""
    points = (click or {}).get("points") or []
    x = points[0].get("x") if points and isinstance(points[0], Mapping) else None
    time = (clock or Clock()).seconds(x)
    if not run_id or time is None:
        return None
    return {"run": run_id, "time": time}


def selected_interval(run: RunData, selection: Mapping[str, Any] | None) -> int | None:
    """The subinterval a click on the latency chart chose (``{"run", "time"}``, the
    clicked time in seconds), or None (the worst one) when nothing of this run is chosen."""
    if not selection or selection.get("run") != run.info.run_id:
        return None
    time = selection.get("time")
    if not isinstance(time, int | float) or isinstance(time, bool) or run.intervals == 0:
        return None
    return int(min(max(round(float(time) / run.subinterval), 0), run.intervals - 1))


def blame_at(run: RunData, interval: int | None, estimated: RunAnalysis) -> Blame:
    """The blame at ``interval``, by default the peak of the ``estimated`` series (the
    chosen estimator's, so the explanation starts where the chart peaks)."""
    if interval is None:
        interval = int(np.argmax(estimated.estimate))
    return blame(
        run.topology,
        run.operator_dlts,
        run.arrivals.for_topology(run.topology),
        [v.placement for v in run.versions],
        run.version_starts,
        interval,
    )


def path_blame_at(run: RunData, interval: int | None) -> PathBlame:
    """The path-aware estimate at ``interval`` (default: its worst) along its critical path."""
    return path_blame(
        run.topology,
        run.operator_dlts,
        run.arrivals.for_topology(run.topology),
        [v.placement for v in run.versions],
        run.version_starts,
        interval,
    )


def explained_span(
    run: RunData, interval: int | None, estimated: RunAnalysis
) -> tuple[int, int, str] | None:
    """The subintervals the explanation at ``interval`` covers and what builds up there
    (the bottleneck; for the path-aware estimator its critical path), or None without
    a backlog."""
    if estimated.estimator == "path":
        path = path_blame_at(run, interval)
        busy = [s for s in path.stages if s.busy_since is not None and s.ce_seconds != 0]
        if not busy or busy[0].busy_since is None:
            return None
        return busy[0].busy_since, path.interval, " \u2192 ".join(s.resource for s in path.stages)
    explained = blame_at(run, interval, estimated)
    if explained.ce_seconds <= 0:
        return None
    return explained.busy_since, explained.interval, explained.resource


@dataclass(frozen=True)
class ExplanationView:
    """The Overview's answer to "why is latency high at this subinterval". ``blame`` is
    the Mace blame, or for the path-aware estimator that of the dominant node of
    ``path``, the critical path."""

    blame: Blame
    headline: str
    coverage_note: str | None
    figure: dict[str, Any]
    graph: operator_graph.Graph
    source_rows: list[dict[str, Any]]
    path: PathBlame | None = None


def _source_rows(sources: Mapping[str, float], total: float) -> list[dict[str, Any]]:
    return [
        {"source": name, "seconds": round(seconds, 4), "share": seconds / total if total else 0.0}
        for name, seconds in sorted(sources.items(), key=lambda kv: -kv[1])
    ]


def explanation(
    run: RunData, interval: int | None, estimator: str = "mace", clock: Clock | None = None
) -> ExplanationView:
    """Latency blame at ``interval`` (default: the worst subinterval of ``estimator``): the
    bottleneck, its busy period, per-operator and per-source shares, the operator graph
    coloured by share; times in the headline on ``clock``. For the path-aware estimator,
    every node of the critical path (:func:`path_explanation`); for another one the note
    says what the explanation covers."""
    if run.intervals == 0:
        raise ViewError(f"run '{run.info.run_id}' has no statistics yet")
    clock = clock or Clock()
    if estimator == "path":
        return path_explanation(run, interval, clock)
    estimated = estimated_analysis(run, estimator)
    result = blame_at(run, interval, estimated)
    p, w = result.interval, run.subinterval
    at = f"{clock.point(float(run.times[p]))} (subinterval {p})"
    if result.ce_seconds > 0:
        since = result.busy_since
        headline = (
            f"At {at}, {result.resource} is the bottleneck: {result.ce_seconds:.3f} s behind "
            f"(CE/C). Its backlog has been building since "
            f"{clock.point(float(run.times[since]))} "
            f"(subinterval {since}), for {(p - since + 1) * w:g} s."
        )
    else:
        headline = (
            f"At {at}, no resource has a backlog (Mace = 0 s): latency there is processing "
            "and transfer time, within w + eps."
        )
    note = None
    if estimator != "mace":
        label = ESTIMATOR_LABELS[estimator]
        note = (
            f"The {label} estimate at this subinterval is {estimated.estimate[p]:.3f} s. "
            f"This explanation covers the bottleneck resource's own backlog (Mace, "
            f"{result.ce_seconds:.3f} s); what the {label} estimate adds is not split "
            "among operators yet."
        )
    placement = run.versions[version_at(run.version_starts, p)].placement
    total = result.ce_seconds
    return ExplanationView(
        blame=result,
        headline=headline,
        coverage_note=note,
        figure=figures.contribution_figure(result.contributions, total, result.resource),
        graph=operator_graph.operator_graph(
            run.topology,
            placement,
            operator_graph.Colouring(
                utilisation=run_utilisation(run),
                shares=operator_graph.Shares(
                    result.resource, total, result.contributions, result.sources
                ),
            ),
            operator_graph.WIDE,
        ),
        source_rows=_source_rows(result.sources, total),
    )


def path_explanation(
    run: RunData, interval: int | None, clock: Clock | None = None
) -> ExplanationView:
    """The path-aware estimate at ``interval`` (default: its worst) along its critical path:
    each node's window and excess in the headline (times on ``clock``), a stacked bar
    per node of its operators' shares, the operator graph and the sources coloured by
    their share of the path's excess (the estimate less the hop delays)."""
    clock = clock or Clock()
    path = path_blame_at(run, interval)
    p = path.interval
    top = path.dominant
    dominant = Blame(
        interval=p,
        resource=top.resource,
        busy_since=p if top.busy_since is None else top.busy_since,
        ce_seconds=top.ce_seconds,
        contributions=top.contributions,
        sources=top.sources,
    )
    parts = []
    for stage in path.stages:
        delay = f" after a {stage.delay_seconds:.3f} s hop" if stage.delay_seconds else ""
        if stage.busy_since is None:
            parts.append(f"{stage.resource} no wait of its own{delay}")
            continue
        parts.append(
            f"{stage.resource} {stage.ce_seconds:+.3f} s{delay} (busy from "
            f"{clock.point(float(run.times[stage.busy_since]))})"
        )
    route = " \u2192 ".join(s.resource for s in path.stages)
    headline = (
        f"At {clock.point(float(run.times[p]))} (subinterval {p}), the path-aware estimate is "
        f"{path.estimate:.3f} s along the critical path {route}: " + "; ".join(parts) + "."
    )
    note = None
    if any(s.ce_seconds < 0 for s in path.stages):
        note = (
            "A negative share: that node worked through what the node before it released "
            "at once in less time than those subintervals lasted, so it drained part of "
            "the lag."
        )
    contributions: dict[str, float] = {}
    sources: dict[str, float] = {}
    for stage in path.stages:
        for op, seconds in stage.contributions.items():
            contributions[op] = contributions.get(op, 0.0) + seconds
        for source, seconds in stage.sources.items():
            sources[source] = sources.get(source, 0.0) + seconds
    total = sum(s.ce_seconds for s in path.stages)
    placement = run.versions[version_at(run.version_starts, p)].placement
    return ExplanationView(
        blame=dominant,
        headline=headline,
        coverage_note=note,
        figure=figures.path_contribution_figure(path, run.subinterval),
        graph=operator_graph.operator_graph(
            run.topology,
            placement,
            operator_graph.Colouring(
                utilisation=run_utilisation(run),
                shares=operator_graph.Shares(
                    top.resource,
                    total,
                    contributions,
                    sources,
                    tuple(s.resource for s in path.stages),
                ),
            ),
            operator_graph.WIDE,
        ),
        source_rows=_source_rows(sources, total),
        path=path,
    )


def clicked_node(click: Mapping[str, Any] | None, node_ids: Sequence[Any]) -> str | None:
    """The node of a click on the CE/C heatmap (its row), or None if it is not a node."""
    points = (click or {}).get("points") or []
    node = points[0].get("y") if points and isinstance(points[0], Mapping) else None
    return node if isinstance(node, str) and node in node_ids else None


def run_utilisation(run: RunData) -> operator_graph.Utilisation:
    """Each node's measured load over its capacity, mean and peak over the run."""
    nodes = run.topology.node_ids
    capacities = [run.topology.capacity_by_node[n] for n in nodes]
    return operator_graph.utilisation(nodes, run.node_dlts, capacities, run.subinterval)


def _node_of(run: RunData, node: str | None) -> tuple[tuple[str, ...], str]:
    """The run's nodes and the chosen one (the first if None); ViewError if the run has
    no statistics yet or does not have that node."""
    if run.intervals == 0:
        raise ViewError(f"run '{run.info.run_id}' has no statistics yet")
    nodes = run.topology.node_ids
    node = node or nodes[0]
    if node not in nodes:
        raise ViewError(f"unknown node '{node}'")
    return nodes, node


def nodes_run_view(
    run: RunData, range_key: str | None, selected: str | None
) -> tuple[go.Figure, go.Figure]:
    """The Nodes page's run-wide figures: the CE/C heatmap (the ``selected`` node's row
    outlined, default the first) and the bottleneck over time. They do not depend on the
    chosen node, so choosing one redraws only :func:`node_view` and the outline."""
    nodes, selected = _node_of(run, selected)
    part = window(run, range_key)
    est = analyses(run).estimated
    times = run.times[part]
    return (
        figures.ce_heatmap(nodes, times, est.ce_seconds[:, part], selected),
        figures.bottleneck_figure(times, est.bottleneck_nodes[part], est.estimate[part], nodes),
    )


def node_view(
    run: RunData, node: str | None, range_key: str | None
) -> tuple[go.Figure, go.Figure, list[dict[str, Any]]]:
    """One node's measured DLTS against capacity, its utilization against demand and its
    outline on the heatmap (the first node if ``node`` is None)."""
    nodes, node = _node_of(run, node)
    k = nodes.index(node)
    part = window(run, range_key)
    times = run.times[part]
    capacity = run.topology.capacity_by_node[node]
    return (
        figures.dlts_capacity_figure(
            times, run.node_dlts[k, part], capacity * run.subinterval, node
        ),
        figures.busy_vs_dlts_figure(
            times, run.busy[k, part], run.node_dlts[k, part], capacity, node
        ),
        figures.node_outline(nodes, node),
    )


SHARES = ("compliance", "bound_coverage")
"""Report columns that are shares of subintervals: fractions in the data (CSV, JSON),
shown as percentages."""
_FIGURE_NAMES = {"wc": "WC", "p99": "p99", "mean": "mean"}


def report_columns() -> list[dict[str, Any]]:
    """The Reports table's columns: seconds with their unit, shares as percentages (the
    table formats them; the rows keep the fractions)."""
    from dash.dash_table.FormatTemplate import percentage

    columns: list[dict[str, Any]] = [{"name": "query", "id": "query"}]
    for key in (*KEYS, "bound_coverage"):
        if key in SHARES:
            columns.append(
                {
                    "name": key.replace("_", " "),
                    "id": key,
                    "type": "numeric",
                    "format": percentage(1),
                }
            )
            continue
        kind, _, figure = key.partition("_")
        name = f"{kind} {_FIGURE_NAMES[figure]} (s)" if figure else f"{kind} (s)"
        columns.append({"name": name, "id": key, "type": "numeric"})
    return columns


def report_rows(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The report as table rows (rounded for reading)."""
    rows = []
    for name, entry in [*report["queries"].items(), ("system", report["system"])]:
        row: dict[str, Any] = {"query": name}
        for key, value in entry.items():
            row[key] = None if value is None else round(float(value), 4)
        rows.append(row)
    return rows


def report_view(
    run: RunData,
    objectives: Mapping[str, float],
    query: str | None,
    share: float = 0.1,
    estimator: str = "mace",
) -> tuple[dict[str, Any], go.Figure, list[Violation]]:
    """The report, a compliance figure of one query and its objective's violations."""
    if run.intervals == 0:
        raise ViewError(f"run '{run.info.run_id}' has no statistics yet")
    computed = analyses(run, share, estimator)
    report = build_report(run, objectives, share, computed)
    if query is None or query not in run.latency:
        query = run.topology.queries[0]
    measured = run.latency[query].lat_max
    objective = objectives.get(query)
    fig = figures.compliance_figure(
        run.times,
        measured,
        computed.estimated.per_query[query],
        objective,
        ESTIMATOR_LABELS[estimator],
    )
    return report, fig, violations(run, objectives, query)


# -- hosts needed over time (Nodes page, issue 18) --------------------------------------

HOSTS_BUDGET = 0.3
"""Seconds of placement search per node count tried in each window."""
MAX_WINDOW_MINUTES = 24 * 60.0
DEFAULT_WINDOW_MINUTES = 5.0
MAX_OBJECTIVE = 86_400.0


@dataclass(frozen=True)
class HostsDefaults:
    """The chart's starting inputs for a run, and where the objective comes from."""

    objective: str
    window: str
    capacity: str
    source: str


def hosts_defaults(run: RunData, objectives: Mapping[str, float]) -> HostsDefaults:
    """The tightest stored objective, else the run's measured worst case (else its
    estimated MaceWC); 5-minute windows (a quarter of a run shorter than 10 minutes);
    nodes as large as the run's largest."""
    if run.intervals == 0:
        raise ViewError(f"run '{run.info.run_id}' has no statistics yet")
    measured = run.measured_system().lat_max
    finite = measured[np.isfinite(measured)]
    if objectives:
        objective, source = min(objectives.values()), "the tightest stored objective"
    elif finite.size and finite.max() > 0:
        objective, source = float(finite.max()), "the measured worst case"
    else:
        objective = float(analyses(run).estimated.estimate.max())
        source = "the estimated worst case"
    capacity = max(run.topology.capacity_by_node.values())
    # 5-minute windows, or four windows on a run shorter than two of them
    minutes = run.intervals * run.subinterval / 60.0
    window = DEFAULT_WINDOW_MINUTES if minutes >= 2 * DEFAULT_WINDOW_MINUTES else minutes / 4
    return HostsDefaults(
        objective=f"{objective:.4g}" if objective > 0 else "1",
        window=f"{window:.3g}",
        capacity=f"{capacity:g}",
        source=source,
    )


def hosts_timeline(
    inputs: RunInputs,
    objective: Any,
    window_minutes: Any,
    capacity: Any,
    progress: Callable[[int, int], None] | None = None,
) -> HostsTimeline:
    """Hosts needed per window of the run's recorded arrivals (its operators with the
    costs fitted on the run), from the chart's fields; ScenarioError names a bad one."""
    seconds = parse_positive(objective, "objective (s)", upper=MAX_OBJECTIVE)
    minutes = parse_positive(window_minutes, "window (min)", upper=MAX_WINDOW_MINUTES)
    node_capacity = parse_positive(capacity, "node capacity", upper=MAX_CAPACITY)
    width = max(1, round(minutes * 60.0 / inputs.topology.subinterval))
    try:
        return hosts_over_time(
            inputs.topology,
            inputs.arrivals,
            seconds,
            width,
            node_capacity,
            budget=HOSTS_BUDGET,
            rng=np.random.default_rng(0),
            progress=progress,
        )
    except ModelError as exc:
        raise ViewError(f"hosts over time: {exc}") from None


def _hours(value: float) -> str:
    return f"{value:.3g} h" if value >= 1 else f"{value * 60:.3g} min"


def hosts_view(timeline: HostsTimeline) -> tuple[go.Figure, str]:
    """The hosts-over-time chart and its caption (machine-hours of each)."""
    w = timeline.subinterval
    starts = timeline.window_start * w
    ends = (timeline.window_start + timeline.window_length) * w
    figure = figures.hosts_figure(
        starts,
        ends,
        timeline.mace_hosts,
        timeline.fugu_hosts,
        timeline.mace_feasible,
        timeline.objective,
        timeline.fugu_threshold,
    )
    mace, fugu = timeline.machine_hours()
    missed = int((~timeline.mace_feasible).sum())
    caption = (
        f"Machine-hours over {_hours(float(ends[-1] - starts[0]) / 3600.0)} of recorded load: "
        f"Mace-based {_hours(mace)}, FUGU threshold {_hours(fugu)}"
    )
    if missed:
        caption += (
            f". In {missed} window{'s' * (missed != 1)} no node count met the objective "
            "within the search budget (marked ×; the Mace-based hours count the best "
            "placement tried there): usually one operator alone overloads a node of this "
            "capacity; try larger nodes."
        )
    elif math.isclose(mace, fugu):
        caption += ": the same hosts as FUGU at this objective."
    elif mace < fugu:
        caption += f": Mace saves {_hours(fugu - mace)} ({(fugu - mace) / fugu:.0%})."
    else:
        caption += f": keeping the objective takes {_hours(mace - fugu)} more than FUGU."
    broken = timeline.fugu_mace_wc > timeline.objective
    if broken.any():
        caption += (
            f" FUGU's count breaks the objective in {int(broken.sum())} window"
            f"{'s' * (int(broken.sum()) != 1)} (MaceWC up to "
            f"{float(timeline.fugu_mace_wc.max()):.3g} s)."
        )
    caption += (
        f" Each window is planned on its own, on nodes of capacity "
        f"{timeline.node_capacity:g} CPU-s/s starting with empty queues."
    )
    return figure, caption
