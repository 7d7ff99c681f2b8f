"""The Nodes page's views: its figures for a run and a node, and the hosts needed over time."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go

from dashboard.core.complete import complete_count
from dashboard.core.data import RunData
from dashboard.core.errors import ViewError
from dashboard.core.report import (
    analyses,
)
from dashboard.core.timeaxis import Clock, TimeRange, window
from dashboard.nodes import figures
from dashboard.shell.figures import in_flight_shape, mark_in_flight, on_clock
from estimator.errors import ModelError
from estimator.placement.planning import HostsTimeline, hosts_over_time
from estimator.whatif import MAX_CAPACITY, RunInputs, parse_positive


def clicked_node(click: Mapping[str, Any] | None, node_ids: Sequence[Any]) -> str | None:
    """The node of a click on the CE/C heatmap (its row), or None if it is not a node."""
    points = (click or {}).get("points") or []
    node = points[0].get("y") if points and isinstance(points[0], Mapping) else None
    return node if isinstance(node, str) and node in node_ids else None


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
    run: RunData, shown: TimeRange, selected: str | None, clock: Clock | None = None
) -> tuple[go.Figure, go.Figure]:
    """The Nodes page's run-wide figures over the ``shown`` range on ``clock`` (default:
    seconds since the start): the CE/C heatmap (the ``selected`` node's row outlined,
    default the first) and the bottleneck over time. They do not depend on the chosen
    node, so choosing one redraws only :func:`node_view` and the outline."""
    nodes, selected = _node_of(run, selected)
    part, x_range = window(shown, run.intervals, run.subinterval)
    est = analyses(run).estimated
    times = run.times[part]
    return (
        _on_time(
            run,
            figures.ce_heatmap(
                nodes, times, est.ce_seconds[:, part], run.subinterval, selected, clock
            ),
            clock,
            x_range,
        ),
        _on_time(
            run,
            figures.bottleneck_figure(times, est.bottleneck_nodes[part], est.estimate[part], nodes),
            clock,
            x_range,
        ),
    )


def _on_time(
    run: RunData, fig: go.Figure, clock: Clock | None, x_range: tuple[float, float]
) -> go.Figure:
    """``fig`` (seconds since the start on x) with the run's newest subintervals that
    are still in flight greyed (their DLTS and CE/C still grow), on ``clock`` over
    ``x_range``."""
    return on_clock(mark_in_flight(fig, *_in_flight_span(run)), clock or Clock(), x_range)


def _in_flight_span(run: RunData) -> tuple[float, float]:
    return complete_count(run) * run.subinterval, run.intervals * run.subinterval


def node_view(
    run: RunData, node: str | None, shown: TimeRange, clock: Clock | None = None
) -> tuple[go.Figure, go.Figure, list[dict[str, Any]]]:
    """One node's measured DLTS against capacity, its utilization against demand (over
    the ``shown`` range on ``clock``) and its outline on the heatmap (the first node if
    ``node`` is None)."""
    nodes, node = _node_of(run, node)
    k = nodes.index(node)
    part, x_range = window(shown, run.intervals, run.subinterval)
    times = run.times[part]
    capacity = run.topology.capacity_by_node[node]
    return (
        _on_time(
            run,
            figures.dlts_capacity_figure(
                times, run.node_dlts[k, part], capacity * run.subinterval, node
            ),
            clock,
            x_range,
        ),
        _on_time(
            run,
            figures.busy_vs_dlts_figure(
                times, run.busy[k, part], run.node_dlts[k, part], capacity, node
            ),
            clock,
            x_range,
        ),
        # the heatmap's shapes are replaced on a node switch: its grey band goes along
        [*figures.node_outline(nodes, node), *_in_flight_shapes(run, clock or Clock())],
    )


def _in_flight_shapes(run: RunData, clock: Clock) -> list[dict[str, Any]]:
    """The grey band :func:`_on_time` draws, as shapes on ``clock`` (none when nothing is
    in flight)."""
    start, end = _in_flight_span(run)
    if not end > start:
        return []
    return [in_flight_shape(*clock.axis([start, end]).tolist())]


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
