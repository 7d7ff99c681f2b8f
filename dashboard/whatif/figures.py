"""The What-if page's figures: the current and the scenario's estimates side by side."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dashboard.core.timeaxis import Clock
from dashboard.shell.figures import hover, plain_layout, plain_line
from dashboard.shell.theme import PREDICTED, SCENARIO

LATENCY_TITLE = "Predicted latency: scenario vs current"
QUERY_TITLE = "Worst case per query"
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
