"""Propagating input stimulus series through the operator DAG (docs/design.md, "Mathematics").

For linear operators every series in the graph is a linear combination of the
source arrival series, so each operator carries a coefficient vector over a
*basis* of series instead of a full time series. An operator with the
non-linear ``product`` model (a windowed join) adds its output series to the
basis, and everything downstream of it stays linear in the extended basis.
Node DLTS is then a (nodes x basis) matrix times the (basis x subintervals)
basis matrix.

Compiling the coefficients depends only on the topology; binding them to an
arrival series is cheap, so one compiled topology evaluates many windows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from estimator.errors import ModelError
from estimator.model import Topology


@dataclass(frozen=True)
class Coefficients:
    """Per-operator coefficient vectors over the basis (rows in ``topology.operator_ids``).

    ``products`` lists, in topological order, (operator row, basis row,
    coefficient) for each ``product`` operator, whose output series is a basis row.
    """

    n_sources: int
    op_load: np.ndarray
    op_output: np.ndarray
    port_input: tuple[np.ndarray, ...]
    products: tuple[tuple[int, int, float], ...]


@dataclass(frozen=True)
class LoadModel:
    """Coefficients bound to a basis of series.

    ``basis`` is (B x D): the topology's source arrivals, then the outputs of
    non-linear operators. Operator j's DLTS is ``op_load[j] @ basis``, its output
    series ``op_output[j] @ basis`` and its port-q input series
    ``port_input[j][q] @ basis``.
    """

    basis: np.ndarray
    op_load: np.ndarray
    op_output: np.ndarray
    port_input: tuple[np.ndarray, ...]

    @property
    def intervals(self) -> int:
        return int(self.basis.shape[1])

    def operator_dlts(self) -> np.ndarray:
        """(operators x subintervals) DLTS matrix."""
        return self.op_load @ self.basis

    def input_series(self, op_index: int, port: int) -> np.ndarray:
        return self.port_input[op_index][port] @ self.basis

    def output_series(self, op_index: int) -> np.ndarray:
        return self.op_output[op_index] @ self.basis


def compile_topology(topology: Topology) -> Coefficients:
    """Coefficient vectors of every operator's ports, load and output."""
    n_sources = len(topology.sources)
    n_product = sum(1 for o in topology.operators if o.model == "product")
    width = n_sources + n_product
    position = {op_id: k for k, op_id in enumerate(topology.operator_ids)}
    identity = np.eye(width)
    output: dict[str, np.ndarray] = {s: identity[k] for k, s in enumerate(topology.source_ids)}

    m = len(topology.operators)
    op_load = np.zeros((m, width))
    op_output = np.zeros((m, width))
    port_input: list[np.ndarray] = [np.zeros(0)] * m
    products: list[tuple[int, int, float]] = []
    for op_id in topology.topological_order:
        op = topology.operator_by_id[op_id]
        row = position[op_id]
        ports = np.stack([output[upstream] for upstream in op.inputs])
        port_input[row] = ports
        op_load[row] = np.asarray(op.cost) @ ports
        if op.model == "product":
            basis_row = n_sources + len(products)
            products.append((row, basis_row, op.product_coefficient))
            op_output[row, basis_row] = 1.0
        else:
            op_output[row] = np.asarray(op.selectivity) @ ports
        output[op_id] = op_output[row]
    return Coefficients(n_sources, op_load, op_output, tuple(port_input), tuple(products))


def bind(coefficients: Coefficients, source_counts: np.ndarray) -> LoadModel:
    """Bind compiled coefficients to arrivals (rows in the topology's source order)."""
    counts = np.asarray(source_counts, dtype=float)
    basis = np.zeros((coefficients.op_load.shape[1], counts.shape[1]))
    basis[: coefficients.n_sources] = counts
    for row, basis_row, coefficient in coefficients.products:
        basis[basis_row] = coefficient * np.prod(coefficients.port_input[row] @ basis, axis=0)
    return LoadModel(basis, coefficients.op_load, coefficients.op_output, coefficients.port_input)


def build_load_model(topology: Topology, source_counts: np.ndarray) -> LoadModel:
    """Propagate ``source_counts`` (rows in ``topology.source_ids`` order) through the DAG."""
    return bind(compile_topology(topology), source_counts)


def spread(totals: np.ndarray, shape: np.ndarray) -> np.ndarray:
    """(rows x D x k): each of ``totals`` (rows x D) spread over its k sub-buckets in
    proportion to ``shape`` (rows x D x k), evenly where the shape holds nothing."""
    totals = np.asarray(totals, dtype=float)
    shape = np.asarray(shape, dtype=float)
    k = shape.shape[2]
    held = shape.sum(axis=2)
    share = np.full(shape.shape, 1.0 / k)
    np.divide(shape, held[:, :, None], out=share, where=held[:, :, None] > 0)
    return share * totals[:, :, None]


def fine_basis(topology: Topology, model: LoadModel, fine_counts: np.ndarray) -> np.ndarray:
    """The model's basis (B x D) spread over k sub-buckets of each subinterval (B x D x k)
    like the arrivals per sub-bucket ``fine_counts`` (sources x D x k, topology order).

    A source row takes the shape of its fine counts; a ``product`` operator's row the
    shape of its model evaluated per sub-bucket. Every row keeps the model's total of
    each subinterval, so whatever is computed linearly from this basis sums over the
    sub-buckets to what the model gives per subinterval (the fine counts are only a
    shape: they need not add up to the model's arrivals, and a subinterval without any
    is spread evenly)."""
    coefficients = compile_topology(topology)
    fine = np.asarray(fine_counts, dtype=float)
    sources = coefficients.n_sources
    if fine.ndim != 3 or fine.shape[:2] != (sources, model.intervals):
        raise ModelError(
            f"arrival profile of shape {fine.shape}, expected ({sources}, {model.intervals}, k)"
        )
    out = np.zeros((model.basis.shape[0], *fine.shape[1:]))
    out[:sources] = spread(model.basis[:sources], fine)
    for row, basis_row, _ in coefficients.products:  # in topological order
        inputs = np.einsum("qb,bdk->qdk", coefficients.port_input[row], out)
        out[basis_row] = spread(model.basis[basis_row][None], np.prod(inputs, axis=0)[None])[0]
    return out


def port_load(topology: Topology, model: LoadModel) -> np.ndarray:
    """Work per operator input port and subinterval (inputs x D, the rows of
    :attr:`Topology.input_offsets`): each port's cost times its input series."""
    rows = [
        cost * model.port_input[j][q]
        for j, op in enumerate(topology.operators)
        for q, cost in enumerate(op.cost)
    ]
    if not rows:
        return np.zeros((0, model.intervals))
    return np.vstack(rows) @ model.basis
