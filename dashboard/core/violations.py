"""Objective violations of a run: where the measured latency went over a stored objective."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from dashboard.core.data import RunData
from dashboard.core.report import (
    TOLERANCE,
)
from dashboard.core.timeaxis import Clock
from estimator.alerts import MEASURED_BREACH, breaches


@dataclass(frozen=True)
class Violation:
    """A stretch where a query's measured max latency was above its objective, in
    seconds since the run's start, with its peak (seconds of latency)."""

    query: str
    start: float
    end: float
    peak: float
    objective: float
    subintervals: int

    def text(self, clock: Clock) -> str:
        """E.g. "12:03:04–12:03:19 UTC, 15 s, peak 3.2 s"."""
        return (
            f"{clock.span(self.start, self.end)}, {self.end - self.start:g} s, "
            f"peak {self.peak:.3g} s"
        )


def violations(
    run: RunData, objectives: Mapping[str, float], query: str | None = None
) -> list[Violation]:
    """Each query's (or ``query``'s) measured violations of its objective, in time
    order: stretches of subintervals above it (:func:`estimator.alerts.breaches`, gap 0:
    exactly the subintervals above)."""
    w = run.subinterval
    found = [
        Violation(
            q,
            b.start * w,
            (b.end + 1) * w,
            b.value,
            objectives[q],
            b.end - b.start + 1,
        )
        for q in run.topology.queries
        if q in objectives and q in run.latency and query in (None, q)
        for b in breaches(
            run.latency[q].lat_max,
            objectives[q] + TOLERANCE,
            query=q,
            kind=MEASURED_BREACH,
            gap=0,
        )
    ]
    return sorted(found, key=lambda v: (v.start, v.query))


MAX_LISTED = 20
"""Violations a sentence lists (the newest); the count says how many there are."""


def violations_summary(
    query: str, objective: float | None, found: Sequence[Violation], clock: Clock
) -> str:
    """One query's violations as a sentence of time ranges (the Reports page)."""
    if objective is None:
        return f"{query}: no objective set"
    if not found:
        return f"{query}: never above its objective of {objective:g} s"
    count = sum(v.subintervals for v in found)
    listed = "; ".join(v.text(clock) for v in found[-MAX_LISTED:])
    more = f" (the newest {MAX_LISTED})" if len(found) > MAX_LISTED else ""
    return (
        f"{query}: above its objective of {objective:g} s in {count} subinterval"
        f"{'s' * (count != 1)}, {len(found)} range{'s' * (len(found) != 1)}{more}: {listed}"
    )
