"""The Overview's views: the run's latency over the shown range, drift, changes, model
and alert rows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dashboard.core import timeaxis
from dashboard.core.complete import complete_count
from dashboard.core.data import RunData
from dashboard.core.errors import ViewError
from dashboard.core.monitoring import MIN_DRIFT_TRAINING, fitted_on_enough, run_drift
from dashboard.core.report import (
    RunAnalysis,
    analyses,
    bound_coverage,
    change_checks,
    change_text,
    refit_analyses,
    system_lower,
)
from dashboard.core.timeaxis import Clock, TimeRange
from dashboard.core.violations import Violation, violations
from dashboard.overview import figures
from dashboard.overview.explain import explained_span
from dashboard.shell import figures as shell_figures
from estimator.drift import (
    DEFAULT_ERROR_WINDOW,
    DEFAULT_K,
    DriftEvent,
    rolling_error,
)
from estimator.fitting import training_window
from estimator.model import Topology
from estimator.pathaware import (
    ESTIMATOR_LABELS,
    estimator_by_name,
)
from estimator.runs import (
    DEFAULT_TRAINING_SHARE,
)
from estimator.verification import ChangeCheck
from storage.alerts import StoredAlert


@dataclass(frozen=True)
class OverviewView:
    figure: dict[str, Any]
    predicted_wc: float | None
    estimated_wc: float | None
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
    in_flight: float = 0.0
    """Seconds at the end of the run whose events are not all out yet: left out of the
    headline figures."""

    def kpis(self) -> tuple[str, str, str]:
        """The worst-case, bound coverage and bottleneck cards, in the names the chart's
        lines have (estimated, predicted, measured), over the complete subintervals."""
        if self.estimated_wc is None or self.predicted_wc is None:
            return (
                f"the shown range is still in flight (last {self.in_flight:g} s)",
                "-",
                self.bottleneck,
            )
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


def violations_note(objectives: Mapping[str, float], shown: int) -> str:
    """The line above the Overview's violations list."""
    if not objectives:
        return "No objective set for this run: set one per query on the Reports page."
    if not shown:
        return "No violation in the shown range."
    return f"{shown} violation{'s' * (shown != 1)} in the shown range."


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
    or the run's first share; drift events (:func:`dashboard.core.monitoring.run_drift`) are
    stretches of ``k`` settled subintervals outside its band."""
    if run.intervals == 0:
        raise ViewError(f"run '{run.info.run_id}' has no statistics yet")
    k = drift_k(k)
    chosen = timeaxis.time_range(shown)
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
        busy = shell_figures.Span(
            float(run.times[span[0]]),
            float(run.times[span[1]]) + w,
            f"explained: backlog on {span[2]}",
        )
    complete = complete_count(run)
    in_flight = (run.intervals - complete) * w
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
        subinterval=w,
        node_ids=est.node_ids,
        ce_seconds=est.ce_seconds[:, part],
        bottleneck=est.bottleneck_nodes[part],
        sources=run.arrivals.sources,
        rates=run.arrivals.counts[:, part] / w,
        x_range=x_range,
        changes=[
            shell_figures.Span(
                float(run.times[c.interval]),
                float(run.times[c.interval]),
                f"at {axis.point(float(run.times[c.interval]))} {change_note(c, run.topology)}",
            )
            for c in shown_checks
        ],
        violations=[
            (
                shell_figures.Span(
                    v.start, v.end, f"{v.query} above {v.objective:g} s, {v.text(axis)}"
                ),
                v.objective,
            )
            for v in in_range
        ],
        busy=busy,
        in_flight=(
            shell_figures.Span(complete * w, run.intervals * w, "in flight") if in_flight else None
        ),
        uirevision=f"{run.info.run_id}-{axis.key}",
    )
    drift = tuple(run_drift(run, k, training=training))
    rolling = rolling_error(result.predicted.estimate, measured.lat_max, DEFAULT_ERROR_WINDOW)
    error_figure = figures.rolling_error_figure(
        times,
        rolling[part],
        DEFAULT_ERROR_WINDOW,
        axis,
        in_flight=(complete * w, run.intervals * w),
    )
    # headline figures: the shown subintervals whose events are all out
    head = slice(part.start, max(part.start, min(part.stop, complete)))
    finite = measured.lat_max[head][np.isfinite(measured.lat_max[head])]
    measured_wc = float(finite.max()) if finite.size else None
    estimated_wc = float(est.estimate[head].max()) if head.stop > head.start else None
    predicted_wc = float(result.predicted.estimate[head].max()) if head.stop > head.start else None
    error = (
        100.0 * (estimated_wc - measured_wc) / measured_wc
        if estimated_wc is not None and measured_wc is not None and measured_wc > 0
        else None
    )
    bottleneck = _bottleneck(run, est, head, axis)
    if in_flight:
        bottleneck += f" · last {in_flight:g} s still in flight"
    return OverviewView(
        figure=fig,
        predicted_wc=predicted_wc,
        estimated_wc=estimated_wc,
        measured_wc=measured_wc,
        error_percent=error,
        coverage=(
            bound_coverage(measured.lat_max[head], system_lower(run, est)[head], est.upper[head])
            if head.stop > head.start
            else None
        ),
        bottleneck=bottleneck,
        label=label,
        changes=checks,
        drift=drift,
        training=fitted_on,
        error_figure=error_figure,
        clock=axis,
        violations=tuple(in_range),
        range_note=range_note,
        in_flight=in_flight,
    )


def _bottleneck(run: RunData, est: RunAnalysis, head: slice, axis: Clock) -> str:
    """The bottleneck card: the node with the largest CE/C in the newest complete
    subinterval of ``head`` (newer ones still fill up while their events are in flight)."""
    if head.stop <= head.start:
        return "none yet (no complete subinterval shown)"
    last = head.stop - 1
    at = axis.point(float(run.times[last]))
    if est.estimate[last] <= 0:
        return f"none (no backlog at {at})"
    return f"{est.node_ids[est.bottleneck[last]]} (CE/C {est.estimate[last]:.3f} s at {at})"


def _signed_percent(change: float) -> str:
    return f"{change:+.0%}".replace("-", "\u2212")


def change_note(check: ChangeCheck, topology: Topology) -> str:
    """The hover text of a change marker, e.g. "predicted −35% worst case, measured −31%"."""
    moved = change_text(check, topology, " ")
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
            "moved": change_text(c, run.topology),
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
        note = (
            f"Predicted line: model fitted on {fitted} (the first "
            f"{DEFAULT_TRAINING_SHARE:.0%} of the run)."
        )
        if fitted_on_enough(run.intervals, w):
            return note
        return (
            f"{note} Drift is looked for once that window holds {MIN_DRIFT_TRAINING:g} s "
            f"(now {(hi - lo) * w:g} s): a model fitted on less is not trusted, here and in "
            "the alerts. To look for it sooner, refit on a recent window."
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
