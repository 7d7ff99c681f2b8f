"""Placement optimization for the What-if page, run as a Dash background callback.

:func:`optimize` runs the chosen placement algorithms one after the other within
a shared time budget and reports :class:`Progress` through a callback; the page
wires it to ``callbacks.callback(background=True, progress=..., running=...,
cancel=...)``, so Dash runs it in a worker process, shows its progress and kills
it when the user presses Cancel (see :mod:`dashboard.shell.jobs`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from dashboard.core.errors import OptimizeError
from estimator.model import Topology
from estimator.placement import ALGORITHMS, capped, fewest_moves, moves
from estimator.placement.common import PlacementProblem
from estimator.placement.objectives import (
    MAX_WORSE_PERCENT,
    best_within_limit,
    query_worst_cases,
)
from estimator.propagation import LoadModel

MAX_BUDGET = 120.0


@dataclass(frozen=True)
class Progress:
    """How far a run of the optimizer is: the share done, the algorithm running, the
    best worst case found so far."""

    fraction: float
    current: str
    best_wc: float | None = None

    @property
    def percent(self) -> int:
        return round(100 * self.fraction)

    @property
    def label(self) -> str:
        best = "" if self.best_wc is None else f" · best {self.best_wc:.4f} s"
        return f"{self.current} {self.percent}%{best}"


@dataclass(frozen=True)
class Outcome:
    """The best placement found, its MaceWC and algorithm, every algorithm's result, and
    each query's MaceWC before and after (``max_worse``: the objective's limit in percent,
    None for the system's worst case alone)."""

    best_wc: float
    best_algorithm: str
    placement: dict[str, str]
    results: dict[str, float] = field(default_factory=dict)
    before_wc: float | None = None
    per_query: dict[str, tuple[float, float]] = field(default_factory=dict)
    max_worse: float | None = None
    moved: int = 0
    operators: int = 0
    max_moves: int | None = None

    @property
    def label(self) -> str:
        text = f"done · best {self.best_algorithm} {self.best_wc:.4f} s"
        if self.before_wc is not None:
            text += f" (current {self.before_wc:.4f} s)"
        text += f" · proposes {self.moved} move{'' if self.moved == 1 else 's'}"
        text += f" of {self.operators} operators"
        if self.max_moves is not None:
            text += f" (at most {self.max_moves})"
        if self.max_worse is not None:
            text += f" · no query worse than {self.max_worse:g}%"
        return text

    def query_rows(self) -> list[dict[str, str]]:
        """One row per query for the result table: MaceWC before, after and the change."""
        rows = []
        for query, (before, after) in self.per_query.items():
            if before > 0:
                change = f"{(after - before) / before:+.1%}"
            else:
                change = "no change" if after == before else "new delay"
            rows.append(
                {
                    "query": query,
                    "current (s)": f"{before:.4f}",
                    "optimized (s)": f"{after:.4f}",
                    "change": change,
                }
            )
        return rows


def check_request(algorithms: Sequence[str], budget: float) -> None:
    """Raise OptimizeError unless every algorithm is known and the budget is in range."""
    unknown = [a for a in algorithms if a not in ALGORITHMS]
    if not algorithms or unknown:
        raise OptimizeError(
            f"optimize: choose algorithms among {', '.join(ALGORITHMS)}"
            + (f" (unknown: {', '.join(unknown)})" if unknown else "")
        )
    if not 0 < budget <= MAX_BUDGET:
        raise OptimizeError(f"optimize: the time budget must be in (0, {MAX_BUDGET:g}] seconds")


