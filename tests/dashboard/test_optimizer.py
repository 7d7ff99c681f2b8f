"""The What-if optimizer job: runs in a thread, reports progress, never worsens MaceWC."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from dashboard import whatif_view
from dashboard.data import Database, RunCache
from dashboard.optimizer import OptimizerJobs
from dashboard.scenario import WhatIfEngine
from estimator.errors import MaceError
from estimator.evaluator import PlacementEvaluator


def test_optimize_job_finds_placement_no_worse(small_db: Path) -> None:
    inputs = whatif_view.inputs_for_run(RunCache(Database(small_db)).get("small"))
    evaluator = WhatIfEngine().evaluator(inputs, whatif_view.scenario_from_json({}))
    jobs = OptimizerJobs()
    job = jobs.start((evaluator.topology, evaluator.model), ["mace-hc", "random"], 0.5)
    deadline = time.monotonic() + 30
    while not (status := jobs.status(job))["done"]:  # type: ignore[index]
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert status is not None and status["error"] is None
    assert status["fraction"] == 1.0
    assert set(status["results"]) == {"mace-hc", "random"}
    found = PlacementEvaluator(evaluator.topology, evaluator.model, status["placement"])
    assert found.mace_wc == pytest.approx(status["best_wc"])
    assert status["best_wc"] <= evaluator.mace_wc + 1e-12
    with pytest.raises(MaceError, match="choose algorithms"):
        jobs.start((evaluator.topology, evaluator.model), ["nope"], 1.0)
    with pytest.raises(MaceError, match="budget"):
        jobs.start((evaluator.topology, evaluator.model), ["random"], 1e6)
    assert jobs.status("unknown") is None
