"""Path-aware latency estimate: a fluid tandem-queue model at subinterval granularity.

Why. Mace takes, per subinterval, the *maximum* over nodes of CE/C. On a
multi-node run an event can wait behind a backlog on one node and then behind
another backlog on the next node of its path; Mace sees only the larger of the
two waits. This module follows each source-to-sink path through the placement's
machine graph and lets the waits of successive stages compose.

The maths. Time 0 is the origin, w the subinterval width, T_p = (p+1) w the end
of subinterval p. For one resource with load x_p = L_p / C (seconds of work of
stimulus subinterval p), Mace's Lindley recursion is equivalent to the *release
time* recursion

    R_p = max(T_p, R_{p-1} + x_p),        Mace_p = R_p - T_p = CE_p / C,

the time by which the node has finished all work of subintervals <= p (it works
in stimulus-time order, as the paper's scheduler does). For a path of stages
k = 1..K (its distinct nodes in order of first visit, with a finite-bandwidth
link between consecutive nodes as a stage of its own), stage k gets the work of
subinterval p only as stage k-1 releases it: it may start once stage k-1 has
released subinterval p-1 and can never finish before stage k-1 has released p.
With R_{0,p} = T_p, R_{k,-1} = 0 and d_k the propagation delay of the hop into
stage k, the fluid tandem recursion is

    A_{k,p} = R_{k-1,p} + d_k,                      (all of p's work has arrived)
    R_{k,p} = max(A_{k,p}, max(R_{k,p-1}, A_{k,p-1}) + x_{k,p}).

Writing c_p = max(A_{k,p}, A_{k,p-1} + x_{k,p}) this is R_{k,p} = max(c_p,
R_{k,p-1} + x_{k,p}), a max-plus linear recursion whose closed form
R_{k,p} = X_p + max_{j<=p} (c_j - X_j), X the running sum of x, is one cumulative
sum and one running maximum: every path and subinterval is vectorized, stage by
stage. The path's estimate is R_{K,p} - T_p, and the estimate of subinterval p
is the maximum over paths (per query: over the paths ending at its sinks).

Properties (tested): a path of one stage gives exactly the node's CE/C, so on a
single node the estimate equals Mace; by induction R_{k,p} is at least the
stage's stand-alone release time, so the estimate is never below Mace (resources
on no path, e.g. a link only used to return to an already visited node, are
covered by taking the maximum with Mace). The bound reported is the same form as
Theorem 3, estimate + w + eps; it is an empirical bound, not a theorem.

A path that returns to a node it already visited is folded into the first visit
(the node's whole DLTS is one stage): this avoids counting the node's load twice
but can miss the wait of the return trip.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from estimator.arrivals import Arrivals
from estimator.errors import ModelError
from estimator.evaluator import estimate as mace_estimate
from estimator.mace import Estimate
from estimator.model import Topology

if TYPE_CHECKING:
    from estimator.burst import BurstProfile

MAX_PATHS = 50_000


@dataclass(frozen=True)
class Stage:
    """One stage of a machine path: a resource row, and the propagation delay into it."""

    resource: int
    delay: float = 0.0


Path = tuple[Stage, ...]


def machine_paths(
    topology: Topology,
    resources: Sequence[str],
    placement: Mapping[str, str] | None = None,
) -> dict[str, tuple[Path, ...]]:
    """Per query, the distinct stage sequences of its source-to-sink operator paths.

    A path's stages are its nodes in order of first visit; a hop between two nodes
    adds the link resource ``src->dst`` as a stage when it is one of ``resources``
    (a finite-bandwidth link) and carries the link's propagation delay into the
    next stage. Raises :class:`ModelError` past ``MAX_PATHS`` distinct sequences.
    """
    where = placement or topology.placement
    row = {r: k for k, r in enumerate(resources)}
    delay = {(lk.src, lk.dst): lk.delay for lk in topology.links}
    # Per operator: the set of (visited nodes in order, stages) reaching it.
    reach: dict[str, set[tuple[tuple[str, ...], Path]]] = {}
    total = 0
    for op_id in topology.topological_order:
        node = where[op_id]
        if node not in row:
            raise ModelError(f"path-aware: node '{node}' of operator '{op_id}' has no DLTS row")
        found: set[tuple[tuple[str, ...], Path]] = set()
        for upstream in topology.operator_by_id[op_id].inputs:
            for visited, stages in reach.get(upstream, {((), ())}):
                if node in visited:
                    found.add((visited, stages))
                    continue
                hop = 0.0
                extra: tuple[Stage, ...] = ()
                if visited:
                    last = visited[-1]
                    hop = delay.get((last, node), 0.0)
                    link = row.get(f"{last}->{node}")
                    if link is not None:
                        extra = (Stage(link, hop),)
                        hop = 0.0
                found.add(((*visited, node), (*stages, *extra, Stage(row[node], hop))))
        total += len(found)
        if total > MAX_PATHS:
            raise ModelError(
                f"path-aware: more than {MAX_PATHS} distinct machine paths; use the mace estimator"
            )
        reach[op_id] = found
    out: dict[str, tuple[Path, ...]] = {}
    for query in topology.queries:
        sinks = [s for s in topology.sinks if topology.operator_by_id[s].query == query]
        paths = {stages for s in sinks for _, stages in reach[s]}
        out[query] = tuple(sorted(paths, key=lambda p: [(s.resource, s.delay) for s in p]))
    return out


def release_lag(
    work_seconds: np.ndarray, stages: np.ndarray, delays: np.ndarray, subinterval: float
) -> np.ndarray:
    """The fluid tandem estimate R_{K,p} - T_p for every path (paths x subintervals).

    ``work_seconds`` is (resources x D) DLTS over capacity; ``stages`` is
    (paths x K) resource rows padded with -1 (a padded stage is the identity);
    ``delays`` is (paths x K) propagation delay into each stage.
    """
    n_paths, depth = stages.shape
    intervals = work_seconds.shape[1]
    ends = (np.arange(intervals) + 1.0) * subinterval
    release = np.broadcast_to(ends, (n_paths, intervals)).copy()
    zero_row = np.zeros((1, intervals))
    padded = np.vstack([work_seconds, zero_row])
    for k in range(depth):
        rows = np.where(stages[:, k] < 0, work_seconds.shape[0], stages[:, k])
        work = padded[rows]
        arrived = release + delays[:, k, None]
        before = np.concatenate([np.zeros((n_paths, 1)), arrived[:, :-1]], axis=1)
        ready = np.maximum(arrived, before + work)
        running = np.cumsum(work, axis=1)
        release = running + np.maximum.accumulate(ready - running, axis=1)
    return np.maximum(release - ends, 0.0)


def _stage_arrays(paths: Sequence[Path]) -> tuple[np.ndarray, np.ndarray]:
    depth = max((len(p) for p in paths), default=0)
    stages = np.full((len(paths), depth), -1, dtype=np.int64)
    delays = np.zeros((len(paths), depth))
    for i, path in enumerate(paths):
        for k, stage in enumerate(path):
            stages[i, k] = stage.resource
            delays[i, k] = stage.delay
    return stages, delays


@dataclass(frozen=True)
class PathLags:
    """Fluid tandem estimate of every distinct path (paths x subintervals), per query."""

    paths: tuple[Path, ...]
    lag: np.ndarray
    rows_by_query: Mapping[str, tuple[int, ...]]

    def system(self) -> np.ndarray:
        """The worst path per subinterval (zeros when there is no path)."""
        if not self.paths:
            return np.zeros(self.lag.shape[1])
        return self.lag.max(axis=0)

    def query(self, query: str) -> np.ndarray:
        """The worst path of ``query`` per subinterval (zeros when it has none)."""
        rows = list(self.rows_by_query.get(query, ()))
        return self.lag[rows].max(axis=0) if rows else np.zeros(self.lag.shape[1])


def path_lags(
    work_seconds: np.ndarray, query_paths: Mapping[str, Sequence[Path]], subinterval: float
) -> PathLags:
    """:func:`release_lag` of each distinct path of ``query_paths`` over ``work_seconds``
    (resources x D, DLTS over capacity)."""
    unique = tuple(sorted({p for ps in query_paths.values() for p in ps}, key=repr))
    index = {p: k for k, p in enumerate(unique)}
    if unique:
        stages, delays = _stage_arrays(unique)
        lag = release_lag(work_seconds, stages, delays, subinterval)
    else:
        lag = np.zeros((0, work_seconds.shape[1]))
    rows = {q: tuple(index[p] for p in ps) for q, ps in query_paths.items()}
    return PathLags(unique, lag, rows)


def path_aware_from_dlts(
    base: Estimate,
    query_paths: Mapping[str, Sequence[Path]],
) -> Estimate:
    """The path-aware Estimate from a Mace Estimate (model or measured DLTS) and the paths.

    ``base`` supplies the resources, DLTS, CE/C, eps and Mace's lower bound (a
    theorem, kept as is); ``series`` becomes the path-aware series (never below
    Mace), ``upper`` is that series + w + eps, the bottleneck is the resource with
    the largest CE/C on the worst path, and per-query series use the query's paths.
    """
    w = base.subinterval
    if base.series.size == 0:
        return base
    lags = path_lags(base.dlts / base.capacities[:, None], query_paths, w)
    if not lags.paths:
        return base
    worst_lag = lags.system()
    series = np.maximum(worst_lag, base.series)
    worst = np.argmax(lags.lag, axis=0)
    member = np.zeros((len(lags.paths), len(base.resources)), dtype=bool)
    for i, path in enumerate(lags.paths):
        member[i, [s.resource for s in path]] = True
    masked = np.where(member[worst].T, base.ce_seconds, -np.inf)
    on_path = np.argmax(masked, axis=0)
    bottleneck = np.where(worst_lag >= base.series, on_path, base.bottleneck_index)
    per_query = {
        query: np.maximum(lags.query(query), mace_q) for query, mace_q in base.per_query.items()
    }
    return Estimate(
        subinterval=w,
        resources=base.resources,
        capacities=base.capacities,
        dlts=base.dlts,
        ce_seconds=base.ce_seconds,
        series=series,
        bottleneck_index=bottleneck.astype(np.int64),
        lower=base.lower,
        upper=series + w + base.epsilon,
        epsilon=base.epsilon,
        per_query=per_query,
    )


def _path_aware(topology: Topology, base: Estimate) -> Estimate:
    """The path-aware estimate from Mace's Estimate over the placement's machine paths."""
    return path_aware_from_dlts(base, machine_paths(topology, base.resources))


def _burst(topology: Topology, base: Estimate) -> Estimate:
    """The burst-aware estimate without an arrival profile (a prediction without arrivals
    per sub-bucket, a run measured by counters, a run ingested before the profile was
    stored): the even profile with one
    sub-bucket, i.e. Mace's series with the bursty-arrival band [Mace, Mace + 2w + eps]."""
    # numba (burst's kernels) loads when this estimator runs, not with the registry
    from estimator.burst import even_profile

    service = base.capacities * base.subinterval
    return _burst_with(topology, base, even_profile(base.dlts, service))