def parse_limit(objective: str | None, value: object) -> float | None:
    """The optimizer's objective from the page: None for the system's worst case, or the
    percentage by which no query may get worse (OptimizeError names a bad value)."""
    if objective in (None, "system"):
        return None
    if objective != "queries":
        raise OptimizeError(f"optimize: unknown objective {objective!r}")
    text = str(value if value is not None else "").strip().rstrip("%").strip()
    try:
        number = float(text)
    except ValueError:
        raise OptimizeError(f"optimize: enter X as a percentage, got {value!r}") from None
    if not 0 <= number <= MAX_WORSE_PERCENT:  # also refuses nan
        raise OptimizeError(
            f"optimize: X must be a percentage in [0, {MAX_WORSE_PERCENT:g}], got {value!r}"
        )
    return number


def parse_max_moves(value: object) -> int | None:
    """The cap on the operators the optimizer may move: None when the field is empty
    (OptimizeError names a bad value)."""
    text = str(value if value is not None else "").strip()
    if not text:
        return None
    try:
        number = int(text)
    except ValueError:
        raise OptimizeError(
            f"optimize: enter the most moves as a whole number, got {value!r}"
        ) from None
    if number < 0:
        raise OptimizeError(f"optimize: the most moves must be 0 or more, got {value!r}")
    return number


def optimize(
    topology: Topology,
    model: LoadModel,
    algorithms: Sequence[str],
    budget: float,
    report: Callable[[Progress], None] = lambda _: None,
    seed: int = 0,
    max_worse: float | None = None,
    max_moves: int | None = None,
) -> Outcome:
    """Run ``algorithms`` in turn, each with an equal share of ``budget`` seconds, and
    return the best placement found (``report`` gets the progress as it goes).

    With ``max_worse`` (percent), the result is the best placement that makes no query
    worse than that (:func:`estimator.placement.objectives.best_within_limit`); the
    algorithms get half the budget and the search within the limit the other half.

    Every algorithm's result keeps only the moves that lower MaceWC
    (:func:`estimator.placement.fewest_moves`), and at most ``max_moves`` of them
    (:func:`estimator.placement.capped`)."""
    check_request(algorithms, budget)
    if max_worse is not None and not 0 <= max_worse <= MAX_WORSE_PERCENT:
        raise OptimizeError(
            f"optimize: the query limit must be in [0, {MAX_WORSE_PERCENT:g}] percent"
        )
    share = budget / len(algorithms) / (1 if max_worse is None else 2)
    problem = PlacementProblem(topology, model)
    results: dict[str, float] = {}
    placements: list[dict[str, str]] = []
    found: Outcome | None = None
    for k, name in enumerate(algorithms):
        best_wc = None if found is None else found.best_wc

        def progress(
            fraction: float, _: float, k: int = k, name: str = name, best: float | None = best_wc
        ) -> None:
            done = (k + min(max(fraction, 0.0), 1.0)) / len(algorithms)
            report(Progress(done, name, best))

        result = fewest_moves(
            problem,
            ALGORITHMS[name](
                problem, budget=share, rng=np.random.default_rng(seed), progress=progress
            ),
        )
        if max_moves is not None:
            result = capped(problem, result, max_moves)
        results[name] = float(result.mace_wc)
        placements.append(dict(result.placement))
        if found is None or result.mace_wc < found.best_wc:
            found = Outcome(float(result.mace_wc), name, dict(result.placement))
        report(Progress((k + 1) / len(algorithms), name, found.best_wc))
    assert found is not None  # check_request guarantees one algorithm
    if max_worse is not None:
        limited, wc = best_within_limit(problem, placements, max_worse, budget=budget / 2)
        name = found.best_algorithm if limited == found.placement else "within the limit"
        found = Outcome(wc, name, limited)
    current = dict(topology.placement)
    before = query_worst_cases(problem, current)
    after = query_worst_cases(problem, found.placement)
    return Outcome(
        found.best_wc,
        found.best_algorithm,
        found.placement,
        results,
        before_wc=float(problem.full_mace_wc(current)),
        per_query={q: (before[q], after[q]) for q in before},
        max_worse=max_worse,
        moved=len(moves(problem, found.placement)),
        operators=len(problem.operator_ids),
        max_moves=max_moves,
    )
