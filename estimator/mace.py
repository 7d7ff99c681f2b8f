"""Cumulative excess, Mace and its bounds (docs/design.md, "CE and Mace"), vectorized.

CE follows Lindley's recursion CE_p = max(0, CE_{p-1} + L_p - C*w). With S the
running sum of (L - C*w) and S_0 = 0, CE_p = S_p - min_{k<=p} S_k, so every
resource and subinterval is computed with one cumulative sum and one running
minimum instead of a Python loop.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

QUANTILES = (0.5, 0.9, 0.95, 0.99)


def cumulative_excess(dlts: np.ndarray, service: np.ndarray | float) -> np.ndarray:
    """CE for each row of ``dlts`` (resources x subintervals); ``service`` is C*w per row."""
    load = np.asarray(dlts, dtype=float)
    per_row = np.asarray(service, dtype=float)
    if per_row.ndim == 1 and load.ndim == 2:
        per_row = per_row[:, None]
    running = np.cumsum(load - per_row, axis=-1)
    floor = np.minimum.accumulate(running, axis=-1)
    np.minimum(floor, 0.0, out=floor)
    running -= floor
    np.maximum(running, 0.0, out=running)  # rounding can leave -1e-16 where the loop gives 0
    return running


def mace_series(ce_seconds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mace per subinterval (max over resources of CE/C) and the bottleneck row index."""
    bottleneck = np.argmax(ce_seconds, axis=0)
    mace = np.take_along_axis(ce_seconds, bottleneck[None, :], axis=0)[0]
    return mace, bottleneck


def per_query_max(ce_seconds: np.ndarray, hosts: np.ndarray) -> np.ndarray:
    """A query's Mace per subinterval: the maximum of CE/C over the resources hosting it.

    ``hosts`` is the boolean mask of those resources, either fixed (resources,) or per
    subinterval (resources x subintervals, when the placement changes over time); a
    subinterval where no resource hosts the query gives 0. This is the one rule for
    per-query Mace (docs/design.md, "CE and Mace"); the evaluator and the run analysis call it.
    """
    mask = np.asarray(hosts, dtype=bool)
    if mask.ndim == 1:
        mask = mask[:, None]
    return np.max(ce_seconds, axis=0, where=mask, initial=0.0)


def series_summary(series: np.ndarray) -> dict[str, float]:
    """Worst case, mean and quantiles across time of a per-subinterval series."""
    if series.size == 0:
        return {"max": 0.0, "mean": 0.0, **{f"p{round(q * 100)}": 0.0 for q in QUANTILES}}
    values = np.quantile(series, QUANTILES)
    return {
        "max": float(series.max()),
        "mean": float(series.mean()),
        **{f"p{round(q * 100)}": float(v) for q, v in zip(QUANTILES, values, strict=True)},
    }


@dataclass(frozen=True)
class Estimate:
    """The estimator's figures for one topology, placement and arrival series.

    ``resources`` are node ids followed by any finite-bandwidth link resources
    (named ``src->dst``); ``ce`` is in resource units (CPU-seconds or bytes) and
    ``ce_seconds`` is CE divided by capacity, in seconds. ``series`` is the latency
    series of the estimator that made this Estimate: Mace per subinterval for Mace, a
    refinement never below Mace for the others (:data:`estimator.pathaware.ESTIMATORS`);
    ``lower`` stays Mace's lower bound whichever estimator refined it.
    """

    subinterval: float
    resources: tuple[str, ...]
    capacities: np.ndarray
    dlts: np.ndarray
    ce_seconds: np.ndarray
    series: np.ndarray
    bottleneck_index: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    epsilon: float
    per_query: Mapping[str, np.ndarray] = field(default_factory=dict)

    @property
    def ce(self) -> np.ndarray:
        """CE in resource units (CPU-seconds, or bytes for links)."""
        return self.ce_seconds * _per_interval(self.capacities)

    @property
    def worst_case(self) -> float:
        """The worst case of ``series`` (MaceWC for Mace)."""
        return float(self.series.max()) if self.series.size else 0.0

    @property
    def bottleneck(self) -> list[str]:
        return [self.resources[k] for k in self.bottleneck_index]

    def summary(self) -> dict[str, float]:
        return series_summary(self.series)

    def to_json(self) -> dict[str, Any]:
        """The JSON object of docs/design.md, 'Command line' (exactly its keys).

        ``mace`` and ``mace_wc`` hold ``series`` and ``worst_case``: the chosen
        estimator's figures (the path-aware series under ``--estimator path``), as do
        ``per_query``'s entries; the keys stay those of section 8.
        """
        return {
            "subinterval": self.subinterval,
            "mace": self.series.tolist(),
            "mace_wc": self.worst_case,
            "bottleneck": self.bottleneck,
            "ce": {r: self.ce[k].tolist() for k, r in enumerate(self.resources)},
            "lower": self.lower.tolist(),
            "upper": self.upper.tolist(),
            "epsilon": self.epsilon,
            "per_query": {
                q: {"mace": s.tolist(), "mace_wc": float(s.max()) if s.size else 0.0}
                for q, s in self.per_query.items()
            },
        }


