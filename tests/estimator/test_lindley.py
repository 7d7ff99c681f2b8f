"""The vectorized Lindley form of CE against the plain recursion of Definition 8."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from estimator.kernels import node_matrices, node_pass, query_maxima
from estimator.mace import cumulative_excess, estimate_from_dlts, per_query_max


def ce_loop(dlts: list[float], service: float) -> list[float]:
    ce, out = 0.0, []
    for load in dlts:
        ce = max(0.0, ce + load - service)
        out.append(ce)
    return out


loads = st.floats(min_value=0.0, max_value=1e4, allow_nan=False, allow_infinity=False)


@given(
    dlts=arrays(np.float64, st.tuples(st.integers(1, 6), st.integers(1, 80)), elements=loads),
    services=st.lists(st.floats(min_value=1e-3, max_value=1e4), min_size=6, max_size=6),
)
@settings(max_examples=300, deadline=None)
def test_lindley_matches_loop(dlts: np.ndarray, services: list[float]) -> None:
    service = np.array(services[: dlts.shape[0]])
    fast = cumulative_excess(dlts, service)
    for row in range(dlts.shape[0]):
        expected = ce_loop(dlts[row].tolist(), float(service[row]))
        scale = max(1.0, float(np.abs(dlts[row]).sum()) + service[row] * dlts.shape[1])
        np.testing.assert_allclose(fast[row], expected, rtol=0, atol=1e-12 * scale)
        assert (fast[row] >= 0).all()


@given(
    dlts=arrays(np.float64, st.tuples(st.integers(1, 5), st.integers(1, 40)), elements=loads),
    caps=st.lists(st.floats(min_value=0.1, max_value=10.0), min_size=5, max_size=5),
    width=st.floats(min_value=0.1, max_value=5.0),
)
@settings(max_examples=200, deadline=None)
def test_mace_is_max_of_normalized_ce(dlts: np.ndarray, caps: list[float], width: float) -> None:
    capacity = np.array(caps[: dlts.shape[0]])
    names = [f"n{k}" for k in range(dlts.shape[0])]
    result = estimate_from_dlts(dlts, capacity, names, width, epsilon=0.01)
    for p in range(dlts.shape[1]):
        per_node = [
            ce_loop(dlts[r].tolist(), capacity[r] * width)[p] / capacity[r]
            for r in range(len(names))
        ]
        assert abs(result.series[p] - max(per_node)) <= 1e-9 * max(1.0, max(per_node))
        assert np.isclose(per_node[result.bottleneck_index[p]], max(per_node))
    np.testing.assert_allclose(result.upper, result.series + width + 0.01)
    assert result.worst_case == result.series.max()


@given(
    coef=arrays(
        np.float64, st.tuples(st.integers(1, 6), st.integers(1, 3)), elements=st.floats(0, 5)
    ),
    length=st.integers(1, 40),
    seed=st.integers(0, 2**16),
)
@settings(max_examples=150, deadline=None)
def test_fused_node_pass_matches_loop(coef: np.ndarray, length: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, width = coef.shape
    basis = rng.integers(0, 4, size=(width, length)).astype(float)
    capacity = rng.choice([0.5, 1.0, 2.0], size=n)
    service = capacity * 1.5
    query_mask = rng.random((2, n)) < 0.5
    dlts, ce_seconds = node_matrices(n, length)
    top_values, top_rows, peaks = node_pass(coef, basis, service, capacity, dlts, ce_seconds)
    np.testing.assert_allclose(dlts, coef @ basis, atol=1e-9)
    expected = np.array([ce_loop((coef[i] @ basis).tolist(), service[i]) for i in range(n)])
    expected /= capacity[:, None]
    np.testing.assert_allclose(ce_seconds, expected, atol=1e-9)
    np.testing.assert_array_equal(peaks, ce_seconds.max(axis=1))
    for p in range(length):
        ranked = sorted(range(n), key=lambda i: (-ce_seconds[i, p], i))[:3]
        np.testing.assert_array_equal(top_values[: len(ranked), p], ce_seconds[ranked, p])
        np.testing.assert_array_equal(top_rows[: len(ranked), p], ranked)
        assert (top_values[len(ranked) :, p] == -1).all() and (
            top_rows[len(ranked) :, p] == -1
        ).all()
    # the fused per-query pass is per_query_max, the one rule, for every query at once
    query_max = query_maxima(ce_seconds, query_mask)
    for q in range(2):
        np.testing.assert_array_equal(query_max[q], per_query_max(ce_seconds, query_mask[q]))
        rows = expected[query_mask[q]]
        np.testing.assert_allclose(query_max[q], rows.max(axis=0) if rows.size else 0.0, atol=1e-9)
