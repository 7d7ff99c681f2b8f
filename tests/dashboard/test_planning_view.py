"""Planning on the What-if page and the Nodes page's hosts over time, as plain functions,
on the hand-computed small run.

The small run after fitting: a (q1) costs 0.1078125 and b (q1) 0.2 per event, both on
n2 (capacity 2); c (q2) costs 0.1 on n1 (capacity 1); s = [5, 12, 5, 0, 10].
"""

from __future__ import annotations

import base64
import re
from pathlib import Path

import numpy as np
import pytest

from dashboard.core import data as core_data
from dashboard.core.data import Database, RunCache
from dashboard.core.errors import ViewError
from dashboard.nodes import views as nodes_views
from dashboard.whatif import planning as whatif_planning
from estimator.errors import ScenarioError
from estimator.evaluator import estimate
from estimator.placement.planning import per_query_mace_wc
from estimator.whatif import RunInputs, WhatIfEngine, apply_scenario, scenario_from_json
from tests.dashboard.builders import PLAN_B, QUERY_BREAKS_Q1, QUERY_FITS, write_small_run

OBJECTIVES = {"q1": 1.0, "q2": 1.0}


@pytest.fixture
def engine() -> WhatIfEngine:
    return WhatIfEngine()


@pytest.fixture
def inputs(small_db: Path, engine: WhatIfEngine) -> RunInputs:
    return core_data.inputs_for_run(engine, RunCache(Database(small_db)).get("small"))


def _recomputed(inputs: RunInputs, scenario: dict) -> dict[str, float]:
    """Every query's MaceWC of a scenario, recomputed from scratch."""
    topology, arrivals = apply_scenario(
        inputs.topology, inputs.arrivals, scenario_from_json(scenario)
    )
    return per_query_mace_wc(estimate(topology, arrivals))


def test_a_query_that_fits_is_admitted(engine: WhatIfEngine, inputs: RunInputs) -> None:
    query = whatif_planning.added_query_from_text(QUERY_FITS)
    view = whatif_planning.admission(engine, inputs, {}, query, OBJECTIVES, budget=0.2)
    assert view.admitted
    assert view.message == "admitted: q9 fits; every query keeps its objective"
    assert [r["query"] for r in view.rows] == ["q1", "q2", "q9 (new)"]
    assert view.rows[0]["before (s)"] == "0.8469"
    # the rows are what the scenario adding the query gives, recomputed independently
    after = _recomputed(inputs, view.scenario)
    assert {r["query"].removesuffix(" (new)"): r["after (s)"] for r in view.rows} == {
        q: f"{v:.4f}" for q, v in after.items()
    }
    assert [p["operator"] for p in view.placement] == ["x"]
    assert view.scenario["add_query"]["placement"] == {"x": view.placement[0]["node"]}


def test_a_query_that_breaks_an_objective_is_refused_naming_it(
    engine: WhatIfEngine, inputs: RunInputs
) -> None:
    query = whatif_planning.added_query_from_text(QUERY_BREAKS_Q1)
    view = whatif_planning.admission(
        engine, inputs, {}, query, OBJECTIVES, algorithm=whatif_planning.AS_IN_FILE
    )
    assert not view.admitted
    assert view.message == "refused: adding q9 breaks the objective of q1 4.9250 s > 1.0000 s"
    assert view.rows[0] == {
        "query": "q1",
        "before (s)": "0.8469",
        "after (s)": "4.9250",
        "objective (s)": "1.0000",
        "ok": "NO",
    }
    assert view.placement == [{"operator": "x", "node": "n2"}]
    # the new query's own objective counts too
    tight = whatif_planning.admission(
        engine,
        inputs,
        {},
        whatif_planning.added_query_from_text(QUERY_FITS),
        {},
        new_objective=0.001,
    )
    assert not tight.admitted and "of q9 " in tight.message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("query: [", "query file: not valid YAML"),
        ("operators: []", "'query' must name the query"),
        ("query: q1\noperators:\n  - {id: a2, inputs: [s], cost: 1}", "query 'q1' is already"),
        (
            "query: q9\noperators:\n  - {id: x, inputs: [nowhere], cost: 1}",
            "unknown input 'nowhere'",
        ),
        (
            "query: q9\noperators:\n  - {id: x, inputs: [s2], cost: 1}\nsources:\n  - {id: s2}",
            "source 's2' has no 'arrivals' list",
        ),
    ],
)
def test_bad_query_files_name_the_problem(
    engine: WhatIfEngine, inputs: RunInputs, text: str, message: str
) -> None:
    with pytest.raises(ScenarioError, match=message):
        query = whatif_planning.added_query_from_text(text)
        whatif_planning.admission(engine, inputs, {}, query, OBJECTIVES, budget=0.1)


