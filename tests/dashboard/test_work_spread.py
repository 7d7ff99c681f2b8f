"""What a prediction becomes within the spread of a cost read from counters, by hand.

The bursty run of tests/mace/test_whatif_command.py: one operator (0.01 s a record) on a
machine of capacity 1, cycles of 9 s at 50 records/s and 1 s at 300. The burst brings
3.0 s of work into a second that serves 1: 2.0 s of backlog. With every record's work
10% lower (2.7 s) it leaves 1.7 s, 10% higher (3.3 s) 2.3 s; at parallelism 2 (each
subtask half of it, capacity 1 each) 0.35 s and 0.65 s around 0.5 s.
"""

from __future__ import annotations

import numpy as np
import pytest

from dashboard.core.deployment import FittedRun, deployment_series, whatif_document
from dashboard.whatif.figures import deployment_figure
from dashboard.whatif.flink import summary
from estimator.fitting import WORK_SPREAD
from estimator.model import topology_from_dict
from estimator.parallelism import Edits, predict, resolve, shape_of
from mace.parallelism_command import format_plan
from mace.whatif_command import format_whatif
from tests.mace.test_whatif_command import BURSTY, bursty_document


def fitted_bursty(counters: bool) -> FittedRun:
    topology = topology_from_dict(bursty_document(False))
    dlts = 0.01 * np.array([BURSTY * 10], dtype=float)
    shape = shape_of(topology)
    current = predict(topology, shape, resolve(shape, Edits()), dlts)
    return FittedRun("bursty", topology, dlts, lambda analysis: analysis, current, counters)


def test_the_spread_is_the_worst_case_of_a_work_ten_percent_lower_and_higher() -> None:
    assert round(WORK_SPREAD, 6) == 0.1  # the hand-computed figures below assume it
    document = whatif_document(fitted_bursty(True), Edits(parallelism={"m": 2}))
    recorded, changed = document["recorded"], document["changed"]
    assert recorded["system"]["wc"] == pytest.approx(2.0)
    assert recorded["spread"]["share"] == pytest.approx(0.1)
    assert recorded["spread"]["system"] == pytest.approx({"lower": 1.7, "higher": 2.3})
    assert recorded["spread"]["queries"] == {"q1": pytest.approx({"lower": 1.7, "higher": 2.3})}
    assert changed["system"]["wc"] == pytest.approx(0.5)
    assert changed["spread"]["system"] == pytest.approx({"lower": 0.35, "higher": 0.65})


def test_a_simulated_run_has_no_spread() -> None:
    document = whatif_document(fitted_bursty(False), Edits(parallelism={"m": 2}))
    assert document["recorded"]["spread"] is None and document["changed"]["spread"] is None
    assert "work is" not in format_whatif({**document, "restart": None})
    assert "lower or higher" not in summary(document)


def test_the_cli_and_the_page_say_the_spread_in_words() -> None:
    document = whatif_document(fitted_bursty(True), Edits(parallelism={"m": 2}))
    text = format_whatif({**document, "restart": None})
    assert (
        "if every record's work is 10% lower / higher: system worst case "
        "recorded 1.7000 / 2.3000 s, changed 0.3500 / 0.6500 s"
    ) in text
    assert summary(document).endswith(
        "With every record's work 10% lower or higher, as a cost read from counters "
        "can be: 0.3500-0.6500 s changed"
    )


def test_the_plan_says_whether_its_recommendation_holds_with_a_higher_work() -> None:
    document = whatif_document(fitted_bursty(True), Edits(parallelism={"m": 2}))
    recorded, changed = document["recorded"], document["changed"]
    entry = {**changed, "meets_objective": True, "restart": None, "feasible": True}
    plan = {
        "run": "bursty",
        "objective": 0.6,
        "recommended": entry,
        "utilization_rule": {**entry, "target": 0.7},
        "recorded": recorded,
    }
    text = format_plan(plan)
    # 0.5 s meets 0.6 s; with every record's work 10% higher, 0.65 s does not
    assert (
        "with every record's work 10% lower / higher: 0.3500 / 0.6500 s; the higher MISSES it"
        in text
    )
    assert "0.3500 / 0.6500 s; the higher meets it" in format_plan({**plan, "objective": 0.7})


def test_the_deployment_chart_draws_the_spread_dotted_around_the_changed_line() -> None:
    fitted = fitted_bursty(True)
    series = deployment_series(fitted, Edits(parallelism={"m": 2}))
    assert series.lower is not None and series.higher is not None
    times = np.arange(series.changed.size, dtype=float)
    figure = deployment_figure(
        times, np.full(times.size, np.nan), series.recorded, series.changed,
        (series.lower, series.higher),
    )  # fmt: skip
    peaks = {t["name"]: float(np.nanmax(t["y"])) for t in figure["data"][1:]}
    assert peaks == pytest.approx(
        {
            "predicted, recorded": 2.0,
            "predicted, changed": 0.5,
            "changed, work 10% lower": 0.35,
            "changed, work 10% higher": 0.65,
        }
    )
    assert [t["line"].get("dash") for t in figure["data"][3:]] == ["dot", "dot"]
    simulated = deployment_series(fitted_bursty(False), Edits(parallelism={"m": 2}))
    assert simulated.lower is None and simulated.higher is None
