"""Mace estimator: domain model, DLTS, cumulative excess, Mace, bounds, what-if, fitting.

A pure library (numpy and pandas, no I/O beyond the loaders); every other
folder may import it, and it imports none of them.
"""

from __future__ import annotations

from estimator.arrivals import Arrivals
from estimator.errors import MaceError, ModelError
from estimator.evaluator import estimate
from estimator.loaders import load_arrivals, load_placement, load_topology
from estimator.mace import Estimate
from estimator.model import Topology
from estimator.pathaware import ESTIMATORS

__all__ = [
    "ESTIMATORS",
    "Arrivals",
    "Estimate",
    "MaceError",
    "ModelError",
    "Topology",
    "estimate",
    "load_arrivals",
    "load_placement",
    "load_topology",
]
