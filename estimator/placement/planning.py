"""Planning with Mace (paper section IX and its technical report).

- Plan selection: rank alternative plans of one query by MaceWC (or by the
  mean or a quantile of Mace across time). The plans come in with operator
  statistics fitted on a small sample (see ``estimator.fitting``); as in the
  paper, each is judged on a single node by default.
- Admission control: add a query, place its operators with a chosen algorithm
  (the running operators stay put unless asked otherwise), and check every
  query's per-query MaceWC against its latency objective.
- Provisioning: the fewest identical nodes on which an algorithm finds a
  placement meeting every objective, or the least capacity to add to the
  current nodes, keeping the current placement.
- Elastic provisioning over time (beyond FUGU): per time window of a recorded
  load, the fewest nodes that keep the objective by Mace against the host
  count of FUGU's utilisation threshold on the same window.

Latency objectives are in seconds, compared with the per-query MaceWC (the
estimate of the query's worst-case latency); a single number applies to every
query and a mapping names queries (queries it does not name are unconstrained).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

import numpy as np

from estimator.arrivals import Arrivals
from estimator.errors import ModelError
from estimator.evaluator import estimate
from estimator.mace import Estimate, cumulative_excess, series_summary
from estimator.model import Node, Topology, topology_from_dict
from estimator.placement import ALGORITHMS, PlacementProblem, PlacementResult
from estimator.placement.fugu import DEFAULT_THRESHOLD, fugu
from estimator.propagation import build_load_model
from estimator.whatif import AddedQuery, Scenario, apply_scenario

Objectives = float | Mapping[str, float]


# ---------------------------------------------------------------------------
# plan selection
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PlanScore:
    """One plan's Mace figures across time (seconds)."""

    name: str
    mace_wc: float
    mean: float
    p99: float


PLAN_CRITERIA = ("mace_wc", "mean", "p99")


def single_node(topology: Topology) -> Topology:
    """The plan on one node holding the total capacity (the paper's plan-selection setting)."""
    capacity = sum(n.capacity for n in topology.nodes)
    return replace(
        topology,
        nodes=(Node("plan-node", capacity),),
        placement=dict.fromkeys(topology.operator_ids, "plan-node"),
        links=(),
    )


def plans_by_query(topology: Topology) -> dict[str, Topology]:
    """Split a topology whose queries are alternative plans into one topology per plan.

    Each plan keeps its operators, the sources they read, the nodes and the
    placement; an operator reading another query's operator is an error.
    """
    document = topology.to_dict()
    plans = {}
    for query in topology.queries:
        ops = [o for o in document["operators"] if o["query"] == query]
        ids = {o["id"] for o in ops}
        for op in ops:
            for upstream in op["inputs"]:
                if upstream in topology.operator_by_id and upstream not in ids:
                    raise ModelError(
                        f"plan '{query}': operator '{op['id']}' reads '{upstream}' of another query"
                    )
        used = {i for o in ops for i in o["inputs"]}
        plans[query] = topology_from_dict(
            {
                **document,
                "sources": [s for s in document["sources"] if s["id"] in used],
                "operators": ops,
                "placement": {k: v for k, v in document["placement"].items() if k in ids},
            }
        )
    return plans


def rank_plans(
    plans: Mapping[str, Topology],
    arrivals: Arrivals,
    *,
    criterion: str = "mace_wc",
    on_single_node: bool = True,
) -> list[PlanScore]:
    """Plans ordered from best to worst by ``criterion`` (ties by name)."""
    if criterion not in PLAN_CRITERIA:
        raise ModelError(
            f"plan selection: unknown criterion '{criterion}' "
            f"(expected one of {', '.join(PLAN_CRITERIA)})"
        )
    if not plans:
        raise ModelError("plan selection: no plans given")
    scores = []
    for name, plan in plans.items():
        topology = single_node(plan) if on_single_node else plan
        summary = series_summary(estimate(topology, arrivals).series)
        scores.append(PlanScore(name, summary["max"], summary["mean"], summary["p99"]))
    return sorted(scores, key=lambda s: (getattr(s, criterion), s.name))


