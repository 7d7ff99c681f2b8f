"""A topology compiled to flat arrays for the simulation engines.

Both engines (the readable reference in :mod:`simulator.reference` and the
numba engine in :mod:`simulator.fast`) read the same :class:`Plan`, so they
agree on indices: producers are the sources (``0..S-1``) followed by the
operators (``S..S+M-1``), input ports are numbered globally in operator order,
and policies and cost distributions are small integer codes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from estimator.model import Topology
from simulator.errors import SimulationError

POLICIES = (
    "stimulus",
    "fifo",
    "round-robin",
    "longest-queue",
    "min-latency",
    "min-cost",
    "subinterval",
)
STIMULUS, FIFO, ROUND_ROBIN, LONGEST_QUEUE, MIN_LATENCY, MIN_COST, SUBINTERVAL = range(7)
COST_DISTRIBUTIONS = ("constant", "uniform", "exponential")
CONSTANT, UNIFORM, EXPONENTIAL = range(3)
DEFAULT_TRAIN = 10


@dataclass(frozen=True)
class Plan:
    """Struct-of-arrays form of a topology with its per-node policies."""

    node_ids: tuple[str, ...]
    source_ids: tuple[str, ...]
    operator_ids: tuple[str, ...]
    query_ids: tuple[str, ...]
    origin: float
    subinterval: float
    cost_distribution: int
    capacity: np.ndarray  # f8[N]
    policy: np.ndarray  # i8[N]
    train: np.ndarray  # i8[N], events per round-robin visit
    op_node: np.ndarray  # i8[M]
    op_query: np.ndarray  # i8[M]
    op_sink: np.ndarray  # bool[M]
    op_product: np.ndarray  # bool[M]
    op_coef: np.ndarray  # f8[M]
    op_first_port: np.ndarray  # i8[M]
    op_ports: np.ndarray  # i8[M]
    port_op: np.ndarray  # i8[P]
    port_number: np.ndarray  # i8[P], port index within its operator
    port_cost: np.ndarray  # f8[P]
    port_sel: np.ndarray  # f8[P]
    down_ptr: np.ndarray  # i8[S+M+1], CSR over producers
    down_port: np.ndarray  # i8[E], global input ports fed by the producer
    producer_bytes: np.ndarray  # f8[S+M]
    link_id: np.ndarray  # i8[N, N], -1 when the nodes share no declared link
    link_delay: np.ndarray  # f8[L]
    link_bandwidth: np.ndarray  # f8[L], inf when unconstrained
    cycle_ptr: np.ndarray  # i8[N+1], CSR of each node's operator cycle (rr, min-*)
    cycle_ops: np.ndarray  # i8[*]
    node_ops_ptr: np.ndarray  # i8[N+1], CSR of each node's operators (longest-queue)
    node_ops: np.ndarray  # i8[*]
    node_ports_ptr: np.ndarray  # i8[N+1], CSR of the input ports of each node's operators
    node_ports: np.ndarray  # i8[*]
    source_nodes_ptr: np.ndarray  # i8[S+1], CSR of nodes consuming each source, ascending
    source_nodes: np.ndarray  # i8[*]

    @property
    def n_sources(self) -> int:
        return len(self.source_ids)


def policy_code(name: str) -> int:
    if name not in POLICIES:
        raise SimulationError(f"unknown policy '{name}' (expected one of {', '.join(POLICIES)})")
    return POLICIES.index(name)


def cost_distribution_code(name: str) -> int:
    if name not in COST_DISTRIBUTIONS:
        raise SimulationError(
            f"unknown cost distribution '{name}' (expected one of {', '.join(COST_DISTRIBUTIONS)})"
        )
    return COST_DISTRIBUTIONS.index(name)


def compile_plan(
    topology: Topology,
    policy: str | Mapping[str, str] = "stimulus",
    *,
    train: int = DEFAULT_TRAIN,
    cost_distribution: str = "exponential",
) -> Plan:
    """Flatten ``topology``; ``policy`` is one name or a mapping node id -> name."""
    if train < 1:
        raise SimulationError(f"train size must be at least 1, got {train}")
    nodes = topology.node_ids
    node_index = {n: k for k, n in enumerate(nodes)}
    if isinstance(policy, str):
        policies = [policy_code(policy)] * len(nodes)
    else:
        for node in policy:
            if node not in node_index:
                raise SimulationError(f"policy: unknown node '{node}'")
        policies = [policy_code(policy.get(n, "stimulus")) for n in nodes]
    order = topology.topological_order
    position = {op_id: k for k, op_id in enumerate(topology.operator_ids)}

    first_port: list[int] = []
    port_op: list[int] = []
    port_number: list[int] = []
    port_cost: list[float] = []
    port_sel: list[float] = []
    for k, op in enumerate(topology.operators):
        first_port.append(len(port_op))
        for q in range(len(op.inputs)):
            port_op.append(k)
            port_number.append(q)
            port_cost.append(op.cost[q])
            port_sel.append(op.selectivity[q])
    sinks = set(topology.sinks)

    down_ptr = [0]
    down_port: list[int] = []
    for item in (*topology.source_ids, *topology.operator_ids):
        for child, q in topology.downstream[item]:
            down_port.append(first_port[position[child]] + q)
        down_ptr.append(len(down_port))

    link_id = np.full((len(nodes), len(nodes)), -1, dtype=np.int64)
    for k, link in enumerate(topology.links):
        link_id[node_index[link.src], node_index[link.dst]] = k

    op_node = [node_index[topology.placement[o]] for o in topology.operator_ids]
    cycles, members = _node_cycles(topology, policies, op_node, order, position)
    source_nodes_ptr = [0]
    source_nodes: list[int] = []
    for s in topology.source_ids:
        consumers = {op_node[position[child]] for child, _ in topology.downstream[s]}
        source_nodes.extend(sorted(consumers))
        source_nodes_ptr.append(len(source_nodes))

    def csr(groups: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
        ptr = np.cumsum([0] + [len(g) for g in groups]).astype(np.int64)
        flat = np.array([x for g in groups for x in g], dtype=np.int64)
        return ptr, flat

    cycle_ptr, cycle_ops = csr(cycles)
    node_ops_ptr, node_ops = csr(members)
    node_ports_ptr, node_ports = csr(
        [[first_port[op] + q for op in group for q in range(len(topology.operators[op].inputs))]
         for group in members]
    )  # fmt: skip
    queries = topology.queries
    return Plan(
        node_ids=nodes,
        source_ids=topology.source_ids,
        operator_ids=topology.operator_ids,
        query_ids=queries,
        origin=topology.origin,
        subinterval=topology.subinterval,
        cost_distribution=cost_distribution_code(cost_distribution),
        capacity=np.array([n.capacity for n in topology.nodes], dtype=np.float64),
        policy=np.array(policies, dtype=np.int64),
        train=np.full(len(nodes), train, dtype=np.int64),
        op_node=np.array(op_node, dtype=np.int64),
        op_query=np.array([queries.index(o.query) for o in topology.operators], dtype=np.int64),
        op_sink=np.array([o.id in sinks for o in topology.operators], dtype=np.bool_),
        op_product=np.array([o.model == "product" for o in topology.operators], dtype=np.bool_),
        op_coef=np.array([o.product_coefficient for o in topology.operators], dtype=np.float64),
        op_first_port=np.array(first_port, dtype=np.int64),
        op_ports=np.array([len(o.inputs) for o in topology.operators], dtype=np.int64),
        port_op=np.array(port_op, dtype=np.int64),
        port_number=np.array(port_number, dtype=np.int64),
        port_cost=np.array(port_cost, dtype=np.float64),
        port_sel=np.array(port_sel, dtype=np.float64),
        down_ptr=np.array(down_ptr, dtype=np.int64),
        down_port=np.array(down_port, dtype=np.int64),
        producer_bytes=np.array(
            [s.event_bytes for s in topology.sources] + [o.event_bytes for o in topology.operators],
            dtype=np.float64,
        ),
        link_id=link_id,
        link_delay=np.array([lk.delay for lk in topology.links], dtype=np.float64),
        link_bandwidth=np.array(
            [math.inf if lk.bandwidth is None else lk.bandwidth for lk in topology.links],
            dtype=np.float64,
        ),
        cycle_ptr=cycle_ptr,
        cycle_ops=cycle_ops,
        node_ops_ptr=node_ops_ptr,
        node_ops=node_ops,
        node_ports_ptr=node_ports_ptr,
        node_ports=node_ports,
        source_nodes_ptr=np.array(source_nodes_ptr, dtype=np.int64),
        source_nodes=np.array(source_nodes, dtype=np.int64),
    )


def _node_cycles(
    topology: Topology,
    policies: list[int],
    op_node: list[int],
    order: tuple[str, ...],
    position: dict[str, int],
) -> tuple[list[list[int]], list[list[int]]]:
    """Per node, the operator visiting cycle of its policy and its operators in file order.

    round-robin and min-cost visit the node's operators in topological order
    (min-cost is Aurora's post-order traversal: every box after its upstream
    boxes). min-latency sorts boxes by Aurora's output cost and appends each
    box's downstream set D(b) (restricted to the node) in topological order.
    """
    n_nodes = len(topology.nodes)
    members: list[list[int]] = [[] for _ in range(n_nodes)]
    for k, node in enumerate(op_node):
        members[node].append(k)
    topo_ops = [position[o] for o in order]
    rank = {op: r for r, op in enumerate(topo_ops)}
    reach = _downstream_sets(topology, order, position)
    cost_of = [sum(o.cost) / len(o.cost) for o in topology.operators]
    sel_of = [sum(o.selectivity) / len(o.selectivity) for o in topology.operators]
    o_sel = [max(math.prod(sel_of[j] for j in reach[k]), 1e-12) for k in range(len(cost_of))]
    output_cost = [sum(cost_of[j] / o_sel[j] for j in reach[k]) for k in range(len(cost_of))]
    cycles: list[list[int]] = []
    for node in range(n_nodes):
        here = [op for op in topo_ops if op_node[op] == node]
        if policies[node] == MIN_LATENCY:
            cycle: list[int] = []
            for box in sorted(here, key=lambda op: (output_cost[op], rank[op])):
                cycle.extend(
                    sorted((j for j in reach[box] if op_node[j] == node), key=lambda j: rank[j])
                )
            cycles.append(cycle)
        else:
            cycles.append(here)
    return cycles, members


def _downstream_sets(
    topology: Topology, order: tuple[str, ...], position: dict[str, int]
) -> list[set[int]]:
    """D(b): each operator and every operator reachable downstream of it."""
    reach: list[set[int]] = [set() for _ in topology.operators]
    for op_id in reversed(order):
        k = position[op_id]
        reach[k].add(k)
        for child, _ in topology.downstream[op_id]:
            reach[k] |= reach[position[child]]
    return reach