def _burst_detailed(topology: Topology, base: Estimate, detail: Detail) -> Estimate:
    """The burst-aware estimate from the measured work of each node per subinterval and
    sub-bucket (``detail.node_fine``, the stored node_profile); :func:`_burst` without."""
    from estimator.burst import burst_profile

    fine_work = detail.node_fine
    if fine_work is None:
        return _burst(topology, base)
    nodes, intervals = len(topology.node_ids), base.dlts.shape[1]
    if fine_work.ndim != 3 or fine_work.shape[:2] != (nodes, intervals):
        raise ModelError(
            f"burst: profile of shape {fine_work.shape}, expected ({nodes}, {intervals}, k)"
        )
    service = base.capacities[:nodes] * base.subinterval
    return _burst_with(topology, base, burst_profile(fine_work, service))


def _burst_with(topology: Topology, base: Estimate, profile: BurstProfile) -> Estimate:
    from estimator.burst import burst_from_profile

    hosts = {
        q: np.isin(
            base.resources,
            list(topology.hosts_of(topology.placement[o] for o in topology.operators_of_query(q))),
        )
        for q in base.per_query
    }
    rows = stage_rows(machine_paths(topology, base.resources))
    return burst_from_profile(base, profile, hosts, rows)


def stage_rows(query_paths: Mapping[str, Sequence[Path]]) -> list[tuple[int, ...]]:
    """The distinct resource rows of every path (the burst band sums along them)."""
    return sorted({tuple(s.resource for s in p) for ps in query_paths.values() for p in ps})


