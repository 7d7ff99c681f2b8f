"""Compiled (numba) kernels for the evaluation hot path.

A full evaluation touches a (nodes x subintervals) matrix; at 400 x 3600 each
numpy pass over it costs about a millisecond of memory traffic, and the
vectorized Lindley form needs a dozen passes. :func:`node_pass` fuses them
into one pass per node row: node DLTS from the basis, the CE recursion, CE/C,
the node's peak CE/C and the per-column top-3
(which makes a later one-operator move exact while touching two rows). It
computes exactly Definition 8's recursion; the numpy Lindley form in
:mod:`estimator.mace` is the reference it is tested against.

A move changes two rows. :func:`move_series` evaluates one without changing
anything, :func:`target_scores` evaluates one operator's move to many targets,
and :func:`commit_rows` rewrites the two rows and repairs the top-3, rescanning
only the columns whose third place it can no longer vouch for. Every kernel
computes a row the same way (:func:`_row`), so a trial and the committed state
agree to the last bit with a full pass over the new coefficients.

The burst-aware estimate's two passes (:func:`peak_pass`, :func:`column_maxima`) live
here too: :mod:`estimator.burst` is imported wherever its sub-bucket count is (``mace
report``'s picker among them), and numba should load only when a kernel runs.

Helpers called once per subinterval take and return scalars only: a helper with
array arguments pays their reference counting on every call, which made a move
trial about five times slower.
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
def _row(
    coef: np.ndarray,
    basis: np.ndarray,
    service: float,
    capacity: float,
    dlts: np.ndarray,
    ce_seconds: np.ndarray,
) -> float:
    """One node's DLTS (``coef @ basis``) and CE/C by the recursion, written in place;
    returns the row's peak CE/C (0 for an empty row).

    One loop does it all: the recursion is a chain of dependent additions, and the
    independent work of each step (the DLTS sum, the division) overlaps it.
    """
    width, d = basis.shape
    ce = 0.0
    peak = 0.0
    for p in range(d):
        load = 0.0
        for b in range(width):
            load += coef[b] * basis[b, p]
        dlts[p] = load
        ce = ce + load - service
        if ce < 0.0:
            ce = 0.0
        value = ce / capacity
        ce_seconds[p] = value
        if value > peak:
            peak = value
    return peak


@njit(cache=True)
def _ahead(value: float, row: int, other_value: float, other_row: int) -> bool:
    """Whether (value, row) ranks before (other_value, other_row): larger value, then lower row."""
    return value > other_value or (value == other_value and row < other_row)


@njit(cache=True)
def _ranked(
    v0: float, r0: int, v1: float, r1: int, v2: float, r2: int, value: float, row: int
) -> tuple[float, int, float, int, float, int]:
    """A top-3 (v0, r0) .. (v2, r2) in ranking order with (value, row) inserted."""
    if not _ahead(value, row, v2, r2):
        return v0, r0, v1, r1, v2, r2
    if _ahead(value, row, v0, r0):
        return value, row, v0, r0, v1, r1
    if _ahead(value, row, v1, r1):
        return v0, r0, value, row, v1, r1
    return v0, r0, v1, r1, value, row


@njit(cache=True)
def _insert_row(values: np.ndarray, rows: np.ndarray, ce_seconds: np.ndarray, i: int) -> None:
    """Insert row ``i`` into every column of a top-3 that only holds rows below ``i``."""
    for p in range(ce_seconds.shape[0]):
        value = ce_seconds[p]
        if value > values[2, p]:  # rows arrive in increasing order: ties stay behind
            (values[0, p], rows[0, p], values[1, p], rows[1, p], values[2, p], rows[2, p]) = (
                _ranked(
                    values[0, p],
                    rows[0, p],
                    values[1, p],
                    rows[1, p],
                    values[2, p],
                    rows[2, p],
                    value,
                    i,
                )
            )


@njit(cache=True)
def node_pass(
    node_coef: np.ndarray,
    basis: np.ndarray,
    service: np.ndarray,
    capacity: np.ndarray,
    dlts: np.ndarray,
    ce_seconds: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fill ``dlts`` and ``ce_seconds`` (nodes x subintervals); return the top-3 values
    and rows of CE/C per subinterval and each node's peak CE/C.

    Top-3 entries not filled by a node hold value -1 and row -1 (CE is never
    negative); ties keep the lower node index first, like ``argmax``. The caller
    allocates the two matrices (see :func:`node_matrices`).
    """
    n, d = node_coef.shape[0], basis.shape[1]
    peaks = np.zeros(n)
    top_values = np.full((3, d), -1.0)
    top_rows = np.full((3, d), -1, dtype=np.int64)
    for i in range(n):
        peaks[i] = _row(node_coef[i], basis, service[i], capacity[i], dlts[i], ce_seconds[i])
        _insert_row(top_values, top_rows, ce_seconds[i], i)
    return top_values, top_rows, peaks


