"""The What-if page's figures: the current and the scenario's estimates side by side, and a
Flink deployment's prediction over the measured latency."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dashboard.core.timeaxis import Clock
from dashboard.shell.figures import WALL_LEGEND_Y, hover, plain_layout, plain_line
from dashboard.shell.theme import MEASURED, PREDICTED, SCENARIO
from estimator.fitting import WORK_SPREAD

LATENCY_TITLE = "Predicted latency: scenario vs current"
QUERY_TITLE = "Worst case per query"
DEPLOYMENT_TITLE = "Predicted latency: changed deployment over the measured"
"""The charts' titles before the estimator is known (while they wait for data)."""


def estimate_comparison_figure(
    times: np.ndarray,
    current: np.ndarray,
    scenario: np.ndarray,
    scenario_times: np.ndarray,
    label: str = "Mace",
    clock: Clock | None = None,
    x_range: tuple[float, float] | None = None,
) -> dict[str, Any]:
    """The scenario's prediction of the estimator named ``label`` over the current
    deployment's (their time grids may differ; times in seconds since the run's start),
    on the page's shared ``clock`` over ``x_range`` (seconds since the start)."""
    clock = clock or Clock()
    lines = [
        plain_line(times, current, f"current {label}", PREDICTED),
        plain_line(scenario_times, scenario, f"scenario {label}", SCENARIO),
    ]
    for line in lines:
        line["x"] = clock.axis(line["x"])
    title = f"Predicted {label}: scenario vs current"
    layout = plain_layout(title, clock.title, f"{label} (s)", f"whatif-{clock.key}")
    layout["xaxis"].update(
        {"type": "date" if clock.wall else "linear", "hoverformat": clock.hoverformat}
    )
    if x_range is not None:
        layout["xaxis"]["range"] = clock.axis(list(x_range)).tolist()
    return {"data": lines, "layout": layout}


def query_change_figure(
    queries: Sequence[str],
    current: Sequence[float],
    scenario: Sequence[float],
    label: str = "Mace",
) -> dict[str, Any]:
    """Per-query worst case of the estimate (named ``label``), current vs scenario, as
    grouped bars."""
    layout = plain_layout(
        # short: the chart is narrow and its tool bar covers a long title
        f"{label} WC per query",
        "query",
        f"{label} WC (s)",
        "q",
    )
    layout["barmode"] = "group"
    return {
        "data": [
            {
                "type": "bar",
                "x": list(queries),
                "y": [float(v) for v in current],
                "name": "current",
                "hovertemplate": hover("current", "s"),
                "marker": {"color": PREDICTED},
            },
            {
                "type": "bar",
                "x": list(queries),
                "y": [float(v) for v in scenario],
                "name": "scenario",
                "hovertemplate": hover("scenario", "s"),
                "marker": {"color": SCENARIO},
            },
        ],
        "layout": layout,
    }


def deployment_figure(
    times: np.ndarray,
    measured: np.ndarray,
    recorded: np.ndarray,
    changed: np.ndarray,
    spread: tuple[np.ndarray, np.ndarray] | None = None,
    clock: Clock | None = None,
    x_range: tuple[float, float] | None = None,
) -> dict[str, Any]:
    """The system's latency per subinterval (``times`` in seconds since the run's
    start): measured, predicted as recorded and with the edits, and, on a real engine's
    run, the changed prediction with every record's work lower and higher (``spread``,
    dotted), on the page's ``clock`` over ``x_range``."""
    clock = clock or Clock()
    lines = [
        plain_line(times, measured, "measured", MEASURED),
        plain_line(times, recorded, "predicted, recorded", PREDICTED),
        plain_line(times, changed, "predicted, changed", SCENARIO),
    ]
    if spread is not None:
        names = (
            f"changed, work {WORK_SPREAD:.0%} lower",
            f"changed, work {WORK_SPREAD:.0%} higher",
        )
        for values, name in zip(spread, names, strict=True):
            line = plain_line(times, values, name, SCENARIO)
            line["line"] = {"color": SCENARIO, "dash": "dot", "width": 1}
            lines.append(line)
    for line in lines:
        line["x"] = clock.axis(line["x"])
    layout = plain_layout(DEPLOYMENT_TITLE, clock.title, "latency (s)", f"deployment-{clock.key}")
    layout["xaxis"].update(
        {"type": "date" if clock.wall else "linear", "hoverformat": clock.hoverformat}
    )
    if clock.wall:  # two lines of tick labels (time, then date) above the legend
        layout["legend"]["y"] = WALL_LEGEND_Y
    if x_range is not None:
        layout["xaxis"]["range"] = clock.axis(list(x_range)).tolist()
    return {"data": lines, "layout": layout}
