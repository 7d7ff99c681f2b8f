"""Figure builders as plain functions."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from dashboard import figures


@given(
    st.lists(st.floats(0, 1e6) | st.just(float("nan")), min_size=1, max_size=300),
    st.integers(1, 50),
)
def test_decimate_max_keeps_each_bucket_max(values: list[float], max_points: int) -> None:
    series = np.array(values)
    index, picked = figures.decimate_max(series, max_points)
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


def test_latency_figure_has_band_lines_and_change_marks() -> None:
    times = np.arange(5.0)
    fig = figures.latency_figure(
        times,
        np.array([0.1, 0.5, np.nan, 0.2, 0.3]),
        np.array([0.1, 0.4, np.nan, 0.2, 0.2]),
        np.array([0.0, 0.3, 0.2, 0.1, 0.0]),
        np.array([1.2, 1.5, 1.4, 1.3, 1.2]),
        change_times=[2.0],
        uirevision="keep",
    )
    names = [t.name for t in fig.data]
    assert "measured max" in names and "estimated Mace" in names
    band = fig.data[1]
    assert band.fill == "tonexty"
    assert list(fig.data[0].y) == [1.2, 1.5, 1.4, 1.3, 1.2]
    assert fig.layout.uirevision == "keep"
    assert [s.x0 for s in fig.layout.shapes] == [2.0]


def test_estimate_comparison_is_a_plain_figure_with_both_curves() -> None:
    fig = figures.estimate_comparison_figure(
        np.arange(4.0), np.array([0, 1, 2, 1.0]), np.array([0, 3.0]), np.array([0.0, 2.0])
    )
    current, scenario = fig["data"]
    np.testing.assert_array_equal(current["y"], [0, 1, 2, 1])
    np.testing.assert_array_equal(scenario["x"], [0.0, 2.0])
    assert fig["layout"]["uirevision"] == "whatif"


def test_bottleneck_figure_only_where_backlog() -> None:
    fig = figures.bottleneck_figure(
        np.arange(4.0), ["n1", "n2", "n2", "n1"], np.array([0.0, 1.0, 2.0, 0.5]), ["n1", "n2"]
    )
    points = {t.name: list(t.x) for t in fig.data}
    assert points == {"n1": [3.0], "n2": [1.0, 2.0]}
