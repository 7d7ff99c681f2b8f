"""Evaluating a topology and placement: node DLTS, network resources, Mace.

:class:`PlacementEvaluator` keeps the node DLTS and per-subinterval top-3 of
CE/C so that a one-operator move is evaluated by recomputing only the two
nodes it touches (plus the top-3 lookup for the rest), which is what
hill-climbing placement needs.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from estimator.arrivals import Arrivals
from estimator.errors import ModelError
from estimator.mace import Estimate, estimate_from_dlts
from estimator.model import Topology
from estimator.propagation import LoadModel, build_load_model


def epsilon(topology: Topology, placement: Mapping[str, str] | None = None) -> float:
    """The bound's eps: per node, the largest per-event cost of a hosted operator (sum
    over its ports, Lemma 2) over the node's capacity, summed over nodes, plus the
    largest per-event transmission time of each constrained link."""
    where = placement or topology.placement
    caps = topology.capacity_by_node
    per_node: dict[str, float] = {}
    for op in topology.operators:
        node = where[op.id]
        per_node[node] = max(per_node.get(node, 0.0), sum(op.cost) / caps[node])
    total = sum(per_node.values())
    sizes = _event_bytes(topology)
    for link in topology.links:
        if link.bandwidth is not None:
            total += max(sizes.values()) / link.bandwidth
    return total


def _event_bytes(topology: Topology) -> dict[str, float]:
    sizes = {s.id: s.event_bytes for s in topology.sources}
    sizes.update({o.id: o.event_bytes for o in topology.operators})
    return sizes


def _link_resources(
    topology: Topology, placement: Mapping[str, str], model: LoadModel
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Bytes per subinterval on each finite-bandwidth link, with its bandwidth.

    An operator's output crosses a link once per destination node that hosts
    one of its consumers (the simulator sends it once and fans out remotely).
    """
    constrained = [lk for lk in topology.links if lk.bandwidth is not None]
    if not constrained:
        return [], np.zeros((0, model.intervals)), np.zeros(0)
    index = {(lk.src, lk.dst): k for k, lk in enumerate(constrained)}
    coef = np.zeros((len(constrained), model.basis.shape[0]))
    position = {op_id: k for k, op_id in enumerate(topology.operator_ids)}
    for op in topology.operators:
        here = placement[op.id]
        targets = {placement[child] for child, _ in topology.downstream[op.id]} - {here}
        for there in targets:
            k = index.get((here, there))
            if k is not None:
                coef[k] += op.event_bytes * model.op_output[position[op.id]]
    names = [f"{lk.src}->{lk.dst}" for lk in constrained]
    return names, coef @ model.basis, np.array([lk.bandwidth for lk in constrained], dtype=float)


def path_delays(
    topology: Topology, placement: Mapping[str, str]
) -> tuple[dict[str, float], dict[str, float]]:
    """Per node, the least and greatest propagation delay over the source-to-sink paths
    through it (P_min, P_max of section VII-B); 0 for nodes on no path."""
    delay = {(lk.src, lk.dst): lk.delay for lk in topology.links}

    def hop(a: str, b: str) -> float:
        return 0.0 if placement[a] == placement[b] else delay.get((placement[a], placement[b]), 0.0)

    order = topology.topological_order
    pre_min: dict[str, float] = {}
    pre_max: dict[str, float] = {}
    for op_id in order:
        inputs = topology.operator_by_id[op_id].inputs
        # A source input starts a path here, with no delay so far.
        pre_min[op_id] = min(pre_min[u] + hop(u, op_id) if u in pre_min else 0.0 for u in inputs)
        pre_max[op_id] = max(pre_max[u] + hop(u, op_id) if u in pre_max else 0.0 for u in inputs)
    suf_min: dict[str, float] = {}
    suf_max: dict[str, float] = {}
    for op_id in reversed(order):
        downs = [d for d, _ in topology.downstream[op_id]]
        suf_min[op_id] = min((suf_min[d] + hop(op_id, d) for d in downs), default=0.0)
        suf_max[op_id] = max((suf_max[d] + hop(op_id, d) for d in downs), default=0.0)
    low: dict[str, float] = {}
    high: dict[str, float] = {}
    for op_id in order:
        node = placement[op_id]
        through_min = pre_min[op_id] + suf_min[op_id]
        through_max = pre_max[op_id] + suf_max[op_id]
        low[node] = min(low.get(node, through_min), through_min)
        high[node] = max(high.get(node, through_max), through_max)
    return low, high


