"""The Overview's explanation of one point: the blame of the nodes and paths behind its latency."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from dashboard.core.data import RunData
from dashboard.core.errors import ViewError
from dashboard.core.report import (
    estimated_analysis,
)
from dashboard.core.timeaxis import Clock
from dashboard.overview import blame_figures
from dashboard.shell.graph import elements, geometry
from estimator.blame import Blame, blame
from estimator.model import version_at
from estimator.pathaware import (
    ESTIMATOR_LABELS,
)
from estimator.pathblame import PathBlame, path_blame
from estimator.runs import (
    RunAnalysis,
)


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
        run.counts,
        run.placements,
        run.version_starts,
        interval,
    )


def path_blame_at(run: RunData, interval: int | None) -> PathBlame:
    """The path-aware estimate at ``interval`` (default: its worst) along its critical path."""
    return path_blame(
        run.topology,
        run.operator_dlts,
        run.counts,
        run.placements,
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
    graph: elements.Graph
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
        figure=blame_figures.contribution_figure(result.contributions, total, result.resource),
        graph=elements.operator_graph(
            run.topology,
            placement,
            elements.Colouring(
                utilisation=run_utilisation(run),
                shares=elements.Shares(
                    result.resource, total, result.contributions, result.sources
                ),
            ),
            geometry.WIDE,
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
        figure=blame_figures.path_contribution_figure(path, run.subinterval),
        graph=elements.operator_graph(
            run.topology,
            placement,
            elements.Colouring(
                utilisation=run_utilisation(run),
                shares=elements.Shares(
                    top.resource,
                    total,
                    contributions,
                    sources,
                    tuple(s.resource for s in path.stages),
                ),
            ),
            geometry.WIDE,
        ),
        source_rows=_source_rows(sources, total),
        path=path,
    )


def run_utilisation(run: RunData) -> elements.Utilisation:
    """Each node's measured load over its capacity, mean and peak over the run."""
    nodes = run.topology.node_ids
    capacities = [run.topology.capacity_by_node[n] for n in nodes]
    return elements.utilisation(nodes, run.node_dlts, capacities, run.subinterval)