def _origin(topology: Topology, base: Estimate) -> Estimate:
    """The per-origin estimate without the work of each operator port (a caller that
    has node loads only): Mace's series with the bursty-arrival
    band [Mace, Mace + 2w + eps], as burst-aware without a profile."""
    width = 2 * base.subinterval + base.epsilon
    return replace(base, upper=base.series + width)


def _origin_detailed(topology: Topology, base: Estimate, detail: Detail) -> Estimate:
    """The per-origin replay (:mod:`estimator.origins`) from the work of each operator
    port (``detail.port_work``), spread inside each subinterval like the events of the
    sources upstream of it (``detail.source_fine``), else like its node's profile
    (``detail.node_fine``), else evenly over SUB_BUCKETS sub-buckets.

    ``series`` and ``per_query`` are the replay's (per query: its sinks; not a lower
    bound, not never-below-Mace); ``lower`` and the bottleneck stay Mace's; ``upper`` is
    max(series, Mace) + (h + 2) w/k + eps with the sources' profile, h =
    :func:`hand_ons` (the replay can start a piece up to one step early at each hand-on
    to another node and at its source, and it measures a bucket's latency from the
    bucket's end, not from its first event: one step each); + w/4 more
    (:data:`ORIGIN_RESIDUAL`) with the node profile only, + 2w + eps without a profile
    (the bursts inside a subinterval are then unknown). Links are not replayed (nodes
    only)."""
    from estimator.burst import SUB_BUCKETS
    from estimator.origins import origin_latency

    if detail.port_work is None or base.series.size == 0:
        return _origin(topology, base)
    latency = origin_latency(
        topology, detail.port_work, detail.node_fine, SUB_BUCKETS, source_fine=detail.source_fine
    )
    intervals = base.series.size
    latency = latency[:, :intervals]
    series = latency.max(axis=0) if latency.shape[0] else np.zeros(intervals)
    steps = (hand_ons(topology) + 2) / latency_k(detail)
    if detail.source_fine is not None:
        margin = steps * base.subinterval
    elif detail.node_fine is not None:
        margin = (steps + ORIGIN_RESIDUAL) * base.subinterval
    else:
        margin = 2 * base.subinterval
    return replace(
        base,
        series=series,
        upper=np.maximum(series, base.series) + margin + base.epsilon,
        per_query={q: latency[r] for r, q in enumerate(topology.queries) if q in base.per_query},
    )


