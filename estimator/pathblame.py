"""Latency blame along the critical path of the path-aware estimate.

:mod:`estimator.pathaware` computes, per machine path of stages k = 1..K, the release
times R_{k,p} = max over j in [-1, p] of (A_{k,j} + sum_{i=j+1..p} x_{k,i}), where
A_{k,j} = R_{k-1,j} + d_k is when all of subinterval j's work has reached stage k
(A_{k,-1} = 0, R_{0,j} = T_j = (j+1) w) and x is DLTS/C. Following the maximizing j
back from the last stage at p gives the **critical chain**: stage K worked on
subintervals [j_K + 1, p] without a pause, started when stage K-1 released subinterval
j_K (crossing the hop's delay d_K), stage K-1 had worked on [j_{K-1} + 1, j_K], and so
on, until the chain reaches the path's start (stage 1, or a stage whose maximizing j is
-1: it had been busy since the start of the run). Ties go to the latest j (the shortest
window), so a path of one stage gives exactly the busy period of :mod:`estimator.blame`.

Each stage's **window** [busy_since, busy_until] is its part of the chain (empty when
the work went through it without waiting on its own backlog). The windows are
consecutive and cover [s, p], s the first window's start, so telescoping R gives

    estimate_p = sum over the path's stages of (ce_seconds + delay_seconds),

with ``ce_seconds`` = sum over the stage's window of (L_i / C - w), the excess of the
node's load over its capacity there (the single-node CE/C when the path has one
stage), and ``delay_seconds`` the propagation delay of the hop into it when the chain
crossed it. This is exact, and what :func:`path_blame` reports. A stage's excess can be
negative: a node that worked through a lump released by the node before it in less
time than the lump's subintervals last drained part of the path's lag (the running
total from the first stage on never goes below 0, since R_{k,p} >= T_p). Each stage's
excess is split among its operators and sources as :mod:`estimator.blame` splits a
node's CE/C (by their DLTS over its window).

The estimate is the worst path's; where Mace is larger (a backlog left on a node no
path of the current placement visits, after a placement change) the path is that
node alone with its Mace blame.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from estimator.blame import Blame, blame, on_node_mask, split_window
from estimator.errors import ModelError
from estimator.mace import cumulative_excess
from estimator.model import Topology, version_at
from estimator.pathaware import Path, machine_paths, path_lags
from estimator.propagation import build_load_model
from estimator.runs import analyse, node_loads

TIE = 1e-9
"""Relative tolerance under which two chains count as equally long (the later wins)."""


@dataclass(frozen=True)
class StageBlame:
    """One stage of the critical path: its window on the chain (None, None when empty),
    the delay crossed into it and its excess over the window, split among operators and
    sources (seconds; they add up to ``ce_seconds``)."""

    resource: str
    busy_since: int | None
    busy_until: int | None
    delay_seconds: float
    ce_seconds: float
    contributions: dict[str, float]
    sources: dict[str, float]


@dataclass(frozen=True)
class PathBlame:
    """The path-aware estimate at ``interval`` explained along its critical path:
    ``estimate`` == the sum of the stages' ``ce_seconds + delay_seconds``."""

    interval: int
    estimate: float
    stages: tuple[StageBlame, ...]

    @property
    def dominant(self) -> StageBlame:
        """The stage with the largest excess (the first on ties)."""
        return max(self.stages, key=lambda s: s.ce_seconds)


