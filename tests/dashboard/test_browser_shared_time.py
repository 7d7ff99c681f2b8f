"""The time picker in the top bar is one for every page: its range and its clock go along
from page to page, in the URL and in each page's charts (real browser)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dash.testing.wait import until

from dashboard.app import create_app
from tests.dashboard import ids
from tests.dashboard.builders import ONE_NODE_TOPOLOGY, write_series_run

pytestmark = pytest.mark.browser

START = 1_795_000_000.0  # the run starts at 2026-11-18 11:06:40 UTC
INTERVALS = 600  # ten minutes of 1 s subintervals
LAST_5M_WALL = ["2026-11-18 11:11:40", "2026-11-18 11:16:40"]  # [300, 600] s
WALL_TITLE = "wall clock (UTC)"
SINCE_TITLE = "time since run start (s)"
CHARTS = {
    "/": f"#{ids.OV_LATENCY} .js-plotly-plot",
    "/nodes": f"#{ids.ND_HEATMAP} .js-plotly-plot",
    "/reports": f"#{ids.RP_FIGURE} .js-plotly-plot",
}


def _ten_minute_run(tmp_path: Path) -> Path:
    db = tmp_path / "ten.duckdb"
    write_series_run(
        db,
        "ten",
        {**ONE_NODE_TOPOLOGY, "origin": START},
        [5] * INTERVALS,
        {"a": [0.5] * INTERVALS},
        {"q1": [0.3] * INTERVALS},
    )
    return db


def _axis(dash_duo: Any, path: str) -> Any:
    """The x axis's title and range of the page's chart (dates as "YYYY-MM-DD hh:mm:ss")."""
    return dash_duo.driver.execute_script(
        f"const x = document.querySelector('{CHARTS[path]}').layout.xaxis;"
        "const r = (x.range || []).map(v => typeof v === 'string' ? "
        "v.replace('T', ' ').replace(/\\.0+$/, '') : v);"
        "return [x.title && x.title.text, r];"
    )


def _open(dash_duo: Any, path: str) -> None:
    """Follow the top bar's link to ``path`` (no page load: the shell stays)."""
    dash_duo.find_element(f"a.nav-link[href^='{path}?']").click()
    until(lambda: dash_duo.driver.execute_script("return location.pathname;") == path, 10)
    dash_duo.wait_for_element(CHARTS[path], timeout=20)


def test_the_range_and_the_clock_go_along_to_every_page(dash_duo, tmp_path: Path) -> None:
    dash_duo.driver.set_window_size(1500, 1000)
    dash_duo.start_server(create_app(_ten_minute_run(tmp_path), refresh_seconds=60))
    dash_duo.wait_for_element(CHARTS["/"], timeout=20)
    dash_duo.find_element(f"#{ids.TIME_PRESET} input[value='5m']").click()
    until(lambda: "range=5m" in dash_duo.driver.current_url, timeout=10)
    until(lambda: _axis(dash_duo, "/") == [WALL_TITLE, LAST_5M_WALL], timeout=20)
    for path in ("/nodes", "/reports"):
        _open(dash_duo, path)
        until(lambda p=path: _axis(dash_duo, p) == [WALL_TITLE, LAST_5M_WALL], timeout=20)
        assert "range=5m" in dash_duo.driver.current_url
        assert dash_duo.find_element(f"#{ids.TIME_PRESET} input[value='5m']").is_selected()
    # a clock chosen on one page holds on the others
    dash_duo.find_element(f"#{ids.CLOCK} input[value='since']").click()
    until(lambda: _axis(dash_duo, "/reports") == [SINCE_TITLE, [300, 600]], timeout=20)
    until(lambda: "clock=since" in dash_duo.driver.current_url, timeout=10)
    for path in ("/nodes", "/"):
        _open(dash_duo, path)
        until(lambda p=path: _axis(dash_duo, p) == [SINCE_TITLE, [300, 600]], timeout=20)
        assert "range=5m" in dash_duo.driver.current_url
        assert "clock=since" in dash_duo.driver.current_url
    assert dash_duo.get_logs() == []


def test_a_link_with_a_range_opens_any_page_with_it(dash_duo, tmp_path: Path) -> None:
    dash_duo.start_server(create_app(_ten_minute_run(tmp_path), refresh_seconds=60))
    dash_duo.wait_for_page(url=f"{dash_duo.server_url}/nodes?run=ten&range=5m&clock=since")
    dash_duo.wait_for_element(CHARTS["/nodes"], timeout=20)
    until(lambda: _axis(dash_duo, "/nodes") == [SINCE_TITLE, [300, 600]], timeout=20)
    assert dash_duo.find_element(f"#{ids.TIME_PRESET} input[value='5m']").is_selected()
    assert dash_duo.find_element(f"#{ids.CLOCK} input[value='since']").is_selected()
    assert dash_duo.get_logs() == []