# ---------------------------------------------------------------------------
# latency objectives
# ---------------------------------------------------------------------------


def objective_of(objectives: Objectives, query: str) -> float:
    """The objective of one query in seconds (inf when it has none)."""
    if isinstance(objectives, Mapping):
        return float(objectives.get(query, math.inf))
    return float(objectives)


def _check_objectives(objectives: Objectives, topology: Topology) -> None:
    values = objectives.items() if isinstance(objectives, Mapping) else [("all", objectives)]
    for query, value in values:
        if isinstance(objectives, Mapping) and query not in topology.queries:
            raise ModelError(f"latency objective: unknown query '{query}'")
        if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
            raise ModelError(
                f"latency objective of '{query}': expected seconds >= 0, got {value!r}"
            )


def per_query_mace_wc(result: Estimate) -> dict[str, float]:
    return {q: float(s.max()) if s.size else 0.0 for q, s in result.per_query.items()}


def violations(per_query: Mapping[str, float], objectives: Objectives) -> tuple[str, ...]:
    """Queries whose MaceWC exceeds their objective."""
    return tuple(q for q, value in per_query.items() if value > objective_of(objectives, q))


# ---------------------------------------------------------------------------
# admission control
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class AdmissionDecision:
    """Whether the query can be admitted, on which placement, and every query's MaceWC."""

    admitted: bool
    topology: Topology
    arrivals: Arrivals
    per_query: dict[str, float]
    violations: tuple[str, ...]
    search: PlacementResult | None


def admit_query(
    topology: Topology,
    arrivals: Arrivals,
    query: AddedQuery,
    objectives: Objectives,
    *,
    algorithm: str | None = "mace-hc",
    budget: float = 1.0,
    rng: np.random.Generator | None = None,
    move_existing: bool = False,
) -> AdmissionDecision:
    """Would adding ``query`` keep every query's latency objective?

    With ``algorithm`` None the query's own placement is used; otherwise the
    algorithm places the new operators (all operators with ``move_existing``).
    """
    first_node = topology.node_ids[0]
    new_ops = [str(op.get("id")) for op in query.operators]
    provisional = {op: query.placement.get(op, first_node) for op in new_ops}
    if algorithm is None and set(provisional) != set(query.placement):
        missing = sorted(set(provisional) - set(query.placement))[0]
        raise ModelError(f"admission: operator '{missing}' of the new query has no node")
    added = AddedQuery(query.operators, provisional, query.sources)
    combined, combined_arrivals = apply_scenario(topology, arrivals, Scenario(add_query=added))
    _check_objectives(objectives, combined)
    search = None
    if algorithm is not None:
        if algorithm not in ALGORITHMS:
            raise ModelError(f"admission: unknown placement algorithm '{algorithm}'")
        movable = None if move_existing else new_ops
        problem = PlacementProblem.from_arrivals(combined, combined_arrivals, movable)
        search = ALGORITHMS[algorithm](
            problem, budget=budget, rng=rng if rng is not None else np.random.default_rng()
        )
        combined = combined.with_placement(search.placement)
    per_query = per_query_mace_wc(estimate(combined, combined_arrivals))
    broken = violations(per_query, objectives)
    return AdmissionDecision(not broken, combined, combined_arrivals, per_query, broken, search)


# ---------------------------------------------------------------------------
# provisioning
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ProvisioningPlan:
    """A deployment meeting the objectives (``feasible``) or the best tried when none did,
    with the ``reason`` none did."""

    feasible: bool
    topology: Topology
    per_query: dict[str, float]
    violations: tuple[str, ...]
    added_capacity: float
    reason: str = ""


def cluster(topology: Topology, count: int, capacity: float) -> Topology:
    """The topology on ``count`` identical nodes ``n1..nK``, operators round-robin."""
    nodes = tuple(Node(f"n{k + 1}", capacity) for k in range(count))
    placement = {op: nodes[j % count].id for j, op in enumerate(topology.operator_ids)}
    return replace(topology, nodes=nodes, placement=placement, links=())


