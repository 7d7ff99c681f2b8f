"""The What-if edit log: a scenario is the ordered list of edits made
on the page, so undoing edit k is exact; and a subinterval factor longer than the run is
refused (item 7)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dashboard.core import data
from dashboard.core.data import Database, RunCache
from dashboard.whatif import scenario as whatif_scenario
from estimator.errors import ScenarioError
from estimator.whatif import RunInputs, WhatIfEngine


@pytest.fixture
def inputs(small_db: Path) -> RunInputs:
    return data.inputs_for_run(WhatIfEngine(), RunCache(Database(small_db)).get("small"))


def _log(inputs: RunInputs, *actions: tuple[str, dict]) -> list[dict]:
    edits: list[dict] = []
    for action, values in actions:
        edits = whatif_scenario.add_edit(inputs, edits, action, values).edits
    return edits


def test_undo_edit_k_is_the_log_without_it(inputs: RunInputs) -> None:
    actions = [
        ("move", {"operator": "b", "node": "n1"}),
        ("capacity", {"node": "n2", "capacity": "4"}),
        ("load", {"rate_scale": "2", "factor": "1"}),
        ("move", {"operator": "a", "node": "n1"}),
    ]
    edits = _log(inputs, *actions)
    assert [e["label"] for e in edits] == [
        "moved b to n1",
        "set the capacity of n2 to 4",
        "set source rates x2, subinterval factor 1",
        "moved a to n1",
    ]
    for k in range(len(actions)):
        undone = whatif_scenario.undo_edit(inputs, edits, k)
        rest = [a for j, a in enumerate(actions) if j != k]
        # exact: the same scenario as if edit k had never been made
        assert whatif_scenario.fold_edits(inputs, undone.edits) == whatif_scenario.fold_edits(
            inputs, _log(inputs, *rest)
        )
        assert undone.note == f"undid: {edits[k]['label']}"
    assert whatif_scenario.fold_edits(inputs, []) == whatif_scenario.fold_edits(
        inputs, whatif_scenario.undo_edit(inputs, edits[:1], 0).edits
    )


def test_a_later_table_edit_does_not_redo_an_undone_move(inputs: RunInputs) -> None:
    moved = _log(inputs, ("move", {"operator": "b", "node": "n1"}))
    scenario = whatif_scenario.fold_edits(inputs, moved)
    rows = [{"operator": o, "node": n} for o, n in {"a": "n1", "b": "n1", "c": "n1"}.items()]
    edits = whatif_scenario.add_edit(inputs, moved, "table", {"rows": rows}).edits
    assert edits[-1]["label"] == "placement table: moved a to n1"
    assert scenario["placement"] == {"b": "n1"}
    undone = whatif_scenario.undo_edit(inputs, edits, 0).edits
    assert whatif_scenario.fold_edits(inputs, undone)["placement"] == {"a": "n1"}


def test_undo_refuses_when_a_later_edit_depends_on_it(inputs: RunInputs) -> None:
    edits = _log(
        inputs,
        ("add_node", {"node": "n6", "capacity": "2"}),
        ("move", {"operator": "b", "node": "n6"}),
    )
    assert edits[0]["label"] == "added node n6 (capacity 2)"
    with pytest.raises(ScenarioError, match=r"edit 1 \(moved b to n6\) no longer applies"):
        whatif_scenario.undo_edit(inputs, edits, 0)
    assert whatif_scenario.undo_edit(inputs, edits, 1).edits == edits[:1]


def test_an_edit_that_changes_nothing_is_not_kept(inputs: RunInputs) -> None:
    result = whatif_scenario.add_edit(inputs, [], "move", {"operator": "b", "node": "n2"})
    assert result.edits == []
    assert result.note == "nothing changed: no change to the worst case"


def test_edits_are_kept_per_run() -> None:
    edit = {"action": "move", "values": {"operator": "b", "node": "n1"}, "label": "moved b to n1"}
    store = whatif_scenario.with_edits({}, "small", [edit])
    assert whatif_scenario.edits_for(store, "small") == [edit]
    assert whatif_scenario.edits_for(store, "other") == []
    assert whatif_scenario.edits_for({"small": [{"action": 3}]}, "small") == []
    assert whatif_scenario.edits_for(None, "small") == []
    assert whatif_scenario.with_edits(store, "small", []) == {}


def test_subinterval_factor_longer_than_the_run_is_refused(inputs: RunInputs) -> None:
    """Regression: factor 1000 gave 'MaceWC 0.0000 s (-100.0%)' without a warning."""
    assert inputs.arrivals.intervals == 5
    five = whatif_scenario.add_edit(inputs, [], "load", {"rate_scale": "1", "factor": "5"})
    assert five.edits
    with pytest.raises(ScenarioError, match=r"6 is more than the run.s 5 subintervals \(at"):
        whatif_scenario.add_edit(inputs, [], "load", {"rate_scale": "1", "factor": "6"})
    with pytest.raises(ScenarioError, match="at most 5"):
        whatif_scenario.add_edit(inputs, [], "load", {"rate_scale": "1", "factor": "1000"})


def test_summary_says_no_change() -> None:
    view = whatif_scenario.WhatIfView({}, {}, [], [], [], [], 0.8, 0.8, {"q1": (0.8, 0.8)})
    assert view.summary == (
        "MaceWC: scenario 0.8000 s, current 0.8000 s, no change to the worst case"
        " · no query changes"
    )


def test_summary_names_the_queries_an_edit_changes() -> None:
    """q5 drops from 22 s to 9 s while q1 keeps the system's worst case: the headline
    says both, the largest relative change first, at most three queries."""
    per_query = {"q1": (30.0, 30.0), "q5": (22.0, 9.0), "q2": (1.0, 1.5), "q3": (2.0, 2.2),
                 "q4": (4.0, 3.0)}  # fmt: skip
    view = whatif_scenario.WhatIfView({}, {}, [], [], [], [], 30.0, 30.0, per_query)
    assert view.summary == (
        "MaceWC: scenario 30.0000 s, current 30.0000 s, no change to the worst case · per "
        "query: q5 22.00 s → 9.00 s (-59%), q2 1.00 s → 1.50 s (+50%), "
        "q4 4.00 s → 3.00 s (-25%) and 1 more"
    )
