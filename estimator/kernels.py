"""Compiled (numba) kernels for the evaluation hot path.

A full evaluation touches a (nodes x subintervals) matrix; at 400 x 3600 each
numpy pass over it costs about a millisecond of memory traffic, and the
vectorized Lindley form needs a dozen passes. :func:`node_pass` fuses them
into one: node DLTS from the basis, the CE recursion, CE/C, the per-column
top-3 (which makes a later one-operator move exact while touching two rows)
and the per-query maxima. It computes exactly Definition 8's recursion; the
numpy Lindley form in :mod:`estimator.mace` is the reference it is tested
against.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def scatter_rows(assignment: np.ndarray, rows: np.ndarray, n_groups: int) -> np.ndarray:
    """Sum ``rows`` into ``n_groups`` groups given each row's group index."""
    out = np.zeros((n_groups, rows.shape[1]))
    for r in range(rows.shape[0]):
        g = assignment[r]
        for c in range(rows.shape[1]):
            out[g, c] += rows[r, c]
    return out


@njit(cache=True)
def node_pass(
    node_coef: np.ndarray,
    basis: np.ndarray,
    service: np.ndarray,
    capacity: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """DLTS, CE/C, and the top-3 values and rows of CE/C per subinterval.

    Top-3 entries not filled by a node hold value -1 and row -1 (CE is never
    negative); ties keep the lower node index first, like ``argmax``.
    """
    n, width = node_coef.shape
    d = basis.shape[1]
    dlts = np.empty((n, d))
    ce_seconds = np.empty((n, d))
    top_values = np.full((3, d), -1.0)
    top_rows = np.full((3, d), -1, dtype=np.int64)
    for i in range(n):
        ce = 0.0
        for p in range(d):
            load = 0.0
            for b in range(width):
                load += node_coef[i, b] * basis[b, p]
            dlts[i, p] = load
            ce = ce + load - service[i]
            if ce < 0.0:
                ce = 0.0
            value = ce / capacity[i]
            ce_seconds[i, p] = value
            if value > top_values[2, p]:
                if value > top_values[0, p]:
                    top_values[2, p] = top_values[1, p]
                    top_rows[2, p] = top_rows[1, p]
                    top_values[1, p] = top_values[0, p]
                    top_rows[1, p] = top_rows[0, p]
                    top_values[0, p] = value
                    top_rows[0, p] = i
                elif value > top_values[1, p]:
                    top_values[2, p] = top_values[1, p]
                    top_rows[2, p] = top_rows[1, p]
                    top_values[1, p] = value
                    top_rows[1, p] = i
                else:
                    top_values[2, p] = value
                    top_rows[2, p] = i
    return dlts, ce_seconds, top_values, top_rows
