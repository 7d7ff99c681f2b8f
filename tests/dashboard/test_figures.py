"""Figure builders as plain functions."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from dashboard.core.timeaxis import Clock
from dashboard.nodes import figures as nodes_figures
from dashboard.overview import figures as overview_figures
from dashboard.shell import figures as shell_figures
from dashboard.whatif import figures as whatif_figures


@given(
    st.lists(st.floats(0, 1e6) | st.just(float("nan")), min_size=1, max_size=300),
    st.integers(1, 50),
)
def test_decimate_max_keeps_each_bucket_max(values: list[float], max_points: int) -> None:
    series = np.array(values)
    index, picked = shell_figures.decimate_max(series, max_points)
    size = 1 if len(values) <= max_points else -(-len(values) // max_points)
    # one point per bucket of `size` values, never more than max_points
    assert len(index) == len(picked) == -(-len(values) // size)
    assert len(index) <= max_points
    for k, (i, v) in enumerate(zip(index, picked, strict=True)):
        bucket = series[k * size : (k + 1) * size]
        finite = bucket[np.isfinite(bucket)]
        if finite.size:
            assert v == finite.max()
            assert series[i] == v
        else:
            assert np.isnan(v)


def _panels(clock: Clock, **extra: object) -> dict:
    times = np.arange(5.0)
    latency = overview_figures.LatencySeries(
        measured_max=np.array([0.1, 0.5, np.nan, 0.2, 0.3]),
        measured_p99=np.array([0.1, 0.4, np.nan, 0.2, 0.2]),
        estimated=np.array([0.0, 0.3, 0.2, 0.1, 0.0]),
        lower=np.array([0.0, 0.3, 0.2, 0.1, 0.0]),
        upper=np.array([1.2, 1.5, 1.4, 1.3, 1.2]),
        predicted=np.array([0.0, 0.2, 0.2, 0.1, 0.0]),
    )
    return overview_figures.overview_panels(
        clock,
        times,
        latency,
        subinterval=1.0,
        node_ids=["n1", "n2"],
        ce_seconds=np.array([[0.0, 0.3, 0.2, 0.1, 0.0], [0.0, 0.1, 0.0, 0.0, 0.0]]),
        bottleneck=["n1", "n1", "n2", "n1", "n1"],
        sources=["s"],
        rates=np.array([[5.0, 12.0, 5.0, 0.0, 10.0]]),
        x_range=(0.0, 5.0),
        **extra,  # type: ignore[arg-type]
    )


def test_overview_panels_share_one_time_axis() -> None:
    fig = _panels(
        Clock(),
        changes=[shell_figures.Span(2.0, 2.0, "(version 2)")],
        violations=[(shell_figures.Span(1.0, 2.0, "q1 above 0.4 s"), 0.4)],
        uirevision="keep",
    )
    layout = fig["layout"]
    # one x axis: every panel's y axis is anchored to it, and no trace names another
    assert [layout[f"yaxis{k}"]["anchor"] for k in ("", "2", "3", "4")] == ["x"] * 4
    assert all("xaxis" not in trace for trace in fig["data"])
    assert {trace.get("yaxis") for trace in fig["data"]} == {"y", "y2", "y3", "y4"}
    assert layout["xaxis"]["range"] == [0.0, 5.0]
    assert layout["xaxis"]["title"]["text"] == "time since run start (s)"
    names = [trace["name"] for trace in fig["data"]]
    assert {"measured max", "estimated Mace", "predicted Mace", "s"} <= set(names)
    band = next(t for t in fig["data"] if t.get("fill") == "tonexty")
    np.testing.assert_array_equal(band["y"], [0.0, 0.3, 0.2, 0.1, 0.0])
    # the change is a dashed line across all panels, the violation a shaded range
    line = next(s for s in layout["shapes"] if s["type"] == "line")
    assert (line["x0"], line["yref"]) == (2.0, "paper")
    rect = next(s for s in layout["shapes"] if s["type"] == "rect")
    assert (rect["x0"], rect["x1"], rect["yref"]) == (1.0, 2.0, "paper")
    violated = next(t for t in fig["data"] if t["name"] == "objective violated")
    assert violated["y"][:3] == [0.4, 0.4, 0.4] and violated["text"][0] == "q1 above 0.4 s"
    # the bottleneck strip marks n1 where the estimate is positive (1, 3) and n2 at 2
    strip = {t["name"]: list(t["x"]) for t in fig["data"] if t.get("yaxis") == "y4"}
    assert strip == {"n1": [1.0, 3.0], "n2": [2.0]}
    assert layout["uirevision"] == "keep"


def test_overview_panels_on_the_wall_clock() -> None:
    fig = _panels(Clock(start=1_795_000_000.0, wall=True))
    axis = fig["layout"]["xaxis"]
    assert axis["type"] == "date" and axis["title"]["text"] == "wall clock (UTC)"
    # dates as text: a date axis shows them as they are (a number of milliseconds would
    # be read in the browser's zone)
    assert axis["range"] == ["2026-11-18T11:06:40", "2026-11-18T11:06:45"]
    measured = next(t for t in fig["data"] if t["name"] == "measured max")
    assert list(measured["x"])[1] == "2026-11-18T11:06:41"


def test_estimate_comparison_is_a_plain_figure_with_both_curves() -> None:
    fig = whatif_figures.estimate_comparison_figure(
        np.arange(4.0), np.array([0, 1, 2, 1.0]), np.array([0, 3.0]), np.array([0.0, 2.0])
    )
    current, scenario = fig["data"]
    np.testing.assert_array_equal(current["y"], [0, 1, 2, 1])
    np.testing.assert_array_equal(scenario["x"], [0.0, 2.0])
    assert fig["layout"]["uirevision"] == "whatif-since"  # a new clock: a new zoom


def test_bottleneck_figure_only_where_backlog() -> None:
    fig = nodes_figures.bottleneck_figure(
        np.arange(4.0), ["n1", "n2", "n2", "n1"], np.array([0.0, 1.0, 2.0, 0.5]), ["n1", "n2"]
    )
    points = {t.name: list(t.x) for t in fig.data}
    assert points == {"n1": [3.0], "n2": [1.0, 2.0]}
