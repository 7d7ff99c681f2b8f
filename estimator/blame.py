"""Latency blame: why the estimate peaked at subinterval p (docs/design.md, "Blame").

The bottleneck resource at p is the node with the largest CE/C. Its backlog has
been building since ``busy_since``, the start of the busy period that ends at p:
the CE recursion never hit 0 from there on, so

    CE_p = sum over k in [busy_since, p] of (L_k - C*w).

Each operator placed on the node during the period contributed its share of the
load above capacity: ``CE_p * (its DLTS over the period) / (the node's DLTS over
the period)``. The operators' shares add up to CE_p exactly. Each operator's share
is then split among the sources upstream of it, in proportion to the load each
source's arrivals put on it over the period (the topology's linear load model), so
the sources' shares add up to CE_p too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from estimator.errors import ModelError
from estimator.mace import cumulative_excess
from estimator.model import Topology
from estimator.propagation import LoadModel, build_load_model
from estimator.runs import node_loads, segments


@dataclass(frozen=True)
class Blame:
    """Who is behind the backlog at one subinterval (all shares in seconds, CE/C)."""

    interval: int
    resource: str
    busy_since: int
    ce_seconds: float
    contributions: dict[str, float]
    sources: dict[str, float]


def busy_since(ce: np.ndarray, p: int) -> int:
    """The first subinterval of the busy period that ends at ``p`` (``p`` itself when
    there is no backlog at ``p``): the subinterval after the last zero of CE before p."""
    if ce[p] <= 0:
        return p
    zeros = np.flatnonzero(ce[:p] <= 0)
    return int(zeros[-1]) + 1 if zeros.size else 0


def blame(
    topology: Topology,
    operator_dlts: np.ndarray,
    counts: np.ndarray,
    placements: Sequence[Mapping[str, str]],
    starts: Sequence[int],
    interval: int | None = None,
) -> Blame:
    """The blame at ``interval`` (default: the worst subinterval of Mace).

    ``operator_dlts`` is (operators x intervals) in ``topology.operator_ids`` order;
    ``counts`` the source arrivals (``topology.source_ids`` rows); ``placements`` and
    ``starts`` the placement versions and their first intervals."""
    intervals = operator_dlts.shape[1]
    if intervals == 0:
        raise ModelError("blame: the run has no subintervals yet")
    caps = np.array([n.capacity for n in topology.nodes], dtype=float)
    w = topology.subinterval
    loads = node_loads(topology, operator_dlts, placements, starts)
    ce = cumulative_excess(loads, caps * w)
    ce_seconds = ce / caps[:, None]
    if interval is None:
        interval = int(np.argmax(ce_seconds.max(axis=0)))
    if not 0 <= interval < intervals:
        raise ModelError(f"blame: interval {interval} is outside 0..{intervals - 1}")
    node = int(np.argmax(ce_seconds[:, interval]))
    since = busy_since(ce[node], interval)
    total = float(ce_seconds[node, interval])
    on_node = on_node_mask(topology, topology.node_ids[node], placements, starts, intervals)
    contributions, sources = split_window(
        topology,
        build_load_model(topology, counts),
        operator_dlts,
        on_node,
        slice(since, interval + 1),
        total,
    )
    return Blame(
        interval=interval,
        resource=topology.node_ids[node],
        busy_since=since,
        ce_seconds=total,
        contributions=contributions,
        sources=sources,
    )


def split_window(
    topology: Topology,
    model: LoadModel,
    operator_dlts: np.ndarray,
    on_node: np.ndarray,
    period: slice,
    total: float,
) -> tuple[dict[str, float], dict[str, float]]:
    """``total`` seconds of one node split among the operators placed on it (``on_node``)
    in proportion to their DLTS over ``period``, and each operator's part among its
    sources: (operator -> seconds, source -> seconds), each adding up to ``total``
    (nothing when the node had no load there). A negative total (a node that drained
    a path's backlog, :mod:`estimator.pathblame`) gives negative parts."""
    per_operator = (operator_dlts[:, period] * on_node[:, period]).sum(axis=1)
    node_load = float(per_operator.sum())
    share = np.zeros_like(per_operator)
    if node_load > 0 and total != 0:
        share = per_operator * (total / node_load)
    contributions = {
        op: float(v) for op, v in zip(topology.operator_ids, share, strict=True) if v != 0
    }
    return contributions, _by_source(topology, model, share, on_node, period)


def on_node_mask(
    topology: Topology,
    node: str,
    placements: Sequence[Mapping[str, str]],
    starts: Sequence[int],
    intervals: int,
) -> np.ndarray:
    """(operators x intervals) mask: operator placed on ``node`` in that interval."""
    mask = np.zeros((len(topology.operator_ids), intervals), dtype=bool)
    for placement, (lo, hi) in zip(placements, segments(starts, intervals), strict=True):
        for k, op in enumerate(topology.operator_ids):
            if placement[op] == node:
                mask[k, lo:hi] = True
    return mask


def _by_source(
    topology: Topology, model: LoadModel, share: np.ndarray, on_node: np.ndarray, period: slice
) -> dict[str, float]:
    """Each operator's share split among its sources by the load their arrivals put on it
    over the period (non-linear basis rows follow the operator's linear proportions)."""
    n_sources = len(topology.source_ids)
    arrived = model.basis[:n_sources, period].sum(axis=1)
    out = np.zeros(n_sources)
    for k in range(len(topology.operator_ids)):
        if share[k] == 0 or not on_node[k, period].any():
            continue
        per_source = model.op_load[k, :n_sources] * arrived
        if per_source.sum() <= 0:  # no linear part (a product operator): by arrivals
            per_source = arrived
        weight = float(per_source.sum())
        if weight > 0:
            out += share[k] * per_source / weight
    return {s: float(v) for s, v in zip(topology.source_ids, out, strict=True) if v != 0}
