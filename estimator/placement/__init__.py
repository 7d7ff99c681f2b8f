"""Operator placement and planning (docs/design.md, "Placement and planning"; Mace paper
section IX).

``ALGORITHMS`` maps the names the command line and the dashboard use to the
algorithms; each is pure (no I/O) and takes a :class:`PlacementProblem`, a time
budget in seconds, a seeded ``numpy.random.Generator`` and an optional
``progress(fraction, best_mace_wc)`` callback.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np

from estimator.arrivals import Arrivals
from estimator.errors import ModelError
from estimator.model import Topology
from estimator.placement.common import (
    PlacementAlgorithm,
    PlacementProblem,
    PlacementResult,
    Progress,
)
from estimator.placement.corr import corr
from estimator.placement.fugu import fugu
from estimator.placement.mace_hc import mace_hc
from estimator.placement.pd_greedy import pd_greedy
from estimator.placement.random_search import baseline, random_search

ALGORITHMS: dict[str, PlacementAlgorithm] = {
    "mace-hc": mace_hc,
    "baseline": baseline,
    "random": random_search,
    "corr": corr,
    "pd-greedy": pd_greedy,
    "fugu": fugu,
}

DEFAULT_BUDGET = 5.0


def place(
    topology: Topology,
    arrivals: Arrivals | np.ndarray,
    algorithm: str = "mace-hc",
    *,
    budget: float = DEFAULT_BUDGET,
    rng: np.random.Generator | None = None,
    movable: Collection[str] | None = None,
    progress: Progress | None = None,
) -> PlacementResult:
    """Run one named algorithm on a topology and arrival series."""
    if algorithm not in ALGORITHMS:
        raise ModelError(
            f"unknown placement algorithm '{algorithm}' (expected one of {', '.join(ALGORITHMS)})"
        )
    problem = PlacementProblem.from_arrivals(topology, arrivals, movable)
    generator = rng if rng is not None else np.random.default_rng()
    return ALGORITHMS[algorithm](problem, budget=budget, rng=generator, progress=progress)


__all__ = [
    "ALGORITHMS",
    "DEFAULT_BUDGET",
    "PlacementAlgorithm",
    "PlacementProblem",
    "PlacementResult",
    "Progress",
    "place",
]
