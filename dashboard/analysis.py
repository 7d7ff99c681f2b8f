"""Mace of a measured run: estimated (measured DLTS) and predicted (fitted model).

Placements may change during a run, so node loads and the nodes hosting each
query are computed per interval from the placement versions, and the per-query
Mace uses a node mask that varies over time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from estimator.evaluator import epsilon
from estimator.fitting import fit_operator_stats, training_window
from estimator.mace import cumulative_excess, mace_series
from estimator.model import Topology
from estimator.pathaware import ESTIMATORS, estimator_by_name, machine_paths, path_lags
from estimator.propagation import build_load_model

DEFAULT_TRAINING_SHARE = 0.1


@dataclass(frozen=True)
class MaceAnalysis:
    """System and per-query estimate per interval, with CE/C per node and the bound width.

    ``mace`` is the estimate of ``estimator`` (Mace, or the path-aware series, which
    is never below Mace) and ``upper`` that estimate + w + eps; ``lower`` (Theorem 3's
    lower bound), ``ce_seconds`` and ``bottleneck`` are Mace's in both cases.
    """

    node_ids: tuple[str, ...]
    ce_seconds: np.ndarray
    mace: np.ndarray
    bottleneck: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    epsilon: float
    per_query: dict[str, np.ndarray]
    estimator: str = "mace"

    @property
    def bottleneck_nodes(self) -> list[str]:
        return [self.node_ids[k] for k in self.bottleneck]


def _segments(starts: Sequence[int], intervals: int) -> list[tuple[int, int]]:
    bounds = [min(max(0, s), intervals) for s in starts] + [intervals]
    return [(bounds[k], max(bounds[k], bounds[k + 1])) for k in range(len(starts))]


def node_loads(
    topology: Topology,
    operator_dlts: np.ndarray,
    placements: Sequence[Mapping[str, str]],
    starts: Sequence[int],
) -> np.ndarray:
    """Node DLTS (nodes x intervals) from operator DLTS under placement versions."""
    node_index = {n: k for k, n in enumerate(topology.node_ids)}
    intervals = operator_dlts.shape[1]
    out = np.zeros((len(node_index), intervals))
    for placement, (lo, hi) in zip(placements, _segments(starts, intervals), strict=True):
        rows = np.array([node_index[placement[op]] for op in topology.operator_ids], dtype=int)
        np.add.at(out[:, lo:hi], rows, operator_dlts[:, lo:hi])
    return out


def analyse(
    topology: Topology,
    node_dlts: np.ndarray,
    placements: Sequence[Mapping[str, str]],
    starts: Sequence[int],
    estimator: str = "mace",
) -> MaceAnalysis:
    """CE, Mace, bottleneck, upper bound and per-query Mace for node loads of a run;
    with ``estimator="path"`` the series are the path-aware ones (DESIGN 7, issue 7)."""
    if estimator not in ESTIMATORS:
        estimator_by_name(estimator)  # raises the error naming the known estimators
    caps = np.array([n.capacity for n in topology.nodes], dtype=float)
    w = topology.subinterval
    intervals = node_dlts.shape[1]
    ce_seconds = cumulative_excess(node_dlts, caps * w) / caps[:, None]
    if intervals:
        mace, bottleneck = mace_series(ce_seconds)
    else:
        mace, bottleneck = np.zeros(0), np.zeros(0, dtype=int)
    eps = max(epsilon(topology, p) for p in placements)
    node_index = {n: k for k, n in enumerate(topology.node_ids)}
    per_query: dict[str, np.ndarray] = {}
    for query in topology.queries:
        mask = np.zeros((len(node_index), intervals), dtype=bool)
        ops = topology.operators_of_query(query)
        for placement, (lo, hi) in zip(placements, _segments(starts, intervals), strict=True):
            for op in ops:
                mask[node_index[placement[op]], lo:hi] = True
        per_query[query] = np.max(ce_seconds, axis=0, where=mask, initial=0.0)
    lower = mace
    if estimator == "path" and intervals:
        mace = _with_path_lags(
            topology, node_dlts / caps[:, None], placements, starts, mace, per_query
        )
    return MaceAnalysis(
        node_ids=topology.node_ids,
        ce_seconds=ce_seconds,
        mace=mace,
        bottleneck=bottleneck,
        lower=lower,
        upper=mace + w + eps,
        epsilon=eps,
        per_query=per_query,
        estimator=estimator,
    )


def _with_path_lags(
    topology: Topology,
    work_seconds: np.ndarray,
    placements: Sequence[Mapping[str, str]],
    starts: Sequence[int],
    mace: np.ndarray,
    per_query: dict[str, np.ndarray],
) -> np.ndarray:
    """Raise the system and per-query series to the path-aware estimate, using in each
    placement segment the machine paths of that placement (backlogs carry over)."""
    out = mace.copy()
    w = topology.subinterval
    for placement, (lo, hi) in zip(placements, _segments(starts, out.size), strict=True):
        if lo == hi:
            continue
        lags = path_lags(work_seconds, machine_paths(topology, topology.node_ids, placement), w)
        out[lo:hi] = np.maximum(out[lo:hi], lags.system()[lo:hi])
        for query, series in per_query.items():
            series[lo:hi] = np.maximum(series[lo:hi], lags.query(query)[lo:hi])
    return out


def predicted_operator_dlts(
    topology: Topology,
    operator_stats: pd.DataFrame,
    counts: np.ndarray,
    intervals: int,
    share: float = DEFAULT_TRAINING_SHARE,
) -> np.ndarray:
    """Operator DLTS predicted from arrivals with costs and selectivities fitted on the
    first ``share`` of the run (DESIGN 7.5)."""
    fitted = topology
    if not operator_stats.empty and intervals:
        window = training_window(intervals, share)
        fitted = fit_operator_stats(topology, operator_stats, window).topology
    return build_load_model(fitted, counts).operator_dlts()
