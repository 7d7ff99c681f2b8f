"""Callback logic as plain functions, on the hand-computed small run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dashboard.core import data, report, violations
from dashboard.core.data import Database, RunCache, inputs_for_run
from dashboard.core.errors import ViewError
from dashboard.core.timeaxis import Clock, TimeRange, window
from dashboard.nodes import views as nodes_views
from dashboard.overview import explain as overview_explain
from dashboard.overview import views as overview_views
from dashboard.reports import views as reports_views
from dashboard.shell.theme import share_color
from dashboard.whatif import scenario as whatif_scenario
from estimator.errors import MaceError, ScenarioError
from estimator.whatif import WhatIfEngine
from storage import scenarios


@pytest.fixture
def cache(small_db: Path) -> RunCache:
    return RunCache(Database(small_db))


def test_overview_kpis(cache: RunCache) -> None:
    view = overview_views.overview(cache.get("small"), "all")
    assert view.estimated_wc == pytest.approx(0.8)
    assert view.predicted_wc == pytest.approx(1.1)
    assert view.measured_wc == pytest.approx(1.2)
    assert view.error_percent == pytest.approx(100 * (0.8 - 1.2) / 1.2)
    assert view.coverage == pytest.approx(0.75)
    # the newest interval with a backlog is 4, where n2 has CE/C 0.5
    assert view.bottleneck == "n2 (CE/C 0.500 s at t = 4 s)"
    with pytest.raises(ViewError, match="time range"):
        overview_views.overview(cache.get("small"), "forever")


def test_nodes_views_reject_unknown_node(cache: RunCache) -> None:
    heat, _ = nodes_views.nodes_run_view(cache.get("small"), TimeRange("all"), "n2")
    dlts, _, outline = nodes_views.node_view(cache.get("small"), "n2", TimeRange("all"))
    assert outline == [heat.layout.shapes[0].to_plotly_json()]  # the same outline, patched in
    np.testing.assert_allclose(heat.data[0].z[1], [0, 0.8, 0.55, 0, 0.5], atol=1e-12)
    np.testing.assert_allclose(dlts.data[0].y, [1.75, 3.6, 1.5, 0, 3.0], atol=1e-12)
    with pytest.raises(ViewError, match="unknown node 'zz'"):
        nodes_views.node_view(cache.get("small"), "zz", TimeRange("all"))
    with pytest.raises(ViewError, match="unknown node 'zz'"):
        nodes_views.nodes_run_view(cache.get("small"), TimeRange("all"), "zz")


def test_report_view_violations(cache: RunCache) -> None:
    # measured q1 max [0.3, 1.2, 1.0, -, 0.4]: above 1.0 s in subinterval 1 only (1.0 is not)
    _, _, violating = reports_views.report_view(cache.get("small"), {"q1": 1.0}, "q1")
    assert violating == [violations.Violation("q1", 1.0, 2.0, 1.2, 1.0, 1)]
    assert violations.violations_summary("q1", 1.0, violating, Clock()) == (
        "q1: above its objective of 1 s in 1 subinterval, 1 range: t = 1–2 s, 1 s, peak 1.2 s"
    )
    wall = Clock(start=1_795_000_000.0, wall=True)
    assert violating[0].text(wall) == "11:06:41–11:06:42 UTC, 1 s, peak 1.2 s"
    _, _, none = reports_views.report_view(cache.get("small"), {}, "q2")
    assert none == []
    assert violations.violations_summary("q2", None, none, Clock()) == "q2: no objective set"


def test_the_report_chart_draws_the_estimate_where_the_query_had_outputs(
    cache: RunCache,
) -> None:
    """q1 has no output in subinterval 3 (no arrivals): a gap in both lines, as the
    table's figures leave it out (the estimate there is 0)."""
    _, fig, _ = reports_views.report_view(cache.get("small"), {}, "q1")
    estimated, measured = (np.asarray(t.y, dtype=float) for t in fig.data[:2])
    np.testing.assert_allclose(estimated, [0, 0.8, 0.55, np.nan, 0.5], atol=1e-12)
    np.testing.assert_array_equal(np.isnan(measured), np.isnan(estimated))


def test_violations_of_every_query_in_time_order(cache: RunCache) -> None:
    run = cache.get("small")
    # q2 [0.1, 0.5, 0.2, -, 0.15] above 0.12 in 1-2 and in 4
    found = violations.violations(run, {"q1": 0.35, "q2": 0.12})
    assert [(v.query, v.start, v.end, v.peak, v.subintervals) for v in found] == [
        ("q1", 1.0, 3.0, 1.2, 2),
        ("q2", 1.0, 3.0, 0.5, 2),
        ("q1", 4.0, 5.0, 0.4, 1),
        ("q2", 4.0, 5.0, 0.15, 1),
    ]
    view = overview_views.overview(
        run, TimeRange(None, 3.5, 5.0), objectives={"q1": 0.35, "q2": 0.12}
    )
    assert [(v.query, v.start) for v in view.violations] == [("q1", 4.0), ("q2", 4.0)]
    rows = overview_views.violation_rows(view)
    assert rows[0] == {
        "query": "q2",
        "range": "t = 4–5 s",
        "duration": 1.0,
        "peak": 0.15,
        "objective": 0.12,
    }
    assert (
        overview_views.violations_note({"q1": 0.35}, len(rows))
        == "2 violations in the shown range."
    )
    assert overview_views.violations_note({}, 0).startswith("No objective set for this run")


