"""The mergeable latency histogram stored in ``latency_stats.histogram``.

Scheme (``HISTOGRAM_SCHEME``): ``BUCKETS`` counts over fixed log-spaced buckets.
Bucket 0 holds latencies below ``LOWEST`` (1 microsecond, including 0); bucket
``k`` (1 <= k <= ``BUCKETS - 2``) holds ``[LOWEST * 10**((k-1)/PER_DECADE),
LOWEST * 10**(k/PER_DECADE))``; the last bucket holds everything from
``10**DECADES * LOWEST`` (10 000 s) up. Buckets are the same for every run, so
histograms of any intervals and queries merge by adding counts, which keeps
rollups exact for counts, sums and max; quantiles read from a histogram are
within one bucket (about 12 % relative) of the exact value.
"""

from __future__ import annotations

import math

import numpy as np

LOWEST = 1e-6
PER_DECADE = 20
DECADES = 10
BUCKETS = PER_DECADE * DECADES + 2
HISTOGRAM_SCHEME = (
    f"log10 buckets: <{LOWEST:g}s, {PER_DECADE}/decade for {DECADES} decades, overflow"
)


def buckets_of(latencies: np.ndarray) -> np.ndarray:
    """The bucket index of each latency (seconds, not negative): 0 below ``LOWEST``,
    else 1 + floor(PER_DECADE * log10(latency / LOWEST)), capped at the last bucket.
    The one bucket formula: ingestion runs it on Spark's Arrow batches."""
    values = np.asarray(latencies, dtype=float)
    out = np.zeros(values.shape, dtype=np.int64)
    positive = values >= LOWEST
    raw = 1 + np.floor(PER_DECADE * np.log10(values[positive] / LOWEST))
    out[positive] = np.minimum(BUCKETS - 1, raw).astype(np.int64)
    return out


def histogram_of(latencies: np.ndarray) -> np.ndarray:
    """Bucket counts of a set of latencies."""
    return np.bincount(buckets_of(latencies), minlength=BUCKETS).astype(np.int64)


def bucket_bounds(index: int) -> tuple[float, float]:
    """Lower and upper edge of a bucket (bucket 0 starts at 0, the last one is unbounded)."""
    if index == 0:
        return 0.0, LOWEST
    lower = LOWEST * 10 ** ((index - 1) / PER_DECADE)
    upper = math.inf if index == BUCKETS - 1 else LOWEST * 10 ** (index / PER_DECADE)
    return lower, upper


def quantile_from_histogram(counts: np.ndarray, q: float, lat_max: float) -> float:
    """The q-quantile read from bucket counts, interpolated geometrically inside its bucket.

    The result is capped at ``lat_max`` (the exact maximum, kept beside the
    histogram). Returns NaN for an empty histogram.
    """
    total = int(np.sum(counts))
    if total == 0:
        return math.nan
    rank = max(1.0, q * total)
    cumulative = np.cumsum(counts)
    index = int(np.searchsorted(cumulative, rank))
    before = float(cumulative[index - 1]) if index else 0.0
    fraction = (rank - before) / float(counts[index])
    lower, upper = bucket_bounds(index)
    if index == 0:
        value = lower + (upper - lower) * fraction
    elif math.isinf(upper):
        value = lat_max
    else:
        value = lower * (upper / lower) ** fraction
    return min(value, lat_max)
