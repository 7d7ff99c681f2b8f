"""A run's report by the estimator asked for, or for ``auto`` by the one the run's size
allows (:mod:`estimator.auto`), saying which and why: what ``mace report``,
``/api/report`` and the Reports page share."""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from dashboard.core.data import RunData
from dashboard.core.report import (
    build_report,
    change_checks,
    estimated_analysis,
    predicted_analysis,
)
from estimator import auto
from estimator.burst import SUB_BUCKETS
from estimator.pathaware import ESTIMATOR_LABELS


def report_with_estimator(
    run: RunData,
    goals: Mapping[str, float],
    training_share: float,
    estimator: str,
    time_budget_s: float | None = None,
) -> dict[str, Any]:
    """The report of ``run`` by ``estimator``, or for ``auto`` by the one
    :func:`estimator.auto.pick` chooses from the run's size (within ``time_budget_s``,
    default :data:`estimator.auto.TIME_BUDGET_S`), falling back when the per-origin replay
    refuses the run; ``estimator_used`` says which and why."""
    if estimator != auto.AUTO:
        report = _build(run, goals, training_share, estimator)
        return {**report, "estimator_used": estimator_used(estimator, "chosen with --estimator")}
    budget = auto.TIME_BUDGET_S if time_budget_s is None else time_budget_s
    choice, report = auto.run_picked(
        run_size(run),
        SUB_BUCKETS,
        lambda name: _build(run, goals, training_share, name),
        time_budget_s=budget,
    )
    return {**report, "estimator_used": estimator_used(choice.name, f"auto: {choice.reason}")}


def run_size(run: RunData) -> auto.RunSize:
    """What :func:`estimator.auto.pick` knows of ``run`` before running anything."""
    return auto.run_size(
        run.topology,
        run.intervals,
        run.info.profile_sub_buckets if run.profile is not None else None,
        port_work=not run.info.counters,  # counters give offered work, not measured work
        mace_worst_s=float(np.max(estimated_analysis(run, "mace").estimate, initial=0.0)),
        versions=len(run.versions),
        source_profile=run.arrival_profile is not None,
    )


def shown_estimator(run: RunData, estimator: str | None) -> auto.Choice:
    """The registered estimator a page shows for the top bar's ``estimator`` and why:
    the one chosen, or for ``auto`` the one :func:`estimator.auto.pick` chooses from the
    run's size (its estimate computed here, once per run data: the fallback's when the
    per-origin replay refuses the run), as ``mace report`` does; no ``estimator`` (a top
    bar not yet filled in) is :data:`estimator.auto.DEFAULT`."""
    estimator = estimator or auto.DEFAULT
    if estimator != auto.AUTO:
        return auto.Choice(estimator, "chosen in the top bar")
    if run.intervals == 0:  # nothing to size: the page says what it waits for
        return auto.Choice("mace", "auto: no statistics yet")
    choice, _ = auto.run_picked(
        run_size(run), SUB_BUCKETS, lambda name: estimated_analysis(run, name)
    )
    return auto.Choice(choice.name, f"auto: {choice.reason}")


def estimate_caption(choice: auto.Choice) -> str:
    """The line that says which estimate a page shows and why."""
    return f"Estimate shown: {ESTIMATOR_LABELS[choice.name]} ({choice.reason})."


def _build(
    run: RunData, goals: Mapping[str, float], training_share: float, estimator: str
) -> dict[str, Any]:
    """:func:`build_report` with its three independent parts (the estimated and the
    predicted analysis, the verification of changes) computed on both cores first: the
    replay kernels release the GIL, and the run caches each part for the report."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        parts: list[Future[object]] = [
            pool.submit(estimated_analysis, run, estimator),
            pool.submit(predicted_analysis, run, training_share, estimator),
            pool.submit(change_checks, run, estimator),
        ]
        for part in parts:
            part.result()
    return build_report(run, goals, training_share, estimator=estimator)


def estimator_used(name: str, reason: str) -> dict[str, str]:
    """The report's ``estimator_used`` entry: the estimator, its label and the reason."""
    return {"name": name, "label": ESTIMATOR_LABELS[name], "reason": reason}
