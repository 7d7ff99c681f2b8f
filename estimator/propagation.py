"""Propagating input stimulus series through the operator DAG (DESIGN 7.1, 7.2).

For linear operators every series in the graph is a linear combination of the
source arrival series, so each operator carries a coefficient vector over a
*basis* of series instead of a full time series. An operator with the
non-linear ``product`` model (a windowed join) adds its output series to the
basis, and everything downstream of it stays linear in the extended basis.
Node DLTS is then a (nodes x basis) matrix times the (basis x subintervals)
basis matrix.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from estimator.model import Topology


@dataclass(frozen=True)
class LoadModel:
    """Per-operator coefficients over a basis of series.

    ``basis`` is (B x D): the topology's source arrivals, then the outputs of
    non-linear operators. Operator j's DLTS is ``op_load[j] @ basis``, its output
    series ``op_output[j] @ basis`` and its port-q input series
    ``port_input[j][q] @ basis``. Rows follow ``topology.operator_ids``.
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


def build_load_model(topology: Topology, source_counts: np.ndarray) -> LoadModel:
    """Propagate ``source_counts`` (rows in ``topology.source_ids`` order) through the DAG."""
    counts = np.asarray(source_counts, dtype=float)
    n_sources = len(topology.sources)
    n_product = sum(1 for o in topology.operators if o.model == "product")
    width = n_sources + n_product
    basis = np.zeros((width, counts.shape[1]))
    basis[:n_sources] = counts

    position = {op_id: k for k, op_id in enumerate(topology.operator_ids)}
    output: dict[str, np.ndarray] = {}
    for k, source in enumerate(topology.source_ids):
        unit = np.zeros(width)
        unit[k] = 1.0
        output[source] = unit

    m = len(topology.operators)
    op_load = np.zeros((m, width))
    op_output = np.zeros((m, width))
    port_input: list[np.ndarray] = [np.zeros(0)] * m
    next_basis_row = n_sources
    for op_id in topology.topological_order:
        op = topology.operator_by_id[op_id]
        row = position[op_id]
        ports = np.stack([output[upstream] for upstream in op.inputs])
        port_input[row] = ports
        op_load[row] = np.asarray(op.cost) @ ports
        if op.model == "product":
            series = op.product_coefficient * np.prod(ports @ basis, axis=0)
            basis[next_basis_row] = series
            op_output[row, next_basis_row] = 1.0
            next_basis_row += 1
        else:
            op_output[row] = np.asarray(op.selectivity) @ ports
        output[op_id] = op_output[row]
    return LoadModel(basis=basis, op_load=op_load, op_output=op_output, port_input=tuple(port_input))