def test_uploads_are_bounded_and_decoded() -> None:
    def encoded(data: bytes) -> str:
        return "data:application/x-yaml;base64," + base64.b64encode(data).decode()

    assert whatif_planning.upload_text(encoded(b"query: q9\n"), "q.yaml") == "query: q9\n"
    with pytest.raises(ScenarioError, match=re.escape("big.yaml: larger than 256 KiB")):
        whatif_planning.upload_text(
            encoded(b"x" * (whatif_planning.MAX_UPLOAD_BYTES + 10)), "big.yaml"
        )
    with pytest.raises(ScenarioError, match=re.escape("bin.yaml: not a UTF-8 text file")):
        whatif_planning.upload_text(encoded(b"\xff\xfe\x00"), "bin.yaml")
    with pytest.raises(ScenarioError, match="empty upload"):
        whatif_planning.upload_text(None, "q.yaml")


def test_provisioned_nodes_meet_the_objective_when_loaded_as_the_scenario(
    engine: WhatIfEngine, inputs: RunInputs
) -> None:
    view = whatif_planning.provisioning(
        engine, inputs, {}, 1.0, mode="nodes", node_capacity=2.0, budget=0.2
    )
    assert view.feasible
    assert view.label == "2 nodes of capacity 2"
    topology, _ = apply_scenario(
        inputs.topology, inputs.arrivals, scenario_from_json(view.scenario)
    )
    assert topology.capacity_by_node == {"n1": 2.0, "n2": 2.0}
    assert {row["node"] for row in view.nodes} == {"n1", "n2"}
    # independent recomputation: the scenario meets the objective for every query
    assert max(_recomputed(inputs, view.scenario).values()) <= 1.0
    # one node of capacity 2 cannot: the load 0.4078 * 12 of interval 1 alone leaves
    # 2.89 CPU-s behind on it, 1.45 s
    single = engine.evaluate(
        inputs,
        scenario_from_json(
            {
                "remove_nodes": ["n1"],
                "capacities": {"n2": 2.0},
                "placement": {"c": "n2"},
            }
        ),
    )
    assert single.estimate.worst_case > 1.0


def test_least_added_capacity_keeps_the_placement(engine: WhatIfEngine, inputs: RunInputs) -> None:
    view = whatif_planning.provisioning(engine, inputs, {"rate_scale": 1.0}, 0.5, mode="capacity")
    assert view.feasible
    assert view.scenario["placement"] == {}
    assert set(view.scenario["capacities"]) == {"n2"}  # n1 (q2, 0.2 s) needs nothing
    assert max(_recomputed(inputs, view.scenario).values()) <= 0.5 + 1e-6
    # a little less capacity on n2 misses the objective
    less = {"capacities": {"n2": view.scenario["capacities"]["n2"] * 0.99}}
    assert _recomputed(inputs, less)["q1"] > 0.5


def test_an_infeasible_provisioning_says_so(engine: WhatIfEngine, inputs: RunInputs) -> None:
    # b alone puts 0.2 * 12 = 2.4 CPU-s on a node of capacity 1 in interval 1
    view = whatif_planning.provisioning(
        engine, inputs, {}, 0.5, mode="nodes", node_capacity=1.0, budget=0.05
    )
    assert not view.feasible
    assert view.message.startswith(
        "no node count of capacity 1 meets 0.5 s: operator 'b' alone on a node of "
        "capacity 1 already misses its objective"
    )
    assert len(view.nodes) <= 3  # only the nodes that host operators are listed


def test_plans_are_ranked_and_the_best_is_chosen(inputs: RunInputs) -> None:
    ranking = whatif_planning.plan_ranking(inputs, "q1", [("B.yaml", PLAN_B)])
    # the running plan on one node of 3: loads 0.3078125 * s -> CE/C 0.2313 s in
    # interval 1; plan B's 0.15 * s never exceeds its node's 2
    assert ranking.rows == [
        {
            "rank": 1,
            "plan": "B.yaml",
            "MaceWC (s)": "0.0000",
            "mean (s)": "0.0000",
            "p99 (s)": "0.0000",
        },
        {
            "rank": 2,
            "plan": "running plan (q1)",
            "MaceWC (s)": "0.2313",
            "mean (s)": f"{(0.69375 / 3 + 0.078125 / 3) / 5:.4f}",
            "p99 (s)": ranking.rows[1]["p99 (s)"],
        },
    ]
    assert ranking.message == "chosen: B.yaml (lowest MaceWC)"


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ([], "upload at least one alternative plan file"),
        ([("C.yaml", PLAN_B.replace("query: q1", "query: q2"))], "C.yaml: a plan of query 'q2'"),
        ([("D.yaml", PLAN_B.replace("[s]", "[t]").replace("{id: s}", "{id: t}"))], "source 't'"),
        ([("B.yaml", PLAN_B), ("B.yaml", PLAN_B)], "B.yaml: uploaded twice"),
        ([("E.yaml", "nodes: [")], "E.yaml: not valid YAML"),
    ],
)
def test_bad_plan_files_name_the_problem(inputs: RunInputs, files: list, message: str) -> None:
    with pytest.raises(ScenarioError, match=re.escape(message)):
        whatif_planning.plan_ranking(inputs, "q1", files)


