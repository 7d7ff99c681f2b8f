"""The What-if optimizer: reports progress, never worsens MaceWC, rejects bad requests."""

from __future__ import annotations

from pathlib import Path

import pytest

from dashboard import whatif_view
from dashboard.data import Database, RunCache
from dashboard.optimizer import Progress, optimize
from estimator.errors import MaceError
from estimator.evaluator import PlacementEvaluator
from estimator.whatif import WhatIfEngine, scenario_from_json


def test_optimize_finds_placement_no_worse(small_db: Path) -> None:
    engine = WhatIfEngine()
    inputs = whatif_view.inputs_for_run(engine, RunCache(Database(small_db)).get("small"))
    evaluator = engine.evaluator(inputs, scenario_from_json({}))
    seen: list[Progress] = []
    outcome = optimize(evaluator.topology, evaluator.model, ["mace-hc", "random"], 0.5, seen.append)
    assert seen and seen[-1].fraction == 1.0
    assert [p.fraction for p in seen] == sorted(p.fraction for p in seen)
    assert set(outcome.results) == {"mace-hc", "random"}
    found = PlacementEvaluator(evaluator.topology, evaluator.model, outcome.placement)
    assert found.mace_wc == pytest.approx(outcome.best_wc)
    assert outcome.best_wc <= evaluator.mace_wc + 1e-12
    assert outcome.best_wc == min(outcome.results.values())
    with pytest.raises(MaceError, match="choose algorithms"):
        optimize(evaluator.topology, evaluator.model, ["nope"], 1.0)
    with pytest.raises(MaceError, match="budget"):
        optimize(evaluator.topology, evaluator.model, ["random"], 1e6)


def test_progress_label() -> None:
    assert Progress(0.25, "mace-hc").label == "mace-hc 25%"
    assert Progress(0.5, "random", 0.125).label == "random 50% · best 0.1250 s"
