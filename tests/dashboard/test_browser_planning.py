"""Planning in headless Chromium: admit a query on the What-if page (pasted
or uploaded), provision for an objective and load the proposal as the scenario, compare
plans, and the Nodes page's hosts needed over time."""

from __future__ import annotations

from pathlib import Path

import pytest
from dash.testing.wait import until
from selenium.webdriver.common.by import By

from dashboard.app import create_app
from storage.db import connect
from storage.scenarios import set_objective
from tests.dashboard import ids
from tests.dashboard.builders import PLAN_B, QUERY_BREAKS_Q1, QUERY_FITS

pytestmark = pytest.mark.browser

SUMMARY = f"#{ids.WI_MACE_WC}"


def _open(dash_duo, db: Path, tab: str) -> None:
    dash_duo.start_server(create_app(db, refresh_seconds=60, estimator="mace"))
    dash_duo.wait_for_page(url=dash_duo.server_url + "/whatif")
    dash_duo.wait_for_contains_text(SUMMARY, "MaceWC: scenario", timeout=20)
    dash_duo.driver.find_element(By.LINK_TEXT, tab).click()


def _paste(dash_duo, text: str) -> None:
    box = dash_duo.find_element(f"#{ids.WI_AD_TEXT}")
    box.clear()
    box.send_keys(text)


def test_admission_of_a_pasted_query_that_fits_then_of_a_file_that_breaks_q1(
    dash_duo, small_db: Path, tmp_path: Path
) -> None:
    con = connect(small_db)
    set_objective(con, "small", "q2", 1.0)
    con.close()
    _open(dash_duo, small_db, "Admit a query")
    decision = f"#{ids.WI_AD_DECISION}"
    _paste(dash_duo, QUERY_FITS)
    dash_duo.find_element(f"#{ids.WI_AD_START}").click()
    dash_duo.wait_for_text_to_equal(
        decision, "admitted: q9 fits; every query keeps its objective", timeout=30
    )
    assert "q9 (new)" in dash_duo.find_element(f"#{ids.WI_AD_QUERIES}").text
    assert dash_duo.find_element(f"#{ids.WI_AD_APPLY}").is_enabled()

    # a query file uploaded, placed as the file says: q1 breaks its 1 s objective
    heavy = tmp_path / "heavy.yaml"
    heavy.write_text(QUERY_BREAKS_Q1)
    dash_duo.find_element(f"#{ids.WI_AD_UPLOAD} input[type=file]").send_keys(str(heavy))
    dash_duo.wait_for_text_to_equal(decision, "loaded heavy.yaml", timeout=20)
    dash_duo.select_dcc_dropdown(f"#{ids.WI_AD_ALGO}", value="as in the file (no search)")
    dash_duo.find_element(f"#{ids.WI_AD_START}").click()
    dash_duo.wait_for_text_to_equal(
        decision, "refused: adding q9 breaks the objective of q1 4.9250 s > 1.0000 s", timeout=30
    )
    assert "NO" in dash_duo.find_element(f"#{ids.WI_AD_QUERIES}").text
    until(lambda: not dash_duo.find_element(f"#{ids.WI_AD_APPLY}").is_enabled(), timeout=10)

    # a broken file: a clear message, and the page stays up
    _paste(dash_duo, "query: q9\noperators:\n  - {id: x, inputs: [nowhere], cost: 1}\n")
    dash_duo.find_element(f"#{ids.WI_AD_START}").click()
    dash_duo.wait_for_contains_text(decision, "unknown input 'nowhere'", timeout=30)
    assert dash_duo.find_element(SUMMARY).text.startswith("MaceWC: scenario")

    # the query that fits, added to the scenario
    _paste(dash_duo, QUERY_FITS)
    dash_duo.find_element(f"#{ids.WI_AD_START}").click()
    dash_duo.wait_for_contains_text(decision, "admitted: q9 fits", timeout=30)
    until(lambda: dash_duo.find_element(f"#{ids.WI_AD_APPLY}").is_enabled(), timeout=10)
    dash_duo.find_element(f"#{ids.WI_AD_APPLY}").click()
    dash_duo.wait_for_contains_text(f"#{ids.WI_EDITS}", "loaded scenario 'admitted q9'", timeout=20)
    assert dash_duo.get_logs() == []