def test_defaults_take_the_tightest_objective_else_the_current_worst_case(
    engine: WhatIfEngine, inputs: RunInputs
) -> None:
    assert whatif_planning.defaults(engine, inputs, {"q1": 1.0, "q2": 0.4}).objective == "0.4"
    fallback = whatif_planning.defaults(engine, inputs, {})
    assert fallback.objective == "0.8469" and fallback.capacity == "2"
    assert whatif_planning.stored_objectives({"q1": 1.0, "q2": "x", "q3": -1}) == {"q1": 1.0}


# -- hosts over time (Nodes page) -------------------------------------------------------


@pytest.fixture
def two_level_db(tmp_path: Path) -> Path:
    """10 minutes at 2 events/s, then 10 at 8: a, b and c cost 0.1, 0.2 and 0.1 per event."""
    db = tmp_path / "two.duckdb"
    write_small_run(db, "two", arrivals=[2] * 600 + [8] * 600, measured_cpu={})
    return db


@pytest.fixture
def two_level(two_level_db: Path, engine: WhatIfEngine) -> RunInputs:
    return core_data.inputs_for_run(engine, RunCache(Database(two_level_db)).get("two"))


def test_hosts_over_time_on_a_two_level_load(two_level: RunInputs) -> None:
    # low: 0.8 CPU-s/s fit one node of 2. High: 3.2 CPU-s/s need two (b 1.6 | a + c 1.6),
    # and FUGU at 85% (room 1.7) opens a second node for b too
    timeline = nodes_views.hosts_timeline(two_level, "1", "5", "2")
    np.testing.assert_array_equal(timeline.mace_hosts, [1, 1, 2, 2])
    np.testing.assert_array_equal(timeline.fugu_hosts, [1, 1, 2, 2])
    figure, caption = nodes_views.hosts_view(timeline)
    assert [t.name for t in figure.data] == [
        "Mace-based (objective 1 s)",
        "FUGU threshold (85% utilisation)",
    ]
    assert list(figure.data[0].x) == [0, 300, 300, 600, 600, 900, 900, 1200]
    assert list(figure.data[0].y) == [1, 1, 1, 1, 2, 2, 2, 2]
    assert caption.startswith(
        "Machine-hours over 20 min of recorded load: Mace-based 30 min, FUGU threshold 30 min: "
        "the same hosts as FUGU at this objective."
    )


def test_hosts_over_time_marks_windows_no_node_count_meets(two_level: RunInputs) -> None:
    # b alone puts 1.6 CPU-s/s on a node of 1 in the high windows
    timeline = nodes_views.hosts_timeline(two_level, "1", "5", "1")
    figure, caption = nodes_views.hosts_view(timeline)
    assert list(timeline.mace_feasible) == [True, True, False, False]
    assert figure.data[0].y[4:] == (None, None, None, None)
    assert figure.data[2].name == "objective not met at any node count"
    assert list(figure.data[2].x) == [750, 1050]
    assert "In 2 windows no node count met the objective" in caption


@pytest.mark.parametrize(
    ("objective", "window", "capacity", "message"),
    [
        ("0", "5", "1", "objective"),
        ("1", "x", "1", "window"),
        ("1", "5", "", "node capacity: enter a number"),
    ],
)
def test_hosts_fields_are_checked(
    two_level: RunInputs, objective: str, window: str, capacity: str, message: str
) -> None:
    with pytest.raises((ScenarioError, ViewError), match=message):
        nodes_views.hosts_timeline(two_level, objective, window, capacity)


def test_hosts_defaults(small_db: Path) -> None:
    run = RunCache(Database(small_db)).get("small")
    assert nodes_views.hosts_defaults(run, {"q1": 1.0}).objective == "1"
    measured = nodes_views.hosts_defaults(run, {})
    assert (measured.objective, measured.source) == ("1.2", "the measured worst case")
    # the run lasts 5 s: four windows of 1.25 s, not one of 5 minutes
    assert (measured.window, measured.capacity) == ("0.0208", "2")


def test_hosts_windows_default_to_five_minutes_on_a_long_run(two_level_db: Path) -> None:
    run = RunCache(Database(two_level_db)).get("two")
    assert nodes_views.hosts_defaults(run, {}).window == "5"