def node_matrices(nodes: int, intervals: int) -> tuple[np.ndarray, np.ndarray]:
    """Uninitialized DLTS and CE/C matrices for :func:`node_pass`, in one numpy buffer.

    One buffer, because two separate ones of half the size sit right at glibc's trim
    threshold: each evaluation handed them back to the OS and paid the page faults
    again (most of the old 20 ms at 400 x 3600). numpy, not numba, allocates it, so
    that large buffers are advised onto huge pages (2 MB page faults, not 4 kB).
    """
    both = np.empty((2, nodes, intervals))
    return both[0], both[1]


@njit(cache=True)
def _others(v0: float, r0: int, v1: float, r1: int, v2: float, skip_a: int, skip_b: int) -> float:
    """The largest value of a top-3 column over rows other than ``skip_a`` and ``skip_b``
    (v2, possibly the -1 filler, when the first two are skipped)."""
    if r0 != skip_a and r0 != skip_b:
        return v0
    if r1 != skip_a and r1 != skip_b:
        return v1
    return v2


@njit(cache=True)
def move_series(
    node_coef: np.ndarray,
    op_coef: np.ndarray,
    basis: np.ndarray,
    service: np.ndarray,
    capacity: np.ndarray,
    top_values: np.ndarray,
    top_rows: np.ndarray,
    src: int,
    dst: int,
) -> np.ndarray:
    """Mace per subinterval if the operator with load coefficients ``op_coef`` moved
    from node ``src`` to node ``dst`` (no state changes; ``src != dst``)."""
    d = basis.shape[1]
    scratch = np.empty(d)
    src_ce = np.empty(d)
    dst_ce = np.empty(d)
    _row(node_coef[src] - op_coef, basis, service[src], capacity[src], scratch, src_ce)
    _row(node_coef[dst] + op_coef, basis, service[dst], capacity[dst], scratch, dst_ce)
    series = np.empty(d)
    for p in range(d):
        value = src_ce[p]
        if dst_ce[p] > value:
            value = dst_ce[p]
        other = _others(
            top_values[0, p],
            top_rows[0, p],
            top_values[1, p],
            top_rows[1, p],
            top_values[2, p],
            src,
            dst,
        )
        if other > value:
            value = other
        series[p] = value
    return series


@njit(cache=True)
def target_scores(
    node_coef: np.ndarray,
    op_coef: np.ndarray,
    basis: np.ndarray,
    service: np.ndarray,
    capacity: np.ndarray,
    top_values: np.ndarray,
    top_rows: np.ndarray,
    src: int,
    targets: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, float]:
    """Moving one operator off ``src`` to each of ``targets``: MaceWC after each move,
    each target's new peak CE/C, and the source's new peak CE/C."""
    d = basis.shape[1]
    scratch = np.empty(d)
    src_ce = np.empty(d)
    src_peak = _row(node_coef[src] - op_coef, basis, service[src], capacity[src], scratch, src_ce)
    # per subinterval, the two largest CE/C of nodes other than src (and the first's row)
    a_val = np.empty(d)
    a_row = np.empty(d, dtype=np.int64)
    b_val = np.empty(d)
    for p in range(d):
        r = 0
        if top_rows[0, p] == src:
            r = 1
        a_val[p], a_row[p] = top_values[r, p], top_rows[r, p]
        r += 1
        if top_rows[r, p] == src:
            r += 1
        b_val[p] = top_values[r, p] if r < 3 else -1.0
    values = np.empty(targets.size)
    peaks = np.empty(targets.size)
    dst_ce = np.empty(d)
    for k in range(targets.size):
        dst = targets[k]
        peaks[k] = _row(
            node_coef[dst] + op_coef, basis, service[dst], capacity[dst], scratch, dst_ce
        )
        worst = 0.0
        for p in range(d):
            value = src_ce[p]
            if dst_ce[p] > value:
                value = dst_ce[p]
            other = a_val[p] if a_row[p] != dst else b_val[p]
            if other > value:
                value = other
            if value > worst:
                worst = value
        values[k] = worst
    return values, peaks, src_peak


