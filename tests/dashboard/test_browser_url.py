"""Shareable state: the run and the estimator live in the URL, so a copied
link reproduces the view, and page links carry them along."""

from __future__ import annotations

from pathlib import Path

import pytest
from dash.testing.wait import until

from dashboard.app import create_app
from tests.dashboard import ids
from tests.dashboard.builders import write_small_run

pytestmark = pytest.mark.browser


def test_url_sets_the_top_bar_and_follows_it(dash_duo, tmp_path: Path) -> None:
    db = tmp_path / "two.duckdb"
    write_small_run(db, "small")
    write_small_run(db, "second")  # not the default: the default is the newest, "small"
    dash_duo.start_server(create_app(db, refresh_seconds=60))
    dash_duo.wait_for_page(url=f"{dash_duo.server_url}/nodes?run=second&estimator=path")
    dash_duo.wait_for_contains_text(f"#{ids.RUN}", "second", timeout=20)
    dash_duo.wait_for_contains_text(f"#{ids.ESTIMATOR}", "path-aware", timeout=20)
    active = dash_duo.find_element(".nav-link.active")
    assert active.text == "Nodes"

    dash_duo.select_dcc_dropdown(f"#{ids.ESTIMATOR}", value="estimator: Mace")
    until(lambda: "estimator=mace" in dash_duo.driver.current_url, timeout=10)
    assert "run=second" in dash_duo.driver.current_url

    overview = next(link for link in dash_duo.find_elements(".nav-link") if link.text == "Overview")
    assert overview.get_attribute("href").endswith("/?run=second&estimator=mace")
    overview.click()
    dash_duo.wait_for_element(f"#{ids.OV_LATENCY} .main-svg", timeout=20)
    assert dash_duo.driver.current_url.endswith("/?run=second&estimator=mace")
    dash_duo.wait_for_contains_text(f"#{ids.RUN}", "second", timeout=20)
    assert dash_duo.find_element(".nav-link.active").text == "Overview"
    assert dash_duo.get_logs() == []


def test_unknown_values_in_the_url_are_ignored(dash_duo, small_db: Path) -> None:
    dash_duo.start_server(create_app(small_db, refresh_seconds=60))
    dash_duo.wait_for_page(url=f"{dash_duo.server_url}/?run=nope&estimator=magic")
    dash_duo.wait_for_element(f"#{ids.OV_LATENCY} .main-svg", timeout=20)
    assert "small" in dash_duo.find_element(f"#{ids.RUN}").text
    until(lambda: "run=small" in dash_duo.driver.current_url, timeout=10)
    assert "estimator=auto" in dash_duo.driver.current_url  # the default
    assert dash_duo.get_logs() == []