ORIGIN_RESIDUAL = 0.25
"""Part of w added to the per-origin band when the replay spreads each port's work like
its node's profile (a run ingested with a node profile but no source profile): a node
mixes queries that burst at different moments, and in long backlogs that replay ran up
to 0.18 s (w = 1 s) further below the measured latency than h + 2 steps on 3 of 50
held-out runs; spread like the sources upstream, h + 2 steps held everywhere
(docs/accuracy.md, ``benchmarks/origin_spread.py``). Its size is empirical: 2w/8, the
margin that held at k = 8 before the step terms."""


def hand_ons(topology: Topology) -> int:
    """The most hand-ons to another node along one source-to-sink operator path under
    ``topology.placement`` (a path that stays on one node: 0)."""
    where = topology.placement
    known = set(topology.operator_ids)
    depth: dict[str, int] = {}
    for op_id in topology.topological_order:
        depth[op_id] = max(
            (
                depth[u] + (where[u] != where[op_id])
                for u in topology.operator_by_id[op_id].inputs
                if u in known
            ),
            default=0,
        )
    return max(depth.values(), default=0)


def latency_k(detail: Detail) -> int:
    """The sub-buckets of ``detail``'s source profile, else of its node profile (1
    without either)."""
    profile = detail.source_fine if detail.source_fine is not None else detail.node_fine
    return 1 if profile is None else int(profile.shape[2])


def _mace(topology: Topology, base: Estimate) -> Estimate:
    """Mace as in the paper: the base estimate itself."""
    return base


@dataclass(frozen=True)
class Detail:
    """Work finer than the node DLTS that a refinement may use (each part optional).

    ``node_fine``: CPU-seconds per node (topology order), subinterval and sub-bucket
    (nodes x D x k, the stored ``node_profile``); ``port_work``: CPU-seconds per
    operator input port and subinterval (inputs x D in the rows of
    :attr:`Topology.input_offsets`: measured ``operator_stats``, or a model's load);
    ``source_fine``: events per source (:attr:`Topology.source_ids`), subinterval and
    sub-bucket (sources x D x k, the stored ``source_profile``)."""

    node_fine: np.ndarray | None = None
    port_work: np.ndarray | None = None
    source_fine: np.ndarray | None = None


NODE_FINE = "node_fine"
PORT_WORK = "port_work"
SOURCE_FINE = "source_fine"