def test_overview_shows_a_custom_range_and_the_wall_clock(tmp_path: Path) -> None:
    from tests.dashboard.builders import SMALL_TOPOLOGY, write_small_run

    db = tmp_path / "wall.duckdb"
    write_small_run(db, document={**SMALL_TOPOLOGY, "origin": 1_795_000_000.0})
    run = RunCache(Database(db)).get("small")
    view = overview_views.overview(run, TimeRange(None, 1.0, 3.0), clock="wall")
    axis = view.figure["layout"]["xaxis"]
    assert axis["range"] == ["2026-11-18T11:06:41", "2026-11-18T11:06:43"]  # UTC
    assert axis["title"]["text"] == "wall clock (UTC)"
    # the worst case of the range only: measured [1.2, 1.0] in subintervals 1 and 2
    assert view.measured_wc == 1.2
    assert view.bottleneck.endswith("at 11:06:42 UTC)")
    since = overview_views.overview(run, TimeRange(None, 1.0, 3.0), clock="since")
    assert since.figure["layout"]["xaxis"]["range"] == [1.0, 3.0]
    # a range after the newest data falls back to the whole run, and says so
    late = overview_views.overview(run, TimeRange(None, 60.0, 90.0), clock="since")
    assert late.figure["layout"]["xaxis"]["range"] == [0.0, 5.0]
    assert "starts after the newest data" in late.range_note
    # a click on the wall-clock axis names its time as a date
    click = {"points": [{"x": "2026-11-18 11:06:43.5"}]}
    assert overview_explain.clicked_point("small", click, view.clock) == {
        "run": "small",
        "time": 3.5,
    }


def test_cache_reloads_after_new_data(cache: RunCache, small_db: Path) -> None:
    first = cache.get("small")
    assert cache.get("small") is first
    with cache.database.cursor() as cur:
        cur.execute("DELETE FROM latency_stats WHERE interval = 4")
    assert cache.get("small") is not first


