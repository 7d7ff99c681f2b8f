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
from estimator.mace import Estimate, cumulative_excess, estimate_from_dlts
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


def _link_resources(topology: Topology, placement: Mapping[str, str], model: LoadModel) -> tuple[list[str], np.ndarray, np.ndarray]:
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


def path_delays(topology: Topology, placement: Mapping[str, str]) -> tuple[dict[str, float], dict[str, float]]:
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
    """Evaluates placements of one topology under one load model, incrementally."""

    def __init__(self, topology: Topology, model: LoadModel, placement: Mapping[str, str] | None = None):
        self.topology = topology
        self.model = model
        self.node_ids = topology.node_ids
        self._node_index = {n: k for k, n in enumerate(self.node_ids)}
        self._op_index = {o: k for k, o in enumerate(topology.operator_ids)}
        self.capacities = np.array([n.capacity for n in topology.nodes], dtype=float)
        self._service = self.capacities * topology.subinterval
        self._has_links = any(lk.bandwidth is not None for lk in topology.links) or any(
            lk.delay > 0 for lk in topology.links
        )
        self.placement: dict[str, str] = dict(placement or topology.placement)
        self._assignment = np.array([self._node_index[self.placement[o]] for o in topology.operator_ids])
        node_coef = np.zeros((len(self.node_ids), model.basis.shape[0]))
        np.add.at(node_coef, self._assignment, model.op_load)
        self.node_dlts = node_coef @ model.basis
        self._refresh()

    # -- full state -------------------------------------------------------
    def _refresh(self) -> None:
        ce = cumulative_excess(self.node_dlts, self._service)
        self.ce_seconds = ce / self.capacities[:, None]
        self._top_values, self._top_rows = _top3(self.ce_seconds)
        self.mace = self._top_values[0]
        self.mace_wc = float(self.mace.max()) if self.mace.size else 0.0

    def estimate(self) -> Estimate:
        """The full Estimate for the current placement (including network resources)."""
        topology = self.topology
        resources = list(self.node_ids)
        dlts = self.node_dlts
        caps = self.capacities
        if self._has_links:
            names, link_load, bandwidth = _link_resources(topology, self.placement, self.model)
            if names:
                resources += names
                dlts = np.vstack([dlts, link_load])
                caps = np.concatenate([caps, bandwidth])
        n_res = len(resources)
        delay_min = delay_max = None
        if self._has_links:
            low, high = path_delays(topology, self.placement)
            delay_min = np.array([low.get(r, 0.0) for r in resources])
            worst = max(high.values(), default=0.0)
            delay_max = np.array([high.get(r, worst) for r in resources])
        query_rows = {}
        for query in topology.queries:
            mask = np.zeros(n_res, dtype=bool)
            for op_id in topology.operators_of_query(query):
                mask[self._node_index[self.placement[op_id]]] = True
            query_rows[query] = mask
        return estimate_from_dlts(
            dlts,
            caps,
            resources,
            topology.subinterval,
            epsilon(topology, self.placement),
            query_rows,
            delay_min,
            delay_max,
        )

    # -- incremental moves --------------------------------------------------
    def operator_dlts(self, op_id: str) -> np.ndarray:
        return self.model.op_load[self._op_index[op_id]] @ self.model.basis

    def _moved_rows(self, op_id: str, node: str) -> tuple[int, int, np.ndarray, np.ndarray]:
        if op_id not in self._op_index:
            raise ModelError(f"move: unknown operator '{op_id}'")
        if node not in self._node_index:
            raise ModelError(f"move: unknown node '{node}'")
        src = int(self._assignment[self._op_index[op_id]])
        dst = self._node_index[node]
        delta = self.operator_dlts(op_id)
        rows = np.stack([self.node_dlts[src] - delta, self.node_dlts[dst] + delta])
        return src, dst, delta, rows

    def move_mace_series(self, op_id: str, node: str) -> np.ndarray:
        """Mace per subinterval if ``op_id`` moved to ``node``; state is unchanged."""
        src, dst, _, rows = self._moved_rows(op_id, node)
        if src == dst:
            return self.mace.copy()
        if self._has_links:
            trial = PlacementEvaluator(self.topology, self.model, {**self.placement, op_id: node})
            return trial.mace
        caps = self.capacities[[src, dst]]
        ce = cumulative_excess(rows, self._service[[src, dst]]) / caps[:, None]
        rows_top = self._top_rows
        untouched = (rows_top != src) & (rows_top != dst)
        first = np.argmax(untouched, axis=0)
        cols = np.arange(rows_top.shape[1])
        others = np.where(untouched[first, cols], self._top_values[first, cols], 0.0)
        return np.maximum(np.maximum(ce[0], ce[1]), others)

    def move_mace_wc(self, op_id: str, node: str) -> float:
        """MaceWC if ``op_id`` moved to ``node``, touching only the two nodes involved."""
        series = self.move_mace_series(op_id, node)
        return float(series.max()) if series.size else 0.0

    def apply_move(self, op_id: str, node: str) -> None:
        """Commit a move and update the state."""
        src, dst, delta, rows = self._moved_rows(op_id, node)
        if src == dst:
            return
        self.node_dlts[src] = rows[0]
        self.node_dlts[dst] = rows[1]
        self._assignment[self._op_index[op_id]] = dst
        self.placement[op_id] = node
        self._refresh()


def _top3(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The three largest values per column and their row indices, largest first.

    Rows beyond the matrix are padded with value 0 and index -1 (CE is never
    negative), so with at most two rows touched by a move at least one entry
    always stands for the untouched rest.
    """
    n, d = values.shape
    k = min(3, n)
    if n > 3:
        rows = np.argpartition(-values, 2, axis=0)[:3]
    else:
        rows = np.broadcast_to(np.arange(n)[:, None], (n, d)).copy()
    top = np.take_along_axis(values, rows, axis=0)
    order = np.argsort(-top, axis=0, kind="stable")
    rows = np.take_along_axis(rows, order, axis=0)
    top = np.take_along_axis(top, order, axis=0)
    if k < 3:
        top = np.vstack([top, np.zeros((3 - k, d))])
        rows = np.vstack([rows, np.full((3 - k, d), -1)])
    return top, rows