@dataclass(frozen=True)
class Estimator:
    """A registered latency estimator: its label and how it refines Mace's estimate.

    ``refine(topology, base)`` turns the Mace :class:`Estimate` of some DLTS (model or
    measured, resources being the topology's nodes then any link resources) into this
    estimator's Estimate under ``topology.placement``. Every estimator starts from
    Mace, so one cached Mace evaluation serves all of them, and a run analysis can
    apply the refinement per placement version. Calling the estimator evaluates a
    topology and arrival series from scratch. ``detailed(topology, base, detail)``,
    when set, is the refinement given finer work (:class:`Detail`); ``uses`` names the
    parts of it the estimator reads (:data:`NODE_FINE`, :data:`PORT_WORK`,
    :data:`SOURCE_FINE`), so that a caller computes or reads only those; :meth:`apply`
    picks the refinement.
    ``band`` names the upper edge of the estimator's band (the lower edge is Mace), as
    the chart's legend shows it; the refinement computes it as ``Estimate.upper``.
    """

    label: str
    refine: Callable[[Topology, Estimate], Estimate]
    band: str
    detailed: Callable[[Topology, Estimate, Detail], Estimate] | None = None
    uses: frozenset[str] = frozenset()

    def __call__(self, topology: Topology, arrivals: Arrivals | np.ndarray) -> Estimate:
        base = mace_estimate(topology, arrivals)
        if PORT_WORK not in self.uses:
            return self.refine(topology, base)
        from estimator.propagation import build_load_model, port_load

        counts = arrivals.for_topology(topology) if isinstance(arrivals, Arrivals) else arrivals
        model = build_load_model(topology, counts)
        return self.apply(topology, base, Detail(port_work=port_load(topology, model)))

    def apply(self, topology: Topology, base: Estimate, detail: Detail | None = None) -> Estimate:
        """The refinement of ``base``, from ``detail`` when there is one and this
        estimator uses it."""
        if detail is not None and self.detailed is not None:
            return self.detailed(topology, base, detail)
        return self.refine(topology, base)

    @property
    def worst_case_heading(self) -> str:
        """The name of the worst case: MaceWC, the paper's term, for Mace."""
        return "MaceWC" if self.refine is _mace else f"{self.label} WC"


estimate_mace = Estimator("Mace", _mace, "Mace + w + eps")
"""Mace as in the paper (the default estimator)."""

estimate_path_aware = Estimator("path-aware", _path_aware, "path-aware + w + eps")
"""Model DLTS from the arrivals (as :func:`estimator.evaluator.estimate`), then the
path-aware fluid tandem estimate over the placement's machine paths."""

estimate_burst = Estimator(
    "burst-aware",
    _burst,
    "max(burst-aware, path sum) + 2w/k + eps, k = 1 without a profile",
    _burst_detailed,
    frozenset({NODE_FINE}),
)
"""Mace refined by the arrival profile inside each subinterval (:mod:`estimator.burst`):
from the stored ``node_profile`` of a run ingested from per-event records, for a
prediction from the profile the fitted model gives from the stored arrivals per
sub-bucket; equal to Mace's series without one (counter-measured runs, What-if)."""

estimate_origin = Estimator(
    "per-origin",
    _origin,
    "max(per-origin, Mace) + (h+2)w/k + eps; + w/4 with a node profile only; "
    "2w + eps without a profile",
    _origin_detailed,
    frozenset({NODE_FINE, PORT_WORK, SOURCE_FINE}),
)
"""The per-origin fluid replay of the operators (:mod:`estimator.origins`): from the work
of every operator port (measured, or the model's) spread inside each subinterval like
the stored ``source_profile`` of the sources upstream, else like the stored
``node_profile``, evenly without either (a caller that has the source profile need not
read the node profile); Mace's series where only node loads are known."""

ESTIMATORS: dict[str, Estimator] = {
    "mace": estimate_mace,
    "path": estimate_path_aware,
    "burst": estimate_burst,
    "origin": estimate_origin,
}
"""The estimator registry: every layer picks an estimator by name from here."""


class _Labels(Mapping[str, str]):
    """Label of each registered estimator, read live from :data:`ESTIMATORS`."""

    def __getitem__(self, name: str) -> str:
        return ESTIMATORS[name].label

    def __iter__(self) -> Iterator[str]:
        return iter(ESTIMATORS)

    def __len__(self) -> int:
        return len(ESTIMATORS)


ESTIMATOR_LABELS: Mapping[str, str] = _Labels()


def estimator_by_name(name: str) -> Estimator:
    """The estimator registered under ``name``; a clear error otherwise."""
    try:
        return ESTIMATORS[name]
    except KeyError:
        raise ModelError(
            f"unknown estimator '{name}' (expected one of {', '.join(ESTIMATORS)})"
        ) from None