@dataclass(frozen=True)
class Stops:
    """When the whole job served nothing (a Flink rescale's restart: the job is cancelled
    and runs again at the new parallelism), per subinterval: ``share``, the part of it
    stopped (0..1), and ``left``, the seconds of stop still to come at its end (what a
    record that arrived in it waits before any service)."""

    share: np.ndarray
    left: np.ndarray


def stop_series(
    stops: Sequence[tuple[float, float]], origin: float, subinterval: float, intervals: int
) -> Stops | None:
    """``stops`` ([stopped, resumed) pairs, the run's clock) over the ``intervals``
    subintervals from ``origin``; None when none of them is stopped."""
    begin = origin + subinterval * np.arange(intervals, dtype=float)
    end = begin + subinterval
    share = np.zeros(intervals)
    left = np.zeros(intervals)
    for stopped, resumed in stops:
        overlap = np.minimum(end, resumed) - np.maximum(begin, stopped)
        share += np.clip(overlap, 0.0, None) / subinterval
        after = np.where(end > stopped, np.clip(resumed - end, 0.0, None), 0.0)
        np.maximum(left, after, out=left)
    if not share.any():
        return None
    return Stops(np.minimum(share, 1.0), left)


def serving_capacities(capacities: np.ndarray, stops: Stops, subinterval: float) -> np.ndarray:
    """Per resource and subinterval, the capacity a subinterval's backlog is served at:
    in a stopped subinterval, that of the first subinterval after the stop, where the
    job runs again at its new parallelism (a rescale's backlog drains at the new
    capacity, not the old one). Fixed capacities are returned as they are."""
    if capacities.ndim < 2:
        return capacities
    intervals = capacities.shape[1]
    index = np.arange(intervals)
    resumes = index + 1 + np.ceil(stops.left / subinterval - 1e-9).astype(int)
    return capacities[:, np.where(stops.share > 0, np.minimum(resumes, intervals - 1), index)]


def _per_interval(capacities: np.ndarray) -> np.ndarray:
    """Capacities broadcast against resources x subintervals (fixed ones as a column)."""
    return capacities if capacities.ndim == 2 else capacities[:, None]


def estimate_from_dlts(
    dlts: np.ndarray,
    capacities: np.ndarray,
    resources: Sequence[str],
    subinterval: float,
    epsilon: float,
    query_rows: Mapping[str, np.ndarray] | None = None,
    delay_min: np.ndarray | None = None,
    delay_max: np.ndarray | None = None,
    stops: Stops | None = None,
) -> Estimate:
    """CE, Mace, bottlenecks, bounds and per-query Mace from a resource DLTS matrix.

    ``capacities`` are per second (CPU-s/s or bytes/s), one per resource or, when they
    change during the run (a rescaled Flink vertex), one per resource and subinterval
    (Lindley's recursion then serves C_{i,p} * w in subinterval p, and CE/C divides by
    the capacity of that subinterval); ``query_rows`` maps a
    query to the boolean mask of resources that host it (see :func:`per_query_max`);
    ``delay_min`` and ``delay_max`` are per-resource propagation delays on source-to-sink paths
    (section VII-B), zero when omitted. ``stops`` are the subintervals where the job
    served nothing: every resource serves C * w * (1 - share) there, and every latency
    (the series, its bounds, each query's) waits the stop still to come; CE/C divides by
    the capacity the backlog is served at once the job runs (:func:`serving_capacities`).
    """
    dlts = np.asarray(dlts, dtype=float)
    caps = np.asarray(capacities, dtype=float)
    serving = caps if stops is None else serving_capacities(caps, stops, subinterval)
    service = serving * subinterval
    if stops is not None:
        service = _per_interval(service) * (1.0 - stops.share)
    ce_seconds = cumulative_excess(dlts, service) / _per_interval(serving)
    mace, bottleneck = mace_series(ce_seconds)
    if delay_min is None or not np.any(delay_min):
        lower = mace.copy()
    else:
        lower = np.max(ce_seconds + delay_min[:, None], axis=0)
    if delay_max is None or not np.any(delay_max):
        upper = mace + subinterval + epsilon
    else:
        upper = np.max(ce_seconds + delay_max[:, None], axis=0) + subinterval + epsilon
    per_query = {q: per_query_max(ce_seconds, mask) for q, mask in (query_rows or {}).items()}
    if stops is not None:
        mace, lower, upper = mace + stops.left, lower + stops.left, upper + stops.left
        per_query = {q: s + stops.left for q, s in per_query.items()}
    return Estimate(
        subinterval=subinterval,
        resources=tuple(resources),
        capacities=caps,
        dlts=dlts,
        ce_seconds=ce_seconds,
        series=mace,
        bottleneck_index=bottleneck,
        lower=lower,
        upper=upper,
        epsilon=epsilon,
        per_query=per_query,
    )