def fewest_nodes(
    topology: Topology,
    arrivals: Arrivals,
    objectives: Objectives,
    *,
    node_capacity: float = 1.0,
    max_nodes: int = 64,
    algorithm: str = "mace-hc",
    budget: float = 1.0,
    rng: np.random.Generator | None = None,
    progress: Callable[[int], None] | None = None,
) -> ProvisioningPlan:
    """The fewest nodes of ``node_capacity`` on which ``algorithm`` meets every objective.

    Node counts whose pooled capacity (one node of K times the capacity, a lower
    bound on the Mace of any placement on K nodes) already misses the loosest
    objective are skipped without a search; ``progress(K)`` is called before the
    search on K nodes.
    """
    if not node_capacity > 0 or not math.isfinite(node_capacity):
        raise ModelError(f"provisioning: node capacity must be positive, got {node_capacity}")
    if max_nodes < 1:
        raise ModelError(f"provisioning: max nodes must be at least 1, got {max_nodes}")
    if algorithm not in ALGORITHMS:
        raise ModelError(f"provisioning: unknown placement algorithm '{algorithm}'")
    _check_objectives(objectives, topology)
    generator = rng if rng is not None else np.random.default_rng()
    alone = _alone_over_objective(topology, arrivals, objectives, node_capacity)
    if alone is not None:
        final = cluster(topology, min(max_nodes, len(topology.operators)), node_capacity)
        per_query = per_query_mace_wc(estimate(final, arrivals))
        return ProvisioningPlan(
            False,
            final,
            per_query,
            violations(per_query, objectives),
            0.0,
            f"operator '{alone}' alone on a node of capacity {node_capacity:g} "
            "already misses its objective",
        )
    loosest = max(objective_of(objectives, q) for q in topology.queries)
    best: ProvisioningPlan | None = None
    for count in range(1, max_nodes + 1):
        pooled = estimate(cluster(topology, 1, node_capacity * count), arrivals).worst_case
        if pooled > loosest:
            continue
        if progress is not None:
            progress(count)
        candidate = cluster(topology, count, node_capacity)
        problem = PlacementProblem.from_arrivals(candidate, arrivals)
        found = ALGORITHMS[algorithm](problem, budget=budget, rng=generator)
        candidate = candidate.with_placement(found.placement)
        per_query = per_query_mace_wc(estimate(candidate, arrivals))
        broken = violations(per_query, objectives)
        best = ProvisioningPlan(not broken, candidate, per_query, broken, 0.0)
        if not broken:
            return best
    reason = f"no placement found on up to {max_nodes} nodes within the search budget"
    if best is None:
        final = cluster(topology, max_nodes, node_capacity)
        per_query = per_query_mace_wc(estimate(final, arrivals))
        return ProvisioningPlan(
            False, final, per_query, violations(per_query, objectives), 0.0, reason
        )
    return replace(best, reason=reason)


def _alone_over_objective(
    topology: Topology, arrivals: Arrivals, objectives: Objectives, node_capacity: float
) -> str | None:
    """An operator whose CE/C alone on a node already exceeds its query's objective.

    CE grows with the load, so the node hosting that operator backlogs at least as
    much whatever shares it: no node count of this capacity can meet the objective.
    """
    counts = arrivals.for_topology(topology)
    dlts = build_load_model(topology, counts).operator_dlts()
    if dlts.shape[1] == 0:
        return None
    peaks = cumulative_excess(dlts, node_capacity * topology.subinterval).max(axis=1)
    for op, peak in zip(topology.operators, peaks / node_capacity, strict=True):
        if peak > objective_of(objectives, op.query):
            return op.id
    return None


