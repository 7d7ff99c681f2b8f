"""What a newcomer trips on, in the figures and texts themselves: an honest CE/C colour
scale, heatmap hovers on the shared clock, legends clear of a wall-clock axis title,
and counts in the singular."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from dashboard.core.deployment import deployment_text
from dashboard.core.timeaxis import Clock
from dashboard.nodes import figures as nodes_figures
from dashboard.shell.figures import (
    NO_BACKLOG_SCALE,
    WALL_LEGEND_Y,
    axes_layout,
    heat_axis,
    on_clock,
)

START = 1_795_000_000.0  # 2026-11-18 11:06:40 UTC


def test_the_ce_colour_scale_runs_from_zero_to_the_largest_value() -> None:
    flat = heat_axis({}, np.zeros((3, 4)))["coloraxis"]
    assert (flat["cmin"], flat["cmax"]) == (0.0, NO_BACKLOG_SCALE)  # not -0.5..0.5
    busy = heat_axis({}, np.array([[0.0, 2.5], [1.0, np.nan]]))["coloraxis"]
    assert (busy["cmin"], busy["cmax"]) == (0.0, 2.5)


def test_the_heatmap_hover_names_the_time_on_the_shared_clock() -> None:
    ce = np.zeros((1, 3))
    wall = nodes_figures.ce_heatmap(["n1"], np.arange(3.0), ce, 1.0, clock=Clock(START, True))
    assert "%{customdata} UTC" in wall.data[0].hovertemplate
    assert list(np.asarray(wall.data[0].customdata)[0]) == ["11:06:40", "11:06:41", "11:06:42"]
    since = nodes_figures.ce_heatmap(["n1"], np.arange(3.0), ce, 1.0)
    assert "t = %{customdata:.1f} s" in since.data[0].hovertemplate


def test_a_legend_under_a_wall_clock_axis_clears_its_title() -> None:
    wall = on_clock(axes_layout(go.Figure(), "t", "y"), Clock(START, True))
    assert wall.layout.legend.y == WALL_LEGEND_Y
    since = on_clock(axes_layout(go.Figure(), "t", "y"), Clock())
    assert since.layout.legend.y == -0.18


def test_one_taskmanager_is_not_plural() -> None:
    one = {"subtasks": 1, "taskmanagers": 1, "slots": 1, "cores": [2.0], "parallelism": {}}
    assert deployment_text(one) == "1 subtask; 1 TaskManager x 1 slot, 2 cores"
    two = {**one, "subtasks": 4, "taskmanagers": 2, "slots": 2}
    assert deployment_text(two) == "4 subtasks; 2 TaskManagers x 2 slots, 2 cores"