def test_callbacks_asking_for_a_run_at_once_load_it_once(
    cache: RunCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading
    import time

    loads = []
    real = data.load_run

    def slow_load(*args: Any, **kwargs: Any) -> Any:
        loads.append(threading.get_ident())
        time.sleep(0.3)  # long enough for every other thread to arrive meanwhile
        return real(*args, **kwargs)

    monkeypatch.setattr(data, "load_run", slow_load)
    got: list[Any] = []
    threads = [threading.Thread(target=lambda: got.append(cache.get("small"))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(loads) == 1
    assert len(got) == 4 and all(run is got[0] for run in got)
    with cache.database.cursor() as cur:  # new data: the next ask loads again
        cur.execute("DELETE FROM latency_stats WHERE interval = 4")
    assert cache.get("small") is not got[0] and len(loads) == 2


def test_derived_values_are_computed_once_per_loaded_run(cache: RunCache) -> None:
    run = cache.get("small")
    calls = []
    first = run.derived("k", lambda: calls.append(1) or [1.0])
    assert run.derived("k", lambda: calls.append(1) or [2.0]) is first and calls == [1]
    estimated = report.estimated_analysis(run, "path")
    assert report.estimated_analysis(run, "path") is estimated
    assert report.estimated_analysis(run, "mace") is not estimated
    with cache.database.cursor() as cur:
        cur.execute("DELETE FROM latency_stats WHERE interval = 4")
    assert report.estimated_analysis(cache.get("small"), "path") is not estimated


def test_whatif_edits_and_messages(cache: RunCache) -> None:
    engine = WhatIfEngine()
    inputs = inputs_for_run(engine, cache.get("small"))
    base = whatif_scenario.render(engine, inputs, {})
    assert base.scenario_wc == pytest.approx(base.current_wc)
    moved = whatif_scenario.apply_edit(inputs, {}, "move", {"operator": "b", "node": "n1"})
    view = whatif_scenario.render(engine, inputs, moved)
    # By hand, costs fitted on all intervals (ratio of sums): a 3.45 / 32 = 0.1078125,
    # b 0.2, c 0.1, s = [5, 12, 5, 0, 10]. Current: n2 (C = 2) carries a + b, load
    # 0.3078125 s, CE/C [0, 0.846875, 0.61640625, 0, 0.5390625]; n1 carries c, CE/C
    # at most 0.2: MaceWC 0.846875. Moved: n1 (C = 1) carries b + c, load
    # [1.5, 3.6, 1.5, 0, 3.0], CE [0.5, 3.1, 3.6, 2.6, 4.6]; n2 keeps a below capacity.
    assert view.current_wc == pytest.approx(0.846875)
    assert view.scenario_wc == pytest.approx(4.6)
    assert {r["operator"]: r["node"] for r in view.table_rows}["b"] == "n1"
    bad: list[tuple[str, dict[str, Any], str]] = [
        ("move", {"operator": None, "node": "n1"}, "select an operator"),
        ("move", {"operator": "b", "node": "n9"}, "unknown node 'n9'"),
        ("capacity", {"node": "n1", "capacity": "0"}, "positive"),
        ("capacity", {"node": "n1", "capacity": "abc"}, "expected a number"),
        ("capacity", {"node": "nx", "capacity": "1"}, "unknown node 'nx'"),
        ("load", {"rate_scale": "1e9", "factor": 1}, "out of range"),
        ("load", {"rate_scale": "1", "factor": "0.5"}, "positive|whole"),
        ("remove_node", {"node": "n2"}, "still hosts a;"),
        ("add_node", {"node": "n1", "capacity": 1}, "already used"),
        ("add_node", {"node": "bad id!", "capacity": 1}, "letters, digits"),
        ("table", {"rows": [{"operator": "a", "node": "n7"}]}, "row 1: unknown node 'n7'"),
        ("table", {"rows": []}, "empty"),
    ]
    for action, values, message in bad:
        with pytest.raises(ScenarioError, match=message):
            whatif_scenario.apply_edit(inputs, moved, action, values)
    grown = whatif_scenario.apply_edit(inputs, {}, "add_node", {"node": "n3", "capacity": "2"})
    grown = whatif_scenario.apply_edit(inputs, grown, "move", {"operator": "b", "node": "n3"})
    assert "n3" in whatif_scenario.render(engine, inputs, grown).node_options
    assert "n3" in whatif_scenario.export_topology(engine, inputs, grown)


def test_scenarios_are_saved_and_compared(cache: RunCache) -> None:
    inputs = inputs_for_run(WhatIfEngine(), cache.get("small"))
    moved = whatif_scenario.apply_edit(inputs, {}, "move", {"operator": "b", "node": "n1"})
    with cache.database.cursor() as cur:
        scenario_id = scenarios.save_scenario(cur, "small", "b on n1", moved)
        stored = scenarios.load_scenario(cur, scenario_id)
        assert [s.name for s in scenarios.list_scenarios(cur, "small")] == ["b on n1"]
    assert stored.scenario == moved
    rows = whatif_scenario.compare_rows(WhatIfEngine(), inputs, [("b on n1", stored.scenario)])
    assert [r["scenario"] for r in rows] == ["current", "b on n1"]
    assert rows[0]["MaceWC"] != rows[1]["MaceWC"]


def test_placement_versions_split_loads_and_mark_changes(tmp_path: Path) -> None:
    """From t = 2 s operator b runs on n1: measured n1 load then includes b's CPU."""
    from tests.dashboard.builders import write_small_run

    db = tmp_path / "versions.duckdb"
    write_small_run(db, versions=[(2.0, {"a": "n2", "b": "n1", "c": "n1"})])
    run = RunCache(Database(db)).get("small")
    assert run.version_starts == (0, 2)
    s = np.array([5, 12, 5, 0, 10.0])
    n1 = 0.1 * s + np.where(np.arange(5) >= 2, 0.2 * s, 0.0)
    np.testing.assert_allclose(run.node_dlts[0], n1, atol=1e-12)
    view = overview_views.overview(run, "all")
    assert [s["x0"] for s in view.figure["layout"]["shapes"] if s["type"] == "line"] == [2.0]
    # q1 spans n1 and n2 from interval 2 on, so its Mace is the larger of the two there
    analysis = report.analyses(run).estimated
    np.testing.assert_allclose(
        analysis.per_query["q1"][2:], analysis.ce_seconds[:, 2:].max(axis=0), atol=1e-12
    )
    np.testing.assert_allclose(analysis.per_query["q1"][:2], analysis.ce_seconds[1, :2])


def test_time_range_window() -> None:
    from types import SimpleNamespace

    run: Any = SimpleNamespace(intervals=4000, subinterval=2.0)
    assert window(TimeRange("all"), run.intervals, run.subinterval)[0] == slice(0, 4000)
    assert window(TimeRange("5m"), run.intervals, run.subinterval)[0] == slice(4000 - 150, 4000)
    assert window(TimeRange("1h"), run.intervals, run.subinterval)[0] == slice(4000 - 1800, 4000)
    short: Any = SimpleNamespace(intervals=5, subinterval=1.0)
    assert window(TimeRange("1h"), short.intervals, short.subinterval)[0] == slice(0, 5)


def test_path_estimator_uses_the_paths_of_each_placement_version(tmp_path: Path) -> None:
    """The tandem run (builders.TANDEM_TOPOLOGY) with b moved to n1 from t = 2 s.

    Intervals 0-1 keep the tandem path n1 -> n2: path-aware q1 = [1.25, 3.25] (as in
    the tandem run). From interval 2 q1 runs on n1 alone; n1 then carries a + b + c =
    [2.0, 0, 4.0], so its CE/C is [3.65, 2.65, 5.65] and q1's estimate is n1's CE/C.
    """
    from tests.dashboard.builders import TANDEM_CPU, TANDEM_TOPOLOGY, write_small_run

    db = tmp_path / "moved.duckdb"
    moved = {"a": "n1", "b": "n1", "c": "n1"}
    write_small_run(db, "moved", [(2.0, moved)], TANDEM_TOPOLOGY, TANDEM_CPU)
    run = RunCache(Database(db)).get("moved")
    path = report.analyses(run, estimator="path").estimated
    mace = report.analyses(run, estimator="mace").estimated
    np.testing.assert_allclose(path.per_query["q1"], [1.25, 3.25, 3.65, 2.65, 5.65])
    np.testing.assert_allclose(path.estimate, [1.25, 3.25, 3.65, 2.65, 5.65])
    np.testing.assert_allclose(mace.estimate, [1.25, 2.65, 3.65, 2.65, 5.65])
    # Mace stays the lower bound, the upper bound follows the chosen estimate
    np.testing.assert_allclose(path.lower, mace.estimate)
    np.testing.assert_allclose(path.upper - path.estimate, mace.upper - mace.estimate)


def test_unknown_estimator_is_a_clear_error(cache: RunCache) -> None:
    with pytest.raises(MaceError, match="unknown estimator 'exact'"):
        overview_views.overview(cache.get("small"), "all", "exact")


def test_whatif_with_the_path_aware_estimator(tandem_db: Path) -> None:
    """What-if honours the estimator choice: on the tandem run (q1 spans n1 -> n2) the
    path-aware estimate is never below Mace; once every operator is on n1 each path has
    one stage, so both estimators agree exactly."""
    run = RunCache(Database(tandem_db)).get("tandem")
    engine = WhatIfEngine()
    inputs = inputs_for_run(engine, run)
    mace = whatif_scenario.render(engine, inputs, {})
    path = whatif_scenario.render(engine, inputs, {}, estimator="path")
    assert path.current_wc >= mace.current_wc - 1e-12
    assert path.summary.startswith("path-aware WC: scenario")
    assert mace.summary.startswith("MaceWC: scenario")
    assert path.latency_figure["data"][0]["name"] == "current path-aware"
    table = {"rows": [{"operator": o, "node": "n1"} for o in ("a", "b", "c")]}
    merged = whatif_scenario.apply_edit(inputs, {}, "table", table)
    assert whatif_scenario.render(engine, inputs, merged, estimator="path").scenario_wc == (
        pytest.approx(whatif_scenario.render(engine, inputs, merged).scenario_wc, abs=1e-12)
    )
    rows = whatif_scenario.compare_rows(engine, inputs, [("all on n1", merged)], "path")
    assert [r["scenario"] for r in rows] == ["current", "all on n1"]
    assert rows[0]["path-aware WC"] == pytest.approx(path.current_wc, abs=1e-4)
    with pytest.raises(ScenarioError, match="unknown estimator 'exact'"):
        whatif_scenario.render(engine, inputs, {}, estimator="exact")


def test_a_third_registered_estimator_in_the_run_analysis(
    cache: RunCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dummy estimator (Mace + 1 s) registered in ESTIMATORS drives the run analysis,
    the overview and the What-if page by name; Mace stays the lower bound."""
    import dataclasses

    from estimator import pathaware
    from estimator.mace import Estimate

    def plus_one(topology: object, base: Estimate) -> Estimate:
        return dataclasses.replace(
            base,
            series=base.series + 1.0,
            per_query={q: s + 1.0 for q, s in base.per_query.items()},
        )

    monkeypatch.setitem(
        pathaware.ESTIMATORS,
        "plus1",
        pathaware.Estimator("plus-one", plus_one, "plus-one + w + eps"),
    )
    run = cache.get("small")
    mace = report.analyses(run).estimated
    third = report.analyses(run, estimator="plus1").estimated
    np.testing.assert_allclose(third.estimate, mace.estimate + 1.0)
    np.testing.assert_allclose(third.per_query["q1"], mace.per_query["q1"] + 1.0)
    np.testing.assert_allclose(third.lower, mace.estimate)
    assert overview_views.overview(run, "all", "plus1").estimated_wc == pytest.approx(0.8 + 1.0)
    engine = WhatIfEngine()
    view = whatif_scenario.render(engine, inputs_for_run(engine, run), {}, None, "plus1")
    assert view.current_wc == pytest.approx(0.846875 + 1.0)
    assert view.summary.startswith("plus-one WC: scenario")


def test_saved_scenario_keeps_its_added_query(cache: RunCache) -> None:
    added = {
        "operators": [{"id": "k", "query": "q3", "inputs": ["s"], "cost": 0.05}],
        "placement": {"k": "n2"},
        "sources": {},
    }
    data = {
        **whatif_scenario.apply_edit(
            inputs_for_run(WhatIfEngine(), cache.get("small")),
            {},
            "move",
            {"operator": "b", "node": "n1"},
        ),
        "add_query": added,
    }
    with cache.database.cursor() as cur:
        stored = scenarios.load_scenario(cur, scenarios.save_scenario(cur, "small", "k", data))
    assert stored.scenario == data


def test_explanation_of_the_worst_and_of_a_chosen_subinterval(shifting_db: Path) -> None:
    run = RunCache(Database(shifting_db)).get("shift")
    # hand-computed in builders.SHIFTING_CPU
    worst = overview_explain.explanation(run, None)
    assert (worst.blame.interval, worst.blame.resource, worst.blame.busy_since) == (1, "n1", 0)
    assert worst.blame.contributions == pytest.approx({"c": 1.2})
    assert worst.headline.startswith("At t = 1 s (subinterval 1), n1 is the bottleneck: 1.200 s")
    assert "since t = 0 s (subinterval 0)" in worst.headline
    assert worst.coverage_note is None
    late = overview_explain.explanation(run, 4)
    assert (late.blame.resource, late.blame.busy_since) == ("n2", 4)
    assert late.blame.contributions == pytest.approx({"a": 0.5 / 3, "b": 1.0 / 3})
    assert late.source_rows == [{"source": "s", "seconds": 0.5, "share": pytest.approx(1.0)}]
    (bars,) = late.figure["data"]
    assert bars["y"] == ["a", "b"] and bars["x"] == pytest.approx([0.5 / 3, 1.0 / 3])
    assert bars["text"] == ["0.167 s (33%)", "0.333 s (67%)"]
    colours = {e["data"]["id"]: e["data"].get("color_blame") for e in late.graph.elements}
    assert colours["c"] == "#e0e0e0" and colours["b"] != colours["a"] != "#e0e0e0"
    assert colours["b"] == share_color(2 / 3) and colours["s"] == share_color(1.0)
    idle = overview_explain.explanation(run, 3)
    assert idle.blame.ce_seconds == 0 and "no resource has a backlog" in idle.headline


def test_path_aware_explanation_covers_the_critical_path(tandem_db: Path) -> None:
    run = RunCache(Database(tandem_db)).get("tandem")
    view = overview_explain.explanation(run, None, "path")
    # builders.TANDEM_TOPOLOGY: path-aware 3.25 s at interval 1 = n1 +1.25 s on [0, 0]
    # (a 1.75, c 0.5 of 2.25 CPU-s) + n2 +2.0 s on [1, 1] (all b's)
    assert view.path is not None and view.path.estimate == pytest.approx(3.25)
    assert [s.resource for s in view.path.stages] == ["n1", "n2"]
    assert view.headline.startswith(
        "At t = 1 s (subinterval 1), the path-aware estimate is 3.250 s along the critical "
        "path n1 \u2192 n2: n1 +1.250 s (busy from t = 0 s); n2 +2.000 s (busy from t = 1 s)"
    )
    assert view.coverage_note is None
    assert (view.blame.resource, view.blame.busy_since) == ("n2", 1)  # the dominant node
    bars = {trace["name"]: trace["x"] for trace in view.figure["data"]}
    assert bars["a"] == [pytest.approx(1.25 * 1.75 / 2.25), None]
    assert bars["c"] == [pytest.approx(1.25 * 0.5 / 2.25), None]
    assert bars["b"] == [None, pytest.approx(2.0)]
    assert view.figure["data"][0]["y"] == ["n1<br>t 0\u20131 s", "n2<br>t 1\u20132 s"]
    labels = {e["data"]["id"]: e["data"].get("label_blame") for e in view.graph.elements}
    assert labels["b"] == "b\n2.000 s · 62%" and labels["s"] == "s\n3.250 s · 100%"
    # both nodes of the path are outlined as explained, not only the dominant one
    machines = {
        e["data"]["id"]: e["data"]
        for e in view.graph.elements
        if e["data"].get("kind") == "machine"
    }
    assert machines["machine:n1"]["label_blame"] == "n1\non the critical path"
    assert machines["machine:n1"]["border_blame"] == machines["machine:n2"]["border_blame"]
    assert view.source_rows == [{"source": "s", "seconds": 3.25, "share": pytest.approx(1.0)}]
    # the chart shades the chain from n1's window to the explained subinterval
    assert overview_explain.explained_span(
        run, None, report.analyses(run, estimator="path").estimated
    ) == (
        0,
        1,
        "n1 \u2192 n2",
    )


def test_burst_explanation_says_what_it_covers(tandem_db: Path) -> None:
    run = RunCache(Database(tandem_db)).get("tandem")
    view = overview_explain.explanation(run, 1, "burst")
    assert view.path is None and view.blame.resource == "n1"
    assert view.coverage_note is not None and "(Mace, 2.650 s)" in view.coverage_note


def test_a_click_selects_the_subinterval_of_its_run(shifting_db: Path) -> None:
    run = RunCache(Database(shifting_db)).get("shift")
    chosen = overview_explain.clicked_point("shift", {"points": [{"x": 3.9, "y": 0.5}]})
    assert chosen == {"run": "shift", "time": 3.9}
    assert overview_explain.selected_interval(run, chosen) == 4
    assert overview_explain.selected_interval(run, {"run": "other", "time": 3.9}) is None
    assert overview_explain.selected_interval(run, None) is None
    assert overview_explain.selected_interval(run, {"run": "shift", "time": 99.0}) == 4
    assert overview_explain.clicked_point("shift", {"points": []}) is None
    # the explained busy period (subinterval 4, [4 s, 5 s)) is shaded on the latency panel
    shapes = overview_views.overview(run, "all", "mace", 4).figure["layout"]["shapes"]
    assert [(s["x0"], s["x1"]) for s in shapes if s["type"] == "rect"] == [(4.0, 5.0)]


def test_a_rescale_is_a_change_verified_at_the_new_capacity(tmp_path: Path) -> None:
    from tests.dashboard.builders import write_small_run

    db = tmp_path / "rescaled.duckdb"
    write_small_run(db, versions=[(2.0, {"a": "n2", "b": "n2", "c": "n1"}, {"n2": 4.0})])
    run = RunCache(Database(db)).get("small")
    # costs fitted on [0, 2): a 1.95/17, b 0.2: n2 (a + b) peaks at CE/C 0.888 s in
    # interval 1 at capacity 2; from interval 2 its capacity 4 serves every load at once
    # (n1 has no backlog there either). At capacity 2 interval 4 would have 0.57 s.
    (row,) = overview_views.change_rows(run, overview_views.overview(run, "all").changes)
    assert row["moved"] == "n2: capacity 2 → 4"
    assert row["predicted_wc_before"] == pytest.approx(0.8882, abs=1e-4)
    assert row["predicted_wc_after"] == 0.0


def test_a_placement_change_is_marked_and_verified(tmp_path: Path) -> None:
    from tests.dashboard.builders import write_small_run

    db = tmp_path / "versions.duckdb"
    write_small_run(db, versions=[(2.0, {"a": "n2", "b": "n1", "c": "n1"})])
    run = RunCache(Database(db)).get("small")
    view = overview_views.overview(run, "all")
    # by hand, costs fitted on [0, 2): a 1.95/17, b 0.2, c 0.1. Before (n2, C = 2, a + b):
    # CE/C peaks at (12 a + 2.4 - 2) / 2 = 0.888 s; after, n1 (C = 1) carries b + c,
    # 0.3 s per event: CE 0.2 carried into 2, then 0.7, 0, 2.0. Measured max 1.2 s
    # before, 1.0 s after.
    (row,) = overview_views.change_rows(run, view.changes)
    assert row["time"] == 2.0 and row["version"] == 1 and row["moved"] == "b: n2 → n1"
    assert row["predicted_wc_before"] == pytest.approx(0.8882, abs=1e-4)
    assert row["predicted_wc_after"] == pytest.approx(2.0)
    assert (row["measured_wc_before"], row["measured_wc_after"]) == (1.2, 1.0)
    assert row["measured_change"] == pytest.approx(-1 / 6, abs=1e-4)
    marker = next(t for t in view.figure["data"] if t["name"] == "placement change")
    assert list(marker["x"]) == [2.0]
    assert marker["text"] == [
        "at t = 2 s (version 1: b n2 → n1): predicted +125% worst case, measured −17%"
    ]


def test_no_drift_banner_on_a_model_fitted_on_seconds(tmp_path: Path) -> None:
    """A 40 s run drifting from 20 s on, with the default model fitted on its first 4 s:
    no drift, no banner, and the model note says why (the alert pass raises none either)."""
    from tests.dashboard.builders import write_drift_run

    write_drift_run(tmp_path / "drift.duckdb", "drift", drifting=True)
    run = RunCache(Database(tmp_path / "drift.duckdb")).get("drift")
    view = overview_views.overview(run, "all")
    assert view.drift == ()
    assert overview_views.drift_banner(run, view, 5) == ""
    assert overview_views.model_note(run, view, refit=False) == (
        "Predicted line: model fitted on t = 0–4 s (the first 10% of the run). Drift is "
        "looked for once that window holds 60 s (now 4 s): a model fitted on less is not "
        "trusted, here and in the alerts. To look for it sooner, refit on a recent window."
    )


@pytest.mark.usefixtures("short_drift_training")
def test_drift_events_banner_and_refit(tmp_path: Path) -> None:
    from tests.dashboard.builders import DRIFT_FROM, write_drift_run

    write_drift_run(tmp_path / "drift.duckdb", "drift", drifting=True)
    write_drift_run(tmp_path / "steady.duckdb", "steady", drifting=False)
    steady = RunCache(Database(tmp_path / "steady.duckdb")).get("steady")
    assert overview_views.overview(steady, "all").drift == ()
    assert overview_views.drift_banner(steady, overview_views.overview(steady, "all"), 5) == ""
    run = RunCache(Database(tmp_path / "drift.duckdb")).get("drift")
    view = overview_views.overview(run, "all")
    # hand-computed in builders.write_drift_run
    assert overview_views.drift_rows(run, view.drift) == [
        {
            "query": "system",  # one query: its own band is the system's, not listed twice
            "start": 23.0,
            "end": 38.0,
            "duration": 15.0,
            "direction": "above the band",
            "flagged": 28.0,
            "peak": 7.2,
        }
    ]
    assert (
        "Latest (system): above the band from t = 23 s to 38 s, by up to 7.200 s"
        in overview_views.drift_banner(run, view, 5)
    )
    assert overview_views.overview(run, "all", k=16).drift == ()
    # refit on the last 15 s (cost 0.3): the predicted line starts from the estimated
    # backlog at t = 25 s and grows 0.5 s per second, as the measured latency does
    training = overview_views.refit_window(run, 0.25)
    assert training == (25, 40)
    refit = overview_views.overview(run, "all", training=training)
    assert refit.drift == () and refit.training == (25, 40)
    line = next(t for t in refit.figure["data"] if t["name"] == "predicted Mace (refit)")
    assert np.allclose(line["y"][26:], 0.5 * (np.arange(26, 40) - DRIFT_FROM + 1))
    assert "model refit on t = 25–40 s" in overview_views.model_note(run, refit, True)
    assert overview_views.stored_training(run, (25, 90)) == (25, 40)
    assert overview_views.stored_training(run, (40, 90)) is None
    assert overview_views.stored_training(run, None) is None
    for bad in (None, 0, -1, "5"):
        with pytest.raises(ViewError, match="positive number of minutes"):
            overview_views.refit_window(run, bad)
    for bad_k in (None, 0, 2.5, True):
        with pytest.raises(ViewError, match="drift: k must be"):
            overview_views.overview(run, "all", k=bad_k)  # type: ignore[arg-type]


def test_a_click_on_a_heatmap_row_names_its_node() -> None:
    click = {"points": [{"x": 3.0, "y": "n2", "z": 0.4}]}
    assert nodes_views.clicked_node(click, ["n1", "n2"]) == "n2"
    assert nodes_views.clicked_node(click, ["n1"]) is None  # not a node of this run (any more)
    assert nodes_views.clicked_node({"points": [{"x": 1.0, "y": 0.5}]}, ["n1"]) is None
    assert nodes_views.clicked_node(None, ["n1"]) is None
    assert nodes_views.clicked_node({"points": []}, ["n1"]) is None


def test_nodes_view_outlines_the_chosen_node(cache: RunCache) -> None:
    run = cache.get("small")
    heat, _ = nodes_views.nodes_run_view(run, TimeRange("all"), "n2")
    (outline,) = heat.layout.shapes
    # category rows in node order: n1 is row 0, n2 row 1
    assert (outline.y0, outline.y1, outline.xref) == (0.5, 1.5, "x domain")


WALL_START = 1_795_000_000.0  # 2026-11-18T11:06:40Z


@pytest.mark.usefixtures("short_drift_training")
def test_the_tables_and_the_explanation_follow_the_clock(tmp_path: Path, shifting_db: Path):
    """Changes, drift events, alerts and the explanation's headline in the chosen clock's
    time (the wall clock's rows are times of day, the since-start ones seconds)."""
    from datetime import datetime

    from storage.alerts import StoredAlert
    from tests.dashboard.builders import write_drift_run, write_small_run

    wall = Clock(WALL_START, wall=True)
    local = Clock(WALL_START, wall=True, zone="Asia/Kolkata")
    db = tmp_path / "versions.duckdb"
    write_small_run(db, versions=[(2.0, {"a": "n2", "b": "n1", "c": "n1"})])
    run = RunCache(Database(db)).get("small")
    checks = overview_views.overview(run, "all").changes
    assert [r["time"] for r in overview_views.change_rows(run, checks)] == [2.0]
    assert [r["time"] for r in overview_views.change_rows(run, checks, wall)] == ["11:06:42"]
    assert [r["time"] for r in overview_views.change_rows(run, checks, local)] == ["16:36:42"]

    write_drift_run(tmp_path / "drift.duckdb", "drift", drifting=True)
    drifting = RunCache(Database(tmp_path / "drift.duckdb")).get("drift")
    events = overview_views.overview(drifting, "all").drift
    (row,) = overview_views.drift_rows(drifting, events, wall)
    assert (row["start"], row["end"], row["flagged"]) == ("11:07:03", "11:07:18", "11:07:08")
    assert row["duration"] == 15.0  # a duration stays in seconds

    now = datetime(2026, 11, 18, 12, 0)
    alert = StoredAlert(1, "small", "q1", "measured_breach", 1, 2, 1.2, 1.0, "", now, now, False)
    (listed,) = overview_views.alert_rows(run, [alert], local)
    assert (listed["start"], listed["end"]) == ("16:36:41", "16:36:43")
    (plain,) = overview_views.alert_rows(run, [alert])
    assert (plain["start"], plain["end"]) == (1.0, 3.0)

    shifting = RunCache(Database(shifting_db)).get("shift")
    worst = overview_explain.explanation(shifting, None, clock=wall)
    assert worst.headline.startswith("At 11:06:41 UTC (subinterval 1), n1 is the bottleneck")
    assert "since 11:06:40 UTC (subinterval 0)" in worst.headline


def test_the_ce_heatmaps_have_a_dark_colour_scale(cache: RunCache) -> None:
    """Both CE/C heatmaps (Nodes, and the Overview's strip) name the colour scale a dark
    page uses: no backlog in the page's plot colour, growing from dark red to yellow."""
    from dashboard.shell.theme import DARK_HEAT, DARK_PLOT, YL_OR_RD

    run = cache.get("small")
    heat, _ = nodes_views.nodes_run_view(run, TimeRange("all"), "n2")
    panels = overview_views.overview(run, "all").figure
    for layout in (heat.to_plotly_json()["layout"], panels["layout"]):
        assert [list(stop) for stop in layout["coloraxis"]["colorscale"]] == YL_OR_RD
        assert layout["meta"]["dark"] == {"coloraxis.colorscale": DARK_HEAT}
    assert DARK_HEAT[0] == [0.0, DARK_PLOT] and DARK_HEAT[-1][0] == 1.0
    assert YL_OR_RD[0][1] == "rgb(255,255,204)" and DARK_HEAT[1][1] == "rgb(128,0,38)"
    (trace,) = heat.data
    assert trace.coloraxis == "coloraxis"
    strip = next(t for t in panels["data"] if t["type"] == "heatmap")
    assert strip["coloraxis"] == "coloraxis" and "colorscale" not in strip
    # the Overview's colour bar stands beside its strip
    bar, (low, high) = (
        panels["layout"]["coloraxis"]["colorbar"],
        panels["layout"]["yaxis2"]["domain"],
    )
    assert (bar["y"], bar["len"]) == (pytest.approx((low + high) / 2), pytest.approx(high - low))


def test_a_change_ahead_of_the_data_is_listed(tmp_path: Path) -> None:
    """A placement applied on a live run starts after the newest measured subinterval:
    its row says when, with no data after it yet (it used to stop the whole Overview)."""
    from tests.dashboard.builders import write_small_run

    db = tmp_path / "ahead.duckdb"
    write_small_run(db, versions=[(7.0, {"a": "n2", "b": "n1", "c": "n1"})])  # data: 5 s
    run = RunCache(Database(db)).get("small")
    (row,) = overview_views.change_rows(run, overview_views.overview(run, "all").changes)
    assert (row["time"], row["measured_wc_after"], row["predicted_wc_after"]) == (7.0, None, None)
    (wall,) = overview_views.change_rows(
        run, overview_views.overview(run, "all").changes, Clock(WALL_START, True)
    )
    assert wall["time"] == "11:06:47"


def test_an_engine_runs_report_becomes_rows_with_its_delay_and_threads() -> None:
    """A Flink run's report carries a per-query ``pipeline_delay`` object and ``threads``:
    the table shows the delay the estimate adds (the high one), and the threads' table
    their readings in ms."""
    entry = {key: 1.0 for key in report.KEYS} | {
        "pipeline_delay": {"low": 0.5, "typical": 1.25, "high": 2.0, "calm_subintervals": 9}
    }
    engine = {
        "queries": {"sink": entry},
        "system": {key: 2.0 for key in report.KEYS},
        "threads": {
            "parse": {
                "cost": 0.0031684,
                "reading": "queued",
                "predicted_cost": 0.00351,
                "predicted_reading": "busy time per record",
                "busy_per_record_calm": 0.006,
                "busy_per_record_busy": 0.0025,
                "busy_time_is_work": False,
                "python_worker": "python-worker@tm-1",
                "python_worker_cores": 2.0,
            }
        },
    }
    rows = reports_views.report_rows(engine)
    assert rows[0]["pipeline_delay"] == 2.0 and rows[0]["estimated_wc"] == 1.0
    assert "pipeline_delay" not in rows[1]
    assert {c["id"] for c in reports_views.report_columns()} >= set(rows[0])
    assert reports_views.thread_rows(engine) == [
        {
            "operator": "parse",
            "cost_ms": 3.168,
            "reading": "queued",
            "predicted_ms": 3.51,
            "predicted_reading": "busy time per record",
            "calm_ms": 6.0,
            "busy_ms": 2.5,
            "work": "no: it waits",
            "python_worker": "python-worker@tm-1 (2)",
        }
    ]
    assert reports_views.thread_rows({"queries": {}, "system": {}}) == []
    engine["threads"]["parse"]["predicted_counts_fixed_time"] = True
    (row,) = reports_views.thread_rows(engine)
    assert row["predicted_reading"] == (
        "busy time per record; counts the worker's fixed time a second per record: high "
        "under more load"
    )
