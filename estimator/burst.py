"""Burst-aware latency estimate: Mace with a per-subinterval summary of the arrival profile.

Why. Mace's CE_p/C is the backlog at the *end* of subinterval p. Theorem 3
assumes (A-2) that work arrives evenly inside a subinterval; On-Off sources
burst inside it, and the backlog peaks before the end, so Mace misses an offset
of order w (docs/accuracy.md). Refining w fixes it at k times the rows. This
module keeps w and adds three numbers per resource and subinterval, computed
from the work in k equal sub-buckets of the subinterval (by stimulus time),
that reproduce exactly the Lindley recursion run at sub-bucket resolution.

The maths. For resource i and subinterval p let u_j be the work of sub-bucket
j = 1..k minus the service C w / k, and S_j = u_1 + ... + u_j (S_0 = 0, so
S_k = L_p - C w). From a backlog b at the start of p, the backlog after
sub-bucket j is max(b + S_j, S_j - min_{m<=j} S_m) (Lindley). So

    head_p = max_{1<=j<=k} S_j                       (peak from b, minus b)
    rise_p = max_{1<=j<=k} (S_j - min_{0<=m<=j} S_m)  (peak from an empty queue)
    tail_p = S_k - min_{0<=m<=k} S_m                  (end backlog from an empty queue)

give B_p = max(B_{p-1} + S_k, tail_p) (end backlog, B_{-1} = 0) and the peak
backlog inside p, peak_p = max(B_{p-1} + head_p, rise_p). The estimate of
subinterval p is max over resources of peak_p / C (per query: over the
resources hosting it). The end recursion is max-plus linear, so it is one
single pass per resource, like Mace's Lindley recursion.

Properties (tested against a plain loop): with one sub-bucket (k = 1) it is
Mace; it is never below Mace; it is monotone in the work of every sub-bucket;
and it equals Mace computed at w / k and maximised over each subinterval's k
sub-buckets. With an even profile (every sub-bucket holds L_p / k, the paper's
A-2) it exceeds Mace only while a backlog drains (the events early in p wait
for what is left of p - 1), by less than w. Mace's lower-bound argument
applies to each sub-bucket that holds an event (its work cannot finish before
the peak backlog drains); it was below the measured latency in every held-out
subinterval. The band reported is [estimate, upper] with
upper = max(estimate, :func:`path_sum`) + 2 w / k + eps: on one node the
bursty-arrival form of Theorem 3 at sub-bucket resolution; on several nodes the
path sum adds the peaks met along a machine path, an empirical figure
(docs/accuracy.md: it held in 96.7% of held-out subintervals, not 99%).

Where the summary comes from. :func:`sub_bucket_work` bins per-execution
records (resource row, stimulus time, CPU-seconds) into (resources x D x k), with
the rule of :func:`sub_bucket_of`; ingestion stores the same bins per node
(``node_profile``, computed by Spark with the same expression) and
:func:`burst_profile` reduces them to (head, rise, tail) when a run is analysed
(the reduction depends on the capacities, which what-if may change). A prediction
gets the bins the fitted model gives from the arrivals per sub-bucket (ingestion's
``source_profile``, same expression; :func:`estimator.runs.predicted_node_profile`).
Without a profile (a prediction from arrivals per subinterval only, a run measured by
counters or ingested before migration 8) the registered ``burst`` estimator falls
back to one sub-bucket, i.e. to Mace's series with the band [Mace, Mace + 2w + eps].
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from estimator.errors import ModelError
from estimator.mace import Estimate

SUB_BUCKETS = 32
"""Sub-buckets per subinterval of a newly ingested profile, and the per-origin replay's
step without one (w / 32). 8 was chosen for burst-aware on the tuning seed; 32 because
the per-origin replay's step of w / 8 was what kept its per-query error above 2%
(docs/accuracy.md). Runs ingested with 8 keep 8 (``runs.profile_sub_buckets``)."""


@dataclass(frozen=True)
class BurstProfile:
    """Per resource and subinterval (resources x D): the three profile summaries above,
    in resource units (CPU-seconds or bytes), and the sub-bucket count they came from."""

    head: np.ndarray
    rise: np.ndarray
    tail: np.ndarray
    sub_buckets: int


def sub_bucket_of(relative: np.ndarray, subinterval: float, sub_buckets: int) -> np.ndarray:
    """Interval and sub-bucket of each time (seconds since the origin), (2 x n) integers.

    interval = floor(t / w) as everywhere (docs/design.md, "DuckDB store"), and the sub-bucket
    floor((t / w - interval) * k), clipped to [0, k - 1], so that a record's sub-bucket
    always lies inside the interval its operator_stats row is counted in. Ingestion
    computes the same expression in Spark (:func:`ingest.transforms.node_profile_cells`).
    """
    scaled = np.asarray(relative, dtype=float) / subinterval
    interval = np.floor(scaled)
    bucket = np.clip(np.floor((scaled - interval) * sub_buckets), 0, sub_buckets - 1)
    return np.vstack([interval, bucket]).astype(np.int64)


def sub_bucket_work(
    rows: np.ndarray,
    stimulus: np.ndarray,
    work: np.ndarray,
    resources: int,
    subinterval: float,
    sub_buckets: int,
    intervals: int,
) -> np.ndarray:
    """Work per resource, subinterval and sub-bucket (resources x D x k) from per-execution
    records: the resource row, the stimulus time (since the origin, binned by
    :func:`sub_bucket_of`) and the work (CPU-seconds or bytes) of each. Records stimulated
    outside the D subintervals are dropped."""
    if sub_buckets < 1:
        raise ModelError(f"burst: sub_buckets must be at least 1, got {sub_buckets}")
    interval, bucket = sub_bucket_of(stimulus, subinterval, sub_buckets)
    keep = (interval >= 0) & (interval < intervals)
    out = np.zeros((resources, intervals, sub_buckets))
    np.add.at(
        out,
        (np.asarray(rows, dtype=np.int64)[keep], interval[keep], bucket[keep]),
        np.asarray(work, dtype=float)[keep],
    )
    return out


def burst_profile(fine_work: np.ndarray, service: np.ndarray) -> BurstProfile:
    """(head, rise, tail) of each resource and subinterval from its sub-bucket work
    (resources x D x k); ``service`` is C * w per resource."""
    fine = np.asarray(fine_work, dtype=float)
    k = fine.shape[2]
    excess = fine - (np.asarray(service, dtype=float) / k)[:, None, None]
    running = np.cumsum(excess, axis=2)
    floor = np.minimum(np.minimum.accumulate(running, axis=2), 0.0)
    lifted = running - floor
    return BurstProfile(
        head=running.max(axis=2),
        rise=lifted.max(axis=2),
        tail=np.ascontiguousarray(lifted[:, :, -1]),
        sub_buckets=k,
    )


def even_profile(dlts: np.ndarray, service: np.ndarray, sub_buckets: int = 1) -> BurstProfile:
    """The profile of work spread evenly over ``sub_buckets`` sub-buckets of each
    subinterval (the paper's A-2); with one sub-bucket, Mace's own recursion."""
    dlts = np.asarray(dlts, dtype=float)
    excess = dlts - np.asarray(service, dtype=float)[:, None]
    head = np.maximum(excess, excess / sub_buckets)
    positive = np.maximum(excess, 0.0)
    return BurstProfile(head=head, rise=positive, tail=positive, sub_buckets=sub_buckets)


def peak_backlog(dlts: np.ndarray, service: np.ndarray, profile: BurstProfile) -> np.ndarray:
    """Peak backlog inside each subinterval (resources x D, resource units).

    B_p = max(B_{p-1} + L_p - C w, tail_p), peak_p = max(B_{p-1} + head_p, rise_p):
    one fused pass over the matrix (a compiled loop; the numpy form needs a dozen
    passes and was 3x Mace's evaluation at 400 nodes x 3600 subintervals).
    """
    from estimator.kernels import peak_pass  # numba loads when a profile is used

    return peak_pass(
        np.ascontiguousarray(dlts, dtype=float),
        np.ascontiguousarray(service, dtype=float),
        np.ascontiguousarray(profile.head, dtype=float),
        np.ascontiguousarray(profile.rise, dtype=float),
        np.ascontiguousarray(profile.tail, dtype=float),
    )


def with_even_rows(profile: BurstProfile, dlts: np.ndarray, service: np.ndarray) -> BurstProfile:
    """``profile`` (first rows) extended to every row of ``dlts`` with the even profile
    (resources without a measured profile, e.g. links)."""
    rows = profile.head.shape[0]
    if rows == dlts.shape[0]:
        return profile
    full = even_profile(dlts[rows:], service[rows:], profile.sub_buckets)
    parts = []
    for mine, even in (
        (profile.head, full.head),
        (profile.rise, full.rise),
        (profile.tail, full.tail),
    ):
        parts.append(np.vstack([mine, even]))
    return BurstProfile(parts[0], parts[1], parts[2], profile.sub_buckets)


def path_sum(peak_seconds: np.ndarray, paths: Sequence[Sequence[int]]) -> np.ndarray:
    """Per subinterval, the largest sum along one path of its resources' peak backlog (s)
    in p or p + 1 (an event of p reaches a downstream node up to a subinterval later)."""
    later = np.concatenate([peak_seconds[:, 1:], peak_seconds[:, -1:]], axis=1)
    reach = np.maximum(peak_seconds, later)
    out = np.zeros(peak_seconds.shape[1])
    for rows in paths:
        out = np.maximum(out, reach[list(rows)].sum(axis=0))
    return out


def burst_from_profile(
    base: Estimate,
    profile: BurstProfile,
    query_rows: Mapping[str, np.ndarray],
    paths: Sequence[Sequence[int]] = (),
) -> Estimate:
    """The burst-aware Estimate from a Mace Estimate and the profile of its resources
    (the first rows; the others keep the even profile).

    ``series`` is the maximum over resources of peak backlog / C (never below Mace);
    ``lower`` stays Mace's; ``upper`` is the larger of series and :func:`path_sum` over
    ``paths`` (resource rows of each source-to-sink machine path) plus 2 w / k + eps;
    ``query_rows`` maps a query to the boolean mask of resources hosting it, as for Mace.
    """
    if base.series.size == 0:
        return base
    service = base.capacities * base.subinterval
    merged = with_even_rows(profile, base.dlts, service)
    peak_seconds = peak_backlog(base.dlts, service, merged)
    peak_seconds /= base.capacities[:, None]
    names = list(query_rows)
    masks = np.zeros((len(names), peak_seconds.shape[0]), dtype=np.bool_)
    for k, name in enumerate(names):
        masks[k] = query_rows[name]
    from estimator.kernels import column_maxima

    series, bottleneck, per_query = column_maxima(peak_seconds, masks)
    upper = path_sum(peak_seconds, paths) if paths else series.copy()
    np.maximum(upper, series, out=upper)
    upper += 2 * base.subinterval / profile.sub_buckets + base.epsilon
    return replace(
        base,
        series=series,
        bottleneck_index=bottleneck,
        upper=upper,
        per_query={name: per_query[k] for k, name in enumerate(names)},
    )