@njit(cache=True)
def commit_rows(
    node_coef: np.ndarray,
    basis: np.ndarray,
    service: np.ndarray,
    capacity: np.ndarray,
    dlts: np.ndarray,
    ce_seconds: np.ndarray,
    top_values: np.ndarray,
    top_rows: np.ndarray,
    peaks: np.ndarray,
    src: int,
    dst: int,
) -> int:
    """Recompute rows ``src`` and ``dst`` from ``node_coef`` and repair the top-3 in place.

    In a column where a top-3 entry belonged to src or dst, the rows left over plus
    the two new values are exact only if the new third place ranks ahead of the old
    third or is that same, unchanged row (every row outside the old top-3 ranks
    behind it); other such columns are rescanned over all rows. Returns the number
    of columns rescanned.
    """
    n, d = ce_seconds.shape
    for i in (src, dst):
        peaks[i] = _row(node_coef[i], basis, service[i], capacity[i], dlts[i], ce_seconds[i])
    rescan = np.empty(d, dtype=np.int64)
    count = 0
    lo, hi = min(src, dst), max(src, dst)
    for p in range(d):
        old_value, old_row = top_values[2, p], top_rows[2, p]
        v0, r0, v1, r1, v2, r2 = -1.0, -1, -1.0, -1, -1.0, -1
        removed = 0
        for r in range(3):  # the entries of rows other than src and dst, in order
            row = top_rows[r, p]
            if row != src and row != dst:
                v0, r0, v1, r1, v2, r2 = _ranked(v0, r0, v1, r1, v2, r2, top_values[r, p], row)
            else:
                removed += 1
        v0, r0, v1, r1, v2, r2 = _ranked(v0, r0, v1, r1, v2, r2, ce_seconds[lo, p], lo)
        v0, r0, v1, r1, v2, r2 = _ranked(v0, r0, v1, r1, v2, r2, ce_seconds[hi, p], hi)
        vouched = _ahead(v2, r2, old_value, old_row) or (r2 == old_row and r2 != src and r2 != dst)
        if removed and n > 3 and not vouched:
            rescan[count] = p
            count += 1
        top_values[0, p], top_rows[0, p] = v0, r0
        top_values[1, p], top_rows[1, p] = v1, r1
        top_values[2, p], top_rows[2, p] = v2, r2
    for k in range(count):
        p = rescan[k]
        v0, r0, v1, r1, v2, r2 = -1.0, -1, -1.0, -1, -1.0, -1
        for i in range(n):
            if ce_seconds[i, p] > v2:
                v0, r0, v1, r1, v2, r2 = _ranked(v0, r0, v1, r1, v2, r2, ce_seconds[i, p], i)
        top_values[0, p], top_rows[0, p] = v0, r0
        top_values[1, p], top_rows[1, p] = v1, r1
        top_values[2, p], top_rows[2, p] = v2, r2
    return count


@njit(cache=True)
def query_maxima(ce_seconds: np.ndarray, hosts: np.ndarray) -> np.ndarray:
    """:func:`estimator.mace.per_query_max` for every row of ``hosts`` (queries x
    resources, fixed masks) in one pass over ``ce_seconds``."""
    n, d = ce_seconds.shape
    out = np.zeros((hosts.shape[0], d))
    for i in range(n):
        for q in range(hosts.shape[0]):
            if hosts[q, i]:
                for p in range(d):
                    if ce_seconds[i, p] > out[q, p]:
                        out[q, p] = ce_seconds[i, p]
    return out


def warm_up() -> None:
    """Compile (or load from numba's cache) the evaluation and move kernels on a
    two-node problem, so that a time-budgeted search does not spend its budget on it."""
    coef, basis = scatter_rows(np.zeros(1, np.int64), np.ones((1, 1)), 2), np.ones((1, 2))
    service, capacity = np.ones(2), np.ones(2)
    dlts, ce_seconds = node_matrices(2, 2)
    top_values, top_rows, peaks = node_pass(coef, basis, service, capacity, dlts, ce_seconds)
    move_series(coef, coef[0], basis, service, capacity, top_values, top_rows, 0, 1)
    target_scores(
        coef, coef[0], basis, service, capacity, top_values, top_rows, 0, np.ones(1, np.int64)
    )
    commit_rows(coef, basis, service, capacity, dlts, ce_seconds, top_values, top_rows, peaks, 0, 1)
    query_maxima(ce_seconds, np.ones((1, 2), dtype=np.bool_))


@njit(cache=True)
def peak_pass(
    dlts: np.ndarray, service: np.ndarray, head: np.ndarray, rise: np.ndarray, tail: np.ndarray
) -> np.ndarray:
    """Per resource and subinterval, the peak backlog inside the subinterval from its
    burst profile (:func:`estimator.burst.peak_backlog`)."""
    resources, intervals = dlts.shape
    out = np.empty((resources, intervals))
    for i in range(resources):
        end = 0.0
        for p in range(intervals):
            out[i, p] = max(end + head[i, p], rise[i, p], 0.0)
            end = max(end + dlts[i, p] - service[i], tail[i, p], 0.0)
    return out


@njit(cache=True)
def column_maxima(
    peak_seconds: np.ndarray, masks: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per subinterval: the largest value and its row (first on ties, like argmax), and
    the largest value over the rows of each mask (0 when a mask is empty)."""
    resources, intervals = peak_seconds.shape
    best = np.full(intervals, -1.0)
    row = np.zeros(intervals, dtype=np.int64)
    per_mask = np.zeros((masks.shape[0], intervals))
    for i in range(resources):
        for p in range(intervals):
            value = peak_seconds[i, p]
            if value > best[p]:
                best[p] = value
                row[p] = i
        for q in range(masks.shape[0]):
            if masks[q, i]:
                for p in range(intervals):
                    if peak_seconds[i, p] > per_mask[q, p]:
                        per_mask[q, p] = peak_seconds[i, p]
    return best, row, per_mask