def least_added_capacity(
    topology: Topology,
    arrivals: Arrivals,
    objectives: Objectives,
    *,
    tolerance: float = 1e-6,
) -> ProvisioningPlan:
    """The least capacity to add to the current nodes, placement unchanged.

    With the placement fixed, a node's CE/C depends on its own capacity only and
    falls as the capacity grows, so each node gets the smallest capacity (found
    by bisection, within ``tolerance`` relative) at which its peak CE/C meets the
    tightest objective of the queries it hosts. Network links are not resized.
    """
    _check_objectives(objectives, topology)
    evaluated = estimate(topology, arrivals)
    w = topology.subinterval
    capacities: dict[str, float] = {}
    for k, node in enumerate(topology.nodes):
        hosted = {
            topology.operator_by_id[o].query for o, n in topology.placement.items() if n == node.id
        }
        target = min((objective_of(objectives, q) for q in hosted), default=math.inf)
        dlts = evaluated.dlts[k]
        capacities[node.id] = _least_capacity(dlts, w, node.capacity, target, tolerance)
    provisioned = replace(
        topology, nodes=tuple(Node(n.id, capacities[n.id]) for n in topology.nodes)
    )
    per_query = per_query_mace_wc(estimate(provisioned, arrivals))
    broken = violations(per_query, objectives)
    added = sum(capacities[n.id] - n.capacity for n in topology.nodes)
    return ProvisioningPlan(not broken, provisioned, per_query, broken, added)


def _peak_seconds(dlts: np.ndarray, w: float, capacity: float) -> float:
    if dlts.size == 0:
        return 0.0
    return float(cumulative_excess(dlts, capacity * w).max() / capacity)


def _least_capacity(
    dlts: np.ndarray, w: float, current: float, target: float, tolerance: float
) -> float:
    """Smallest capacity >= ``current`` whose peak CE/C is at most ``target``."""
    if _peak_seconds(dlts, w, current) <= target:
        return current
    low, high = current, max(current, float(dlts.max()) / w)
    while _peak_seconds(dlts, w, high) > target:  # only rounding can make this loop
        high *= 2
    while high - low > tolerance * high:
        middle = (low + high) / 2
        if _peak_seconds(dlts, w, middle) <= target:
            high = middle
        else:
            low = middle
    return high


# ---------------------------------------------------------------------------
# elastic provisioning over time
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class HostsTimeline:
    """Hosts needed per time window, by Mace (fewest nodes keeping the objective) and
    by FUGU's utilisation threshold, on nodes of ``node_capacity``.

    Arrays have one entry per window: ``window_start`` and ``window_length`` in
    subintervals; ``mace_hosts`` the nodes hosting operators in the placement of
    the fewest nodes on which the search met the objective (``mace_feasible``
    False where no node count did: then the nodes of the best placement tried)
    and ``mace_wc`` the MaceWC of that placement; ``fugu_hosts`` the nodes FUGU's
    first fit opens under the threshold and ``fugu_mace_wc`` the MaceWC of FUGU's
    placement (above the objective where the threshold was not enough, far below
    it where FUGU over-provisions). ``mace_placements`` holds the Mace placement
    per window.
    """

    window_start: np.ndarray
    window_length: np.ndarray
    mace_hosts: np.ndarray
    mace_feasible: np.ndarray
    mace_wc: np.ndarray
    fugu_hosts: np.ndarray
    fugu_mace_wc: np.ndarray
    mace_placements: tuple[dict[str, str], ...]
    objective: float
    node_capacity: float
    fugu_threshold: float
    subinterval: float

    def machine_hours(self, subinterval: float | None = None) -> tuple[float, float]:
        """(Mace, FUGU) host-hours over the timeline: hosts times window duration."""
        width = self.subinterval if subinterval is None else subinterval
        seconds = self.window_length * width
        return (
            float((self.mace_hosts * seconds).sum()) / 3600.0,
            float((self.fugu_hosts * seconds).sum()) / 3600.0,
        )

    def rows(self) -> list[dict[str, float | int | bool]]:
        """One JSON-ready row per window (times in seconds from the first subinterval)."""
        return [
            {
                "start": float(self.window_start[k] * self.subinterval),
                "seconds": float(self.window_length[k] * self.subinterval),
                "mace_hosts": int(self.mace_hosts[k]),
                "mace_feasible": bool(self.mace_feasible[k]),
                "mace_wc": float(self.mace_wc[k]),
                "fugu_hosts": int(self.fugu_hosts[k]),
                "fugu_mace_wc": float(self.fugu_mace_wc[k]),
            }
            for k in range(self.window_start.size)
        ]