def test_provision_loads_the_proposal_into_the_scenario(dash_duo, small_db: Path) -> None:
    _open(dash_duo, small_db, "Provision for an objective")
    # defaults: the stored objective of q1 (1 s), nodes as large as the largest (2)
    objective = dash_duo.find_element(f"#{ids.WI_PV_OBJECTIVE}")
    until(lambda: objective.get_attribute("value") == "1", timeout=10)
    assert dash_duo.find_element(f"#{ids.WI_PV_CAPACITY}").get_attribute("value") == "2"
    before = dash_duo.find_element(SUMMARY).text
    dash_duo.find_element(f"#{ids.WI_PV_START}").click()
    dash_duo.wait_for_contains_text(
        f"#{ids.WI_PV_DECISION}", "2 nodes of capacity 2 meet the objective of 1 s", timeout=60
    )
    until(lambda: dash_duo.find_element(f"#{ids.WI_PV_APPLY}").is_enabled(), timeout=10)
    dash_duo.find_element(f"#{ids.WI_PV_APPLY}").click()
    # back on the editor, with the proposal as one edit of the scenario
    dash_duo.wait_for_contains_text(
        f"#{ids.WI_EDITS}", "loaded scenario 'provisioned: 2 nodes of capacity 2'", timeout=20
    )
    until(lambda: dash_duo.find_element(SUMMARY).text != before, timeout=20)
    assert dash_duo.find_element(f"#{ids.WI_GRAPH}").is_displayed()
    assert dash_duo.get_logs() == []


def test_compare_plans_ranks_an_uploaded_plan(dash_duo, small_db: Path, tmp_path: Path) -> None:
    _open(dash_duo, small_db, "Compare plans")
    plan = tmp_path / "B.yaml"
    plan.write_text(PLAN_B)
    dash_duo.find_element(f"#{ids.WI_PL_UPLOAD} input[type=file]").send_keys(str(plan))
    dash_duo.wait_for_text_to_equal(
        f"#{ids.WI_PL_CHOSEN}", "chosen: B.yaml (lowest MaceWC)", timeout=20
    )
    assert "running plan (q1)" in dash_duo.find_element(f"#{ids.WI_PL_TABLE}").text
    assert dash_duo.get_logs() == []


def test_nodes_page_draws_hosts_needed_over_time(dash_duo, small_db: Path) -> None:
    dash_duo.start_server(create_app(small_db, refresh_seconds=60))
    dash_duo.wait_for_page(url=dash_duo.server_url + "/nodes")
    dash_duo.wait_for_contains_text(f"#{ids.ND_HOSTS_CAPTION}", "Machine-hours", timeout=60)
    traces = f"#{ids.ND_HOSTS} .scatterlayer .trace"
    until(lambda: len(dash_duo.find_elements(traces)) == 2, timeout=10)
    names = dash_duo.find_element(f"#{ids.ND_HOSTS} .legend").text
    assert "Mace-based (objective 1 s)" in names
    assert "FUGU threshold (85% utilisation)" in names
    # another objective, computed again on request
    field = dash_duo.find_element(f"#{ids.ND_HOSTS_OBJECTIVE}")
    field.clear()
    field.send_keys("0.3")
    dash_duo.find_element(f"#{ids.ND_HOSTS_START}").click()
    dash_duo.wait_for_contains_text(
        f"#{ids.ND_HOSTS} .legend", "Mace-based (objective 0.3 s)", timeout=60
    )
    assert dash_duo.get_logs() == []
