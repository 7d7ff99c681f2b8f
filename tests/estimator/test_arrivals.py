"""Arrival matrices from stored (source, interval, events) rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from estimator.arrivals import arrivals_window


def test_window_sums_cells_and_leaves_out_other_sources_and_intervals() -> None:
    frame = pd.DataFrame(
        {
            "source": ["a", "b", "b", "x", "a", "a"],
            "interval": [2, 3, 3, 2, 1, 5],
            "events": [4.0, 1.0, 2.0, 9.0, 7.0, 8.0],
        }
    )
    arrivals = arrivals_window(("b", "a"), frame, 2, 5)
    assert arrivals.sources == ("b", "a")
    # columns are intervals 2, 3, 4; b's two rows at 3 add up; x, a@1 and a@5 are outside
    np.testing.assert_array_equal(arrivals.counts, [[0, 3, 0], [4, 0, 0]])


def test_empty_or_inverted_window() -> None:
    empty = pd.DataFrame({"source": [], "interval": [], "events": []})
    assert arrivals_window(("a",), empty, 0, 3).counts.tolist() == [[0, 0, 0]]
    assert arrivals_window(("a",), empty, 4, 2).counts.shape == (1, 0)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b", "c"]),
            st.integers(0, 8),
            st.floats(0, 1e6, allow_nan=False),
        ),
        max_size=30,
    ),
    st.integers(0, 4),
    st.integers(0, 9),
)
def test_window_matches_a_cell_by_cell_sum(
    rows: list[tuple[str, int, float]], start: int, stop: int
) -> None:
    frame = pd.DataFrame(rows, columns=["source", "interval", "events"])
    sources = ("b", "a")
    expected = np.zeros((2, max(0, stop - start)))
    for source, interval, events in rows:
        if source in sources and start <= interval < stop:
            expected[sources.index(source), interval - start] += events
    np.testing.assert_allclose(arrivals_window(sources, frame, start, stop).counts, expected)