def hosts_over_time(
    topology: Topology,
    arrivals: Arrivals,
    objective: float,
    window_intervals: int,
    node_capacity: float,
    fugu_threshold: float = DEFAULT_THRESHOLD,
    *,
    max_nodes: int = 64,
    algorithm: str = "mace-hc",
    budget: float = 0.5,
    rng: np.random.Generator | None = None,
    progress: Callable[[int, int], None] | None = None,
    fugu_statistic: str = "mean",
) -> HostsTimeline:
    """Per window of ``window_intervals`` subintervals, the hosts each way.

    ``topology`` gives the operators with the costs and selectivities to use
    (for a stored run, fit them first with :func:`estimator.fitting.fit_operator_stats`);
    its nodes and placement are ignored: every window is planned from scratch on
    identical nodes of ``node_capacity``. ``arrivals`` is the recorded load (events
    per source and subinterval); the last window may be shorter. Each window starts
    with empty queues, as after a reconfiguration: a backlog carried over from the
    previous window is not counted. ``objective`` (seconds, per-query MaceWC) applies
    to every query. The Mace count is :func:`fewest_nodes` on the window's slice
    with ``algorithm`` and ``budget`` seconds per node count tried; the FUGU count
    is :func:`estimator.placement.fugu.fugu` with ``fugu_threshold`` on a pool of
    ``max_nodes`` nodes, packing each operator's mean load over the window (or its
    peak subinterval with ``fugu_statistic="peak"``). ``progress(windows_done,
    windows)`` is called after each window.
    """
    if isinstance(window_intervals, bool) or window_intervals < 1:
        raise ModelError(
            f"hosts over time: the window must be at least 1 subinterval, got {window_intervals}"
        )
    if not objective > 0 or not math.isfinite(objective):
        raise ModelError(
            f"hosts over time: the objective must be positive seconds, got {objective}"
        )
    if arrivals.intervals == 0:
        raise ModelError("hosts over time: the arrival series is empty")
    generator = rng if rng is not None else np.random.default_rng()
    starts = np.arange(0, arrivals.intervals, window_intervals)
    lengths = np.minimum(starts + window_intervals, arrivals.intervals) - starts
    pool = cluster(topology, max_nodes, node_capacity)
    mace_hosts, feasible, mace_wc, fugu_hosts, fugu_wc = [], [], [], [], []
    placements = []
    for k, (start, length) in enumerate(zip(starts, lengths, strict=True)):
        window = arrivals.window(int(start), int(start + length))
        plan = fewest_nodes(
            topology,
            window,
            objective,
            node_capacity=node_capacity,
            max_nodes=max_nodes,
            algorithm=algorithm,
            budget=budget,
            rng=generator,
        )
        mace_hosts.append(len(set(plan.topology.placement.values())))
        feasible.append(plan.feasible)
        mace_wc.append(max(plan.per_query.values(), default=0.0))
        placements.append(dict(plan.topology.placement))
        packed = fugu(
            PlacementProblem.from_arrivals(pool, window),
            budget=budget,
            rng=generator,
            threshold=fugu_threshold,
            statistic=fugu_statistic,
        )
        fugu_hosts.append(int(packed.details["nodes_needed"]))
        fugu_wc.append(packed.mace_wc)
        if progress is not None:
            progress(k + 1, starts.size)
    return HostsTimeline(
        window_start=starts,
        window_length=lengths,
        mace_hosts=np.array(mace_hosts, dtype=int),
        mace_feasible=np.array(feasible, dtype=bool),
        mace_wc=np.array(mace_wc, dtype=float),
        fugu_hosts=np.array(fugu_hosts, dtype=int),
        fugu_mace_wc=np.array(fugu_wc, dtype=float),
        mace_placements=tuple(placements),
        objective=float(objective),
        node_capacity=float(node_capacity),
        fugu_threshold=float(fugu_threshold),
        subinterval=topology.subinterval,
    )


__all__ = [
    "AdmissionDecision",
    "HostsTimeline",
    "Objectives",
    "PlanScore",
    "ProvisioningPlan",
    "admit_query",
    "fewest_nodes",
    "hosts_over_time",
    "least_added_capacity",
    "plans_by_query",
    "rank_plans",
]