def critical_windows(
    work_seconds: np.ndarray,
    stages: Sequence[int],
    delays: Sequence[float],
    subinterval: float,
    p: int,
) -> list[tuple[int, int, bool]]:
    """Per stage of one path, its window ``(first, last)`` on the critical chain ending at
    ``p`` (``first == last + 1`` when empty) and whether the chain crossed the delay into
    it. ``work_seconds`` is (resources x D) DLTS over capacity; ``stages`` the path's
    resource rows, ``delays`` the propagation delay into each stage."""
    intervals = work_seconds.shape[1]
    if not 0 <= p < intervals:
        raise ModelError(f"path blame: interval {p} is outside 0..{intervals - 1}")
    # arrivals[k][j] = A_{k,j}; release of the previous stage, stage by stage
    release = (np.arange(p + 1) + 1.0) * subinterval
    arrivals, prefix = [], []
    for row, delay in zip(stages, delays, strict=True):
        work = work_seconds[row, : p + 1]
        arrived = release + delay
        before = np.concatenate([[0.0], arrived[:-1]])
        running = np.cumsum(work)
        release = running + np.maximum.accumulate(np.maximum(arrived, before + work) - running)
        arrivals.append(arrived)
        prefix.append(running)
    windows: list[tuple[int, int, bool]] = []
    last = p
    for k in range(len(stages) - 1, -1, -1):
        if last < 0:  # the chain ended downstream: this stage is not on it
            windows.append((0, -1, False))
            continue
        # R_{k,last} = max over j in [-1, last] of (A_j - X_j) + X_last, X_{-1} = A_{-1} = 0
        value = np.concatenate([[0.0], arrivals[k][: last + 1] - prefix[k][: last + 1]])
        best = value.max()
        j = int(np.flatnonzero(value >= best - TIE * max(1.0, abs(best)))[-1]) - 1
        windows.append((j + 1, last, j >= 0))
        last = j
    return windows[::-1]


def path_blame(
    topology: Topology,
    operator_dlts: np.ndarray,
    counts: np.ndarray,
    placements: Sequence[Mapping[str, str]],
    starts: Sequence[int],
    interval: int | None = None,
) -> PathBlame:
    """The path-aware estimate at ``interval`` (default: its worst subinterval) split
    along its critical path; arguments as :func:`estimator.blame.blame`'s."""
    intervals = operator_dlts.shape[1]
    if intervals == 0:
        raise ModelError("path blame: the run has no subintervals yet")
    loads = node_loads(topology, operator_dlts, placements, starts)
    if interval is None:
        interval = int(np.argmax(analyse(topology, loads, placements, starts, "path").estimate))
    if not 0 <= interval < intervals:
        raise ModelError(f"path blame: interval {interval} is outside 0..{intervals - 1}")
    caps = np.array([n.capacity for n in topology.nodes], dtype=float)
    w = topology.subinterval
    work = loads / caps[:, None]
    placement = placements[version_at(starts, interval)]
    query_paths = machine_paths(topology.with_placement(placement), topology.node_ids)
    lags = path_lags(work, query_paths, w)
    mace = float((cumulative_excess(loads, caps * w)[:, interval] / caps).max())
    worst = int(np.argmax(lags.lag[:, interval])) if lags.paths else -1
    lag = float(lags.lag[worst, interval]) if lags.paths else 0.0
    if worst < 0 or lag < mace - TIE * max(1.0, mace):
        alone = blame(topology, operator_dlts, counts, placements, starts, interval)
        return PathBlame(interval, mace, (_single(alone),))
    path: Path = lags.paths[worst]
    rows = [s.resource for s in path]
    windows = critical_windows(work, rows, [s.delay for s in path], w, interval)
    model = build_load_model(topology, counts)
    stages = []
    for stage, (first, last, crossed) in zip(path, windows, strict=True):
        node = topology.node_ids[stage.resource]
        excess = float(work[stage.resource, first : last + 1].sum() - (last - first + 1) * w)
        contributions: dict[str, float] = {}
        sources: dict[str, float] = {}
        if last >= first:
            on_node = on_node_mask(topology, node, placements, starts, intervals)
            period = slice(first, last + 1)
            contributions, sources = split_window(
                topology, model, operator_dlts, on_node, period, excess
            )
        stages.append(
            StageBlame(
                resource=node,
                busy_since=first if last >= first else None,
                busy_until=last if last >= first else None,
                delay_seconds=stage.delay if crossed else 0.0,
                ce_seconds=excess,
                contributions=contributions,
                sources=sources,
            )
        )
    return PathBlame(interval, max(lag, mace), tuple(stages))


def _single(alone: Blame) -> StageBlame:
    """Mace's blame of one node as a path of one stage."""
    return StageBlame(
        resource=alone.resource,
        busy_since=alone.busy_since,
        busy_until=alone.interval,
        delay_seconds=0.0,
        ce_seconds=alone.ce_seconds,
        contributions=alone.contributions,
        sources=alone.sources,
    )
