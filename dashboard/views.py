"""Logic of the Overview, Nodes and Reports pages as plain functions."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go

from dashboard import figures
from dashboard.data import RunData
from dashboard.errors import ViewError
from dashboard.report import (
    KEYS,
    analyses,
    bound_coverage,
    build_report,
    violating_intervals,
)
from estimator.errors import ModelError
from estimator.pathaware import ESTIMATOR_LABELS
from estimator.placement.planning import HostsTimeline, hosts_over_time
from estimator.whatif import MAX_CAPACITY, RunInputs, parse_positive

RANGES = {"5m": 300.0, "1h": 3600.0, "all": None}


def window(run: RunData, range_key: str | None) -> slice:
    """The intervals of the chosen time range (the latest ones)."""
    if range_key not in RANGES:
        raise ViewError(f"time range: unknown choice {range_key!r}")
    seconds = RANGES[range_key]
    if seconds is None:
        return slice(0, run.intervals)
    count = max(1, round(seconds / run.subinterval))
    return slice(max(0, run.intervals - count), run.intervals)


def kept_zoom(relayout: Mapping[str, Any] | None) -> dict[str, list[float]]:
    """The axis ranges a user zoomed or panned to, from a graph's ``relayoutData``
    (empty after a double-click reset). A refresh redraws the figure with them: Plotly's
    ``uirevision`` alone lost a drag-zoom at the next refresh (issue 14)."""
    ranges: dict[str, list[float]] = {}
    for axis in ("xaxis", "yaxis"):
        if not relayout or relayout.get(f"{axis}.autorange"):
            continue
        bounds = relayout.get(f"{axis}.range") or [
            relayout.get(f"{axis}.range[0]"),
            relayout.get(f"{axis}.range[1]"),
        ]
        numbers = [b for b in bounds if isinstance(b, int | float) and not isinstance(b, bool)]
        if len(bounds) == 2 and len(numbers) == 2:
            ranges[axis] = [float(bounds[0]), float(bounds[1])]
    return ranges


@dataclass(frozen=True)
class OverviewView:
    figure: go.Figure
    predicted_wc: float
    estimated_wc: float
    measured_wc: float | None
    error_percent: float | None
    coverage: float | None
    bottleneck: str
    label: str = "Mace"

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


def overview(run: RunData, range_key: str | None, estimator: str = "mace") -> OverviewView:
    """Measured, estimated and predicted latency in the window, with its KPIs, for
    ``estimator``."""
    if run.intervals == 0:
        raise ViewError(f"run '{run.info.run_id}' has no statistics yet")
    part = window(run, range_key)
    result = analyses(run, estimator=estimator)
    label = ESTIMATOR_LABELS[estimator]
    est = result.estimated
    measured = run.measured_system()
    times = run.times[part]
    starts = [run.times[s] for s in run.version_starts[1:] if part.start <= s < part.stop]
    fig = figures.latency_figure(
        times,
        measured.lat_max[part],
        measured.lat_p99[part],
        est.estimate[part],
        est.upper[part],
        starts,
        uirevision=f"{run.info.run_id}-{range_key}",
        lower=est.lower[part],
        label=label,
        predicted=result.predicted.estimate[part],
    )
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
            f"at t = {run.times[last]:g} s)"
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
    )


def nodes_view(
    run: RunData, node: str | None, range_key: str | None
) -> tuple[go.Figure, go.Figure, go.Figure, go.Figure]:
    """CE heatmap, DLTS vs capacity, bottleneck over time, utilization vs DLTS."""
    if run.intervals == 0:
        raise ViewError(f"run '{run.info.run_id}' has no statistics yet")
    nodes = run.topology.node_ids
    if node is None:
        node = nodes[0]
    if node not in nodes:
        raise ViewError(f"unknown node '{node}'")
    k = nodes.index(node)
    part = window(run, range_key)
    est = analyses(run).estimated
    times = run.times[part]
    capacity = run.topology.capacity_by_node[node]
    return (
        figures.ce_heatmap(nodes, times, est.ce_seconds[:, part]),
        figures.dlts_capacity_figure(
            times, run.node_dlts[k, part], capacity * run.subinterval, node
        ),
        figures.bottleneck_figure(times, est.bottleneck_nodes[part], est.estimate[part], nodes),
        figures.busy_vs_dlts_figure(
            times, run.busy[k, part], run.node_dlts[k, part], capacity, node
        ),
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
) -> tuple[dict[str, Any], go.Figure, list[int]]:
    """The report, a compliance figure of one query and its violating intervals."""
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
    return report, fig, violating_intervals(measured, objective)


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
