"""Placement optimization jobs for the What-if page, run in background threads.

A job runs the chosen placement algorithms one after the other within a
shared time budget and records its progress, which the page polls with a
``dcc.Interval``. Jobs are kept in memory and bounded in number.
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from estimator.errors import MaceError
from estimator.placement import ALGORITHMS
from estimator.placement.common import PlacementProblem
from estimator.propagation import LoadModel

MAX_JOBS = 8
MAX_BUDGET = 120.0


@dataclass
class Job:
    algorithms: tuple[str, ...]
    fraction: float = 0.0
    current: str = ""
    best_wc: float | None = None
    best_algorithm: str | None = None
    placement: dict[str, str] | None = None
    done: bool = False
    error: str | None = None
    results: dict[str, float] = field(default_factory=dict)

    def status(self) -> dict[str, Any]:
        return {
            "fraction": self.fraction,
            "current": self.current,
            "best_wc": self.best_wc,
            "best_algorithm": self.best_algorithm,
            "placement": self.placement,
            "done": self.done,
            "error": self.error,
            "results": dict(self.results),
        }


class OptimizerJobs:
    """Starts optimization threads and reports their status by job id."""

    def __init__(self) -> None:
        self._jobs: dict[str, Job] = {}
        self._lock = threading.Lock()

    def start(
        self,
        problem_source: tuple[Any, LoadModel],
        algorithms: list[str],
        budget: float,
        seed: int = 0,
    ) -> str:
        unknown = [a for a in algorithms if a not in ALGORITHMS]
        if not algorithms or unknown:
            raise MaceError(
                f"optimize: choose algorithms among {', '.join(ALGORITHMS)}"
                + (f" (unknown: {', '.join(unknown)})" if unknown else "")
            )
        if not 0 < budget <= MAX_BUDGET:
            raise MaceError(f"optimize: the time budget must be in (0, {MAX_BUDGET:g}] seconds")
        job_id = uuid.uuid4().hex[:10]
        job = Job(tuple(algorithms))
        with self._lock:
            finished = [k for k, j in self._jobs.items() if j.done]
            for key in finished[: max(0, len(self._jobs) - MAX_JOBS + 1)]:
                del self._jobs[key]
            if len(self._jobs) >= MAX_JOBS:
                raise MaceError("optimize: too many optimizations running; wait for one to end")
            self._jobs[job_id] = job
        thread = threading.Thread(
            target=self._run,
            args=(job, problem_source, budget, seed),
            name=f"mace-optimize-{job_id}",
            daemon=True,
        )
        thread.start()
        return job_id

    def _run(self, job: Job, source: tuple[Any, LoadModel], budget: float, seed: int) -> None:
        topology, model = source
        share = budget / len(job.algorithms)
        try:
            problem = PlacementProblem(topology, model)
            for k, name in enumerate(job.algorithms):
                job.current = name

                def progress(fraction: float, best: float, k: int = k) -> None:
                    job.fraction = (k + min(max(fraction, 0.0), 1.0)) / len(job.algorithms)

                result = ALGORITHMS[name](
                    problem, budget=share, rng=np.random.default_rng(seed), progress=progress
                )
                job.results[name] = float(result.mace_wc)
                if job.best_wc is None or result.mace_wc < job.best_wc:
                    job.best_wc = float(result.mace_wc)
                    job.best_algorithm = name
                    job.placement = dict(result.placement)
                job.fraction = (k + 1) / len(job.algorithms)
        except Exception as exc:  # a failing algorithm must not kill the server
            job.error = f"{type(exc).__name__}: {exc}"
        finally:
            job.done = True

    def status(self, job_id: str | None) -> dict[str, Any] | None:
        if not job_id:
            return None
        with self._lock:
            job = self._jobs.get(job_id)
        return job.status() if job else None
