"""Latency rollups over stored latency_stats rows: exact counts, mean and max; merged quantiles."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dashboard.core.data import latency_rollup
from dashboard.core.errors import ViewError
from storage.histogram import histogram_of, quantile_from_histogram


def _row(query: str, interval: int, latencies: list[float]) -> dict[str, object]:
    values = np.array(latencies)
    return {
        "query": query,
        "interval": interval,
        "outputs": len(values),
        "lat_sum": values.sum(),
        "lat_max": values.max(),
        "lat_mean": values.mean(),
        "lat_p50": np.quantile(values, 0.5),
        "lat_p95": np.quantile(values, 0.95),
        "lat_p99": np.quantile(values, 0.99),
        "histogram": histogram_of(values),
    }


ROWS = pd.DataFrame(
    [
        _row("q1", 0, [0.1, 0.3]),
        _row("q1", 1, [0.2]),
        _row("q1", 2, [2.0, 4.0]),
        _row("q2", 1, [1.0]),
    ]
)


def test_groups_of_two_intervals_per_query() -> None:
    rollup = latency_rollup(ROWS, factor=2)
    assert rollup[["query", "interval", "outputs"]].values.tolist() == [
        ["q1", 0, 3],
        ["q1", 2, 2],
        ["q2", 0, 1],
    ]
    first, single, other = (rollup.iloc[k] for k in range(3))
    assert (first.lat_max, first.lat_mean) == (0.3, pytest.approx(0.6 / 3))
    # a merged group reads its quantiles from the sum of histograms, which is the
    # histogram of all its latencies
    merged = histogram_of(np.array([0.1, 0.3, 0.2]))
    assert first.lat_p95 == quantile_from_histogram(merged, 0.95, 0.3)
    # a group of one stored row keeps that row's exact quantiles
    assert (single.lat_p50, single.lat_max, single.lat_mean) == (3.0, 4.0, 3.0)
    assert (other.lat_p99, other.outputs) == (1.0, 1)


def test_system_rollup_merges_queries() -> None:
    rollup = latency_rollup(ROWS, by_query=False)
    columns = ["interval", "outputs", "lat_max", "lat_mean", "lat_p50", "lat_p95", "lat_p99"]
    assert list(rollup.columns) == columns
    assert rollup["outputs"].tolist() == [2, 2, 2]
    assert rollup["lat_max"].tolist() == [0.3, 1.0, 4.0]
    assert rollup["lat_mean"].tolist() == pytest.approx([0.2, 0.6, 3.0])


def test_empty_rows_and_bad_factor() -> None:
    assert latency_rollup(ROWS.iloc[:0]).empty
    with pytest.raises(ViewError, match="positive integer"):
        latency_rollup(ROWS, factor=0)
