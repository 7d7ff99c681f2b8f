"""The Reports page's views: the report table, its columns and the compliance figure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import plotly.graph_objects as go

from dashboard.core.complete import complete_report
from dashboard.core.data import RunData
from dashboard.core.errors import ViewError
from dashboard.core.report import KEYS, analyses
from dashboard.core.timeaxis import Clock, TimeRange, window
from dashboard.core.violations import Violation, violations
from dashboard.shell.figures import axes_layout, line_trace, mark_in_flight, on_clock
from dashboard.shell.theme import ESTIMATED, MEASURED
from estimator.pathaware import (
    ESTIMATOR_LABELS,
)

COMPLIANCE_TITLE = "Latency against the objective"


def compliance_figure(
    times: np.ndarray,
    measured: np.ndarray,
    estimated: np.ndarray,
    objective: float | None,
    label: str = "Mace",
) -> go.Figure:
    """A query's measured max latency and its estimate (the estimator named ``label`` on
    the measured load) per subinterval against its objective."""
    times = np.asarray(times, dtype=float)
    fig = go.Figure()
    fig.add_trace(line_trace(times, estimated, f"estimated {label}", ESTIMATED))
    fig.add_trace(line_trace(times, measured, "measured max", MEASURED))
    if objective is not None:
        fig.add_hline(y=objective, line_dash="dash", line_color="#2ca02c")
        fig.add_trace(
            go.Scatter(
                x=[], y=[], mode="lines", name=f"objective {objective:g} s", line_color="#2ca02c"
            )
        )
    return axes_layout(fig, COMPLIANCE_TITLE, "latency (s)", uirevision="report")


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
    columns.append(
        {"name": "engine delay in the estimate (s)", "id": "pipeline_delay", "type": "numeric"}
    )
    return columns


THREAD_COLUMNS = (
    ("operator", "operator"),
    ("cost (ms a record)", "cost_ms"),
    ("read from", "reading"),
    ("predicted with (ms a record)", "predicted_ms"),
    ("predicted read from", "predicted_reading"),
    ("busy time calm (ms a record)", "calm_ms"),
    ("busy time busy (ms a record)", "busy_ms"),
    ("busy time is work", "work"),
    ("Python worker (cores)", "python_worker"),
)
"""Columns of the table of an engine run's threads (``report["threads"]``)."""


FIXED_TIME_NOTE = "; counts the worker's fixed time a second per record: high under more load"
"""Added to a thread's predicted reading where the first part's cost counts the worker's
time a second that no record causes (``predicted_counts_fixed_time``)."""


def thread_rows(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per operator on an engine's thread: its cost, how it was read, its busy time per
    record when calm and when busy, whether that busy time is its work, and the Python
    worker it runs in with its cores (empty for none)."""

    def ms(value: float | None) -> float | None:
        return None if value is None else round(value * 1000, 3)

    return [
        {
            "operator": operator,
            "cost_ms": ms(thread["cost"]),
            "reading": thread["reading"],
            "predicted_ms": ms(thread["predicted_cost"]),
            "predicted_reading": thread["predicted_reading"]
            + (FIXED_TIME_NOTE if thread.get("predicted_counts_fixed_time") else ""),
            "calm_ms": ms(thread["busy_per_record_calm"]),
            "busy_ms": ms(thread["busy_per_record_busy"]),
            "work": "yes" if thread["busy_time_is_work"] else "no: it waits",
            "python_worker": _worker(thread),
        }
        for operator, thread in report.get("threads", {}).items()
    ]


def _worker(thread: Mapping[str, Any]) -> str:
    """The Python worker node a thread's operator runs in, with its cores (a cluster's
    TaskManager runs one per slot); empty for none."""
    worker = thread.get("python_worker")
    if not worker:
        return ""
    return f"{worker} ({thread.get('python_worker_cores') or 1.0:g})"


def report_rows(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The report as table rows (rounded for reading)."""
    rows = []
    for name, entry in [*report["queries"].items(), ("system", report["system"])]:
        row: dict[str, Any] = {"query": name}
        for key, value in entry.items():
            if key == "pipeline_delay":  # an engine run's calibrated delay, as the estimate
                value = value["high"]  # adds it (estimator.delays)
            row[key] = None if value is None else round(float(value), 4)
        rows.append(row)
    return rows


def report_view(
    run: RunData,
    objectives: Mapping[str, float],
    query: str | None,
    share: float = 0.1,
    estimator: str = "mace",
    shown: TimeRange | None = None,
    clock: Clock | None = None,
) -> tuple[dict[str, Any], go.Figure, list[Violation]]:
    """The report (over the complete subintervals of the whole run), a compliance figure
    of one query over the ``shown`` range on ``clock`` (default: the whole run, seconds
    since the start; the subintervals still in flight greyed) and its objective's
    violations."""
    if run.intervals == 0:
        raise ViewError(f"run '{run.info.run_id}' has no statistics yet")
    computed = analyses(run, share, estimator)
    report = complete_report(run, objectives, share, estimator)
    if query is None or query not in run.latency:
        query = run.topology.queries[0]
    measured = run.latency[query].lat_max
    objective = objectives.get(query)
    part, x_range = window(shown or TimeRange(), run.intervals, run.subinterval)
    label = ESTIMATOR_LABELS[estimator]
    delay = computed.estimated.delays.get(query)
    if delay is not None and delay.calibrated:  # an engine run's series holds its delay
        label += " + engine delay"
    # as in the table, the estimate where the query had outputs (a gap where a complete
    # subinterval had none: the per-origin estimate is 0 there, under the query's Mace)
    estimated = computed.estimated.per_query[query].copy()
    complete = report["complete_intervals"]
    estimated[:complete][~np.isfinite(measured[:complete])] = np.nan
    fig = compliance_figure(run.times[part], measured[part], estimated[part], objective, label)
    mark_in_flight(
        fig, report["complete_intervals"] * run.subinterval, run.intervals * run.subinterval
    )
    on_clock(fig, clock or Clock(), x_range)
    return report, fig, violations(run, objectives, query)