def estimate(topology: Topology, arrivals: Arrivals | np.ndarray) -> Estimate:
    """Full evaluation: arrivals -> DLTS -> CE -> Mace, bounds and per-query Mace."""
    counts = arrivals.for_topology(topology) if isinstance(arrivals, Arrivals) else arrivals
    return PlacementEvaluator(topology, build_load_model(topology, counts)).estimate()


class PlacementEvaluator:
    """Evaluates placements of one topology under one load model, incrementally.

    The state is the (nodes x basis) load coefficients of the current
    placement; one fused pass (:func:`estimator.kernels.node_pass`) turns it into
    node DLTS, CE/C, each node's peak CE/C and the per-subinterval top-3 of CE/C;
    per-query Mace comes from :func:`estimator.kernels.query_maxima` (the rule of
    :func:`estimator.mace.per_query_max`) when a full estimate is asked for.
    A move is evaluated from the two touched rows and the top-3 alone, and
    committing it rewrites those two rows and repairs the top-3
    (:func:`estimator.kernels.commit_rows`).
    """

    def __init__(
        self, topology: Topology, model: LoadModel, placement: Mapping[str, str] | None = None
    ):
        self.topology = topology
        self.model = model
        self.node_ids = topology.node_ids
        self._node_index = topology.node_index
        self._op_index = topology.operator_index
        self.capacities = np.array([n.capacity for n in topology.nodes], dtype=float)
        self._service = self.capacities * topology.subinterval
        self._has_links = any(lk.bandwidth is not None or lk.delay > 0 for lk in topology.links)
        pairs = [
            (row, topology.operator_index[o])
            for row, q in enumerate(topology.queries)
            for o in topology.operators_of_query(q)
        ]
        self._member_query = np.array([r for r, _ in pairs], dtype=np.int64)
        self._member_op = np.array([o for _, o in pairs], dtype=np.int64)
        host_index = topology.node_index
        self._host_row = (
            np.array([host_index[n.host] if n.host else -1 for n in topology.nodes])
            if topology.hosted
            else None
        )
        self._op_cost = np.array(topology.operator_cost, dtype=float)
        self.placement: dict[str, str] = dict(placement or topology.placement)
        where, index = self.placement, self._node_index
        self._assignment = np.fromiter(
            (index[where[o]] for o in topology.operator_ids),
            dtype=np.int64,
            count=len(topology.operator_ids),
        )
        # numba loads with the first evaluator, not with this module: reading a run's
        # report (estimator.runs) needs none of its kernels
        from estimator import kernels

        self._kernels = kernels
        # links and hosts make a move touch more than two rows: moves are evaluated fully
        self._incremental = not (self._has_links or topology.hosted)
        self._evaluate_all()

    def _evaluate_all(self) -> None:
        """Node rows, DLTS, CE/C and the top-3 of the current assignment, from scratch."""
        kernels, model = self._kernels, self.model
        self._node_coef = self.topology.with_hosts(
            kernels.scatter_rows(self._assignment, model.op_load, len(self.node_ids))
        )
        self.node_dlts, self.ce_seconds = kernels.node_matrices(len(self.node_ids), model.intervals)
        self._top_values, self._top_rows, self.peaks = kernels.node_pass(
            self._node_coef,
            model.basis,
            self._service,
            self.capacities,
            self.node_dlts,
            self.ce_seconds,
        )
        self._summarize()

    def _summarize(self) -> None:
        """Mace and MaceWC from the current rows and top-3."""
        # Finite-bandwidth links are resources too: their CE enters Mace, so the full
        # estimate is needed anyway; it is kept for :meth:`estimate` until the next move.
        self._full = self._estimate() if self._has_links else None
        self.mace = (
            self._full.series.copy()
            if self._full is not None
            else np.maximum(self._top_values[0], 0.0)
        )
        self.mace_wc = float(self.mace.max()) if self.mace.size else 0.0

    @property
    def top3(self) -> tuple[np.ndarray, np.ndarray]:
        """Per subinterval, the three largest CE/C values and their node rows, largest first
        (ties: lower row first; value -1 and row -1 where fewer than three nodes)."""
        return self._top_values, self._top_rows

    @property
    def node_coef(self) -> np.ndarray:
        """The (nodes x basis) load coefficients of the current placement (read-only use)."""
        return self._node_coef

    @property
    def service(self) -> np.ndarray:
        """Per node, the capacity of one subinterval (C_i * w)."""
        return self._service

    def _query_mask(self) -> np.ndarray:
        mask = np.zeros((len(self.topology.queries), len(self.node_ids)), dtype=np.bool_)
        mask[self._member_query, self._assignment[self._member_op]] = True
        if self._host_row is not None:  # a query on a hosted node is on its host too
            for row in np.flatnonzero(self._host_row >= 0):
                mask[:, self._host_row[row]] |= mask[:, row]
        return mask

    def epsilon(self) -> float:
        """The bound's eps for the current placement (see :func:`epsilon`)."""
        if self._has_links:
            return epsilon(self.topology, self.placement)
        per_node = np.zeros(len(self.node_ids))
        np.maximum.at(per_node, self._assignment, self._op_cost / self.capacities[self._assignment])
        return float(per_node.sum())

    def estimate(self) -> Estimate:
        """The full Estimate for the current placement (including network resources)."""
        if self._full is not None:
            return self._full
        return self._estimate()

    def _estimate(self) -> Estimate:
        topology = self.topology
        query_mask = self._query_mask()
        if not self._has_links:
            eps = self.epsilon()
            mace = np.maximum(self._top_values[0], 0.0)
            maxima = self._kernels.query_maxima(self.ce_seconds, query_mask)
            return Estimate(
                subinterval=topology.subinterval,
                resources=self.node_ids,
                capacities=self.capacities,
                dlts=self.node_dlts,
                ce_seconds=self.ce_seconds,
                series=mace,
                bottleneck_index=np.maximum(self._top_rows[0], 0),
                lower=mace.copy(),
                upper=mace + topology.subinterval + eps,
                epsilon=eps,
                per_query={q: maxima[k] for k, q in enumerate(topology.queries)},
            )
        names, link_load, bandwidth = _link_resources(topology, self.placement, self.model)
        resources = [*self.node_ids, *names]
        low, high = path_delays(topology, self.placement)
        worst = max(high.values(), default=0.0)
        query_rows = {
            q: np.concatenate([query_mask[k], np.zeros(len(names), dtype=bool)])
            for k, q in enumerate(topology.queries)
        }
        return estimate_from_dlts(
            np.vstack([self.node_dlts, link_load]),
            np.concatenate([self.capacities, bandwidth]),
            resources,
            topology.subinterval,
            self.epsilon(),
            query_rows,
            np.array([low.get(r, 0.0) for r in resources]),
            np.array([high.get(r, worst) for r in resources]),
        )

    # -- incremental moves --------------------------------------------------
    def operator_dlts(self, op_id: str) -> np.ndarray:
        return self.model.op_load[self._op_index[op_id]] @ self.model.basis

    def _touched(self, op_id: str, node: str) -> tuple[int, int]:
        if op_id not in self._op_index:
            raise ModelError(f"move: unknown operator '{op_id}'")
        if node not in self._node_index:
            raise ModelError(f"move: unknown node '{node}'")
        return int(self._assignment[self._op_index[op_id]]), self._node_index[node]

    def move_mace_series(self, op_id: str, node: str) -> np.ndarray:
        """Mace per subinterval if ``op_id`` moved to ``node``; state is unchanged."""
        src, dst = self._touched(op_id, node)
        if src == dst:
            return self.mace.copy()
        if not self._incremental:
            trial = PlacementEvaluator(self.topology, self.model, {**self.placement, op_id: node})
            return trial.mace
        return self._kernels.move_series(
            self._node_coef,
            self.model.op_load[self._op_index[op_id]],
            self.model.basis,
            self._service,
            self.capacities,
            self._top_values,
            self._top_rows,
            src,
            dst,
        )

    def move_mace_wc(self, op_id: str, node: str) -> float:
        """MaceWC if ``op_id`` moved to ``node``, touching only the two nodes involved."""
        series = self.move_mace_series(op_id, node)
        return float(series.max()) if series.size else 0.0

    def apply_move(self, op_id: str, node: str) -> None:
        """Commit a move: rewrite the two touched rows and repair the top-3."""
        src, dst = self._touched(op_id, node)
        if src == dst:
            return
        self._assignment[self._op_index[op_id]] = dst
        self.placement[op_id] = node
        if self.topology.hosted:  # host rows change too
            self._evaluate_all()
            return
        row = self.model.op_load[self._op_index[op_id]]
        self._node_coef[src] -= row
        self._node_coef[dst] += row
        self._kernels.commit_rows(
            self._node_coef,
            self.model.basis,
            self._service,
            self.capacities,
            self.node_dlts,
            self.ce_seconds,
            self._top_values,
            self._top_rows,
            self.peaks,
            src,
            dst,
        )
        self._summarize()
