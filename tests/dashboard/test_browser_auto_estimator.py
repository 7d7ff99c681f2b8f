"""The top bar's estimator ``auto`` (what ``mace serve`` and ``mace demo`` start with):
each page shows the estimate auto picks for the run, and the Overview says which and why
(real browser)."""

from __future__ import annotations

from pathlib import Path

import pytest
from dash.testing.wait import until

from dashboard.app import create_app
from tests.dashboard import ids

pytestmark = pytest.mark.browser

CAPTION = f"#{ids.OV_ESTIMATE_NOTE}"
CHART = f"#{ids.OV_LATENCY} .js-plotly-plot"


def test_auto_shows_the_estimate_it_picks_and_says_why(dash_duo, small_db: Path) -> None:
    dash_duo.start_server(create_app(small_db, refresh_seconds=60, estimator="auto"))
    dash_duo.wait_for_contains_text(CAPTION, "Estimate shown: per-origin (auto: ", timeout=30)
    caption = dash_duo.find_element(CAPTION).text
    assert "the most accurate estimate" in caption
    assert "within the 0.5 s budget" in caption
    assert "estimator: auto" in dash_duo.find_element(f"#{ids.ESTIMATOR}").text
    until(lambda: "estimator=auto" in dash_duo.driver.current_url, timeout=10)
    names = lambda: dash_duo.driver.execute_script(  # noqa: E731
        f"const p = document.querySelector('{CHART}'); return p ? p.data.map(t => t.name) : [];"
    )
    until(lambda: any("per-origin" in (n or "") for n in names()), timeout=20)
    # What-if evaluates the scenario with the same estimate
    dash_duo.find_element("a.nav-link[href^='/whatif?']").click()
    dash_duo.wait_for_contains_text(f"#{ids.WI_MACE_WC}", "per-origin WC: scenario", timeout=30)
    assert dash_duo.get_logs() == []
