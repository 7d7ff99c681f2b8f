"""Changes, drift and alerts on the Overview, in headless Chromium: a
placement change gets a marker with its verification and a row in the Changes table;
the drift banner shows on a drifting run and not on a steady one; a refit clears it."""

from __future__ import annotations

from pathlib import Path

import pytest
from dash import Dash
from dash.testing.wait import until
from selenium.webdriver.common.action_chains import ActionChains

from dashboard.app import create_app
from dashboard.context import CONFIG_KEY
from dashboard.core.data import Database, RunCache
from dashboard.core.monitoring import run_alerts
from storage.alerts import record_alerts
from storage.db import connect, transaction
from storage.scenarios import training_window_of
from tests.dashboard import ids
from tests.dashboard.builders import write_drift_run, write_small_run
from tests.dashboard.test_browser_explain import click_time

pytestmark = pytest.mark.browser


def _start(dash_duo, db: Path) -> Dash:
    app = create_app(db, refresh_seconds=60, estimator="mace")
    dash_duo.start_server(app)
    return app


def test_placement_change_has_a_marker_and_a_changes_row(dash_duo, tmp_path: Path):
    db = tmp_path / "versions.duckdb"
    write_small_run(db, versions=[(2.0, {"a": "n2", "b": "n1", "c": "n1"})])
    _start(dash_duo, db)
    graph = f"#{ids.OV_LATENCY}"
    dash_duo.wait_for_element(f"{graph} .nsewdrag", timeout=20)
    assert "placement change" in [e.text for e in dash_duo.find_elements(f"{graph} .legendtext")]
    # the dashed marker line at t = 2 s, labelled on the chart
    assert "change" in [e.text for e in dash_duo.find_elements(f"{graph} .annotation-text")]
    # hovering the change shows its verification (hand-computed in test_views)
    drag = dash_duo.find_element(f"{graph} .nsewdrag")
    offset = dash_duo.driver.execute_script(
        f"const xa = document.querySelector('{graph} .js-plotly-plot')._fullLayout.xaxis;"
        "return xa.l2p(2.0) - xa._length / 2;"
    )
    ActionChains(dash_duo.driver).move_to_element(drag).move_by_offset(int(offset), 0).pause(
        0.3
    ).perform()
    until(lambda: dash_duo.find_elements(f"{graph} .hoverlayer text"), timeout=10)
    hover = " ".join(e.text for e in dash_duo.find_elements(f"{graph} .hoverlayer text"))
    assert "predicted +125% worst case, measured −17%" in hover
    table = f"#{ids.OV_CHANGES_TABLE}"
    dash_duo.wait_for_contains_text(table, "b: n2 → n1", timeout=20)
    cells = [e.text for e in dash_duo.find_elements(f"{table} td")]
    assert cells == ["2", "1", "b: n2 → n1", "+125%", "−17%", "0.888", "2.000", "1.200", "1.000"]
    # the verdict is visible without scrolling the table sideways, on a 1024 px window
    dash_duo.driver.set_window_size(1024, 900)
    for column in ("predicted_change", "measured_change"):
        inside = dash_duo.driver.execute_script(
            "const cell = document.querySelector(arguments[0]);"
            "const box = cell.closest('.dash-spreadsheet-container').getBoundingClientRect();"
            "const r = cell.getBoundingClientRect();"
            "return r.left >= box.left && r.right <= box.right && r.right <= window.innerWidth;",
            f"{table} td[data-dash-column='{column}']",
        )
        assert inside, f"{column} is outside the table's visible width"
    assert dash_duo.get_logs() == []


def test_no_change_no_marker_and_an_empty_changes_table(dash_duo, small_db: Path):
    _start(dash_duo, small_db)
    dash_duo.wait_for_element(f"#{ids.OV_LATENCY} .legendtext", timeout=20)
    legend = [e.text for e in dash_duo.find_elements(f"#{ids.OV_LATENCY} .legendtext")]
    assert "placement change" not in legend
    assert dash_duo.find_elements(f"#{ids.OV_CHANGES_TABLE} td") == []
    assert not dash_duo.find_elements(f"#{ids.OV_DRIFT_BANNER}.show")
    assert dash_duo.get_logs() == []


@pytest.mark.usefixtures("short_drift_training")
def test_drift_banner_table_alerts_and_refit(dash_duo, tmp_path: Path):
    db = tmp_path / "drift.duckdb"
    write_drift_run(db, "drift", drifting=True)
    run = RunCache(Database(db)).get("drift")
    con = connect(db)
    with transaction(con, "alerts"):
        record_alerts(con, "drift", run_alerts(run, {"q1": 2.0}))
    con.close()
    app = _start(dash_duo, db)
    banner = f"#{ids.OV_DRIFT_BANNER}"
    # hand-computed in builders.write_drift_run: one event, above, 23 .. 37
    dash_duo.wait_for_contains_text(
        banner, "above the band from t = 23 s to 38 s, by up to 7.200 s", timeout=20
    )
    cells = [e.text for e in dash_duo.find_elements(f"#{ids.OV_DRIFT_TABLE} td")]
    assert cells == ["system", "23", "38", "15", "above the band", "28", "7.200"]
    alerts = f"#{ids.OV_ALERTS}"
    dash_duo.wait_for_contains_text(alerts, "model drift", timeout=20)
    text = dash_duo.find_element(alerts).text
    assert "measured above objective" in text and "predicted above objective" not in text
    # k larger than the event: no banner
    k = dash_duo.find_element(f"#{ids.OV_DRIFT_K}")
    k.clear()
    k.send_keys("16\n")
    until(lambda: not dash_duo.find_elements(f"{banner}.show"), timeout=20)
    k.clear()
    k.send_keys("5\n")
    dash_duo.wait_for_element(f"{banner}.show", timeout=20)
    # one click refits the model on the last 15 s: it predicts the new cost, no drift
    minutes = dash_duo.find_element(f"#{ids.OV_REFIT_MINUTES}")
    minutes.clear()
    minutes.send_keys("0.25\n")
    dash_duo.find_element(f"#{ids.OV_REFIT_APPLY}").click()
    dash_duo.wait_for_contains_text(
        f"#{ids.OV_MODEL_NOTE}", "model refit on t = 25–40 s", timeout=20
    )
    until(lambda: not dash_duo.find_elements(f"{banner}.show"), timeout=20)
    assert dash_duo.find_elements(f"#{ids.OV_DRIFT_TABLE} td") == []
    legend = [e.text for e in dash_duo.find_elements(f"#{ids.OV_LATENCY} .legendtext")]
    assert "predicted Mace (refit)" in legend
    assert _stored_window(app) == (25, 40)  # the alert pass predicts with it too
    dash_duo.find_element(f"#{ids.OV_REFIT_RESET}").click()
    dash_duo.wait_for_element(f"{banner}.show", timeout=20)
    assert _stored_window(app) is None
    assert dash_duo.get_logs() == []


def _stored_window(app: Dash) -> tuple[int, int] | None:
    """The run's training window, read through the app's own connection."""
    with app.server.config[CONFIG_KEY].database.cursor() as cur:
        return training_window_of(cur, "drift")


def test_steady_run_has_no_drift_banner(dash_duo, tmp_path: Path):
    db = tmp_path / "steady.duckdb"
    write_drift_run(db, "steady", drifting=False)
    _start(dash_duo, db)
    dash_duo.wait_for_contains_text(
        f"#{ids.OV_MODEL_NOTE}", "model fitted on t = 0–4 s", timeout=20
    )
    assert not dash_duo.find_elements(f"#{ids.OV_DRIFT_BANNER}.show")
    assert dash_duo.find_elements(f"#{ids.OV_DRIFT_TABLE} td") == []
    dash_duo.wait_for_contains_text(f"#{ids.OV_ALERTS_NOTE}", "No alert stored", timeout=20)
    # a click on the chart still explains (no backlog on this run)
    click_time(dash_duo, ids.OV_LATENCY, 10.0)
    dash_duo.wait_for_contains_text(
        f"#{ids.OV_EXPLAIN_TEXT}", "At t = 10 s (subinterval 10), no resource has a backlog"
    )
    assert dash_duo.get_logs() == []
