"""Time on the Overview in headless Chromium (the operations
console): wall clock (UTC or the browser's zone) or since the start, in the chart, the
tables and the explanation; a custom range that outlives refreshes, pause, violations as
time ranges, one time axis for all panels, the range, clock and refresh in the URL."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from dash.testing.wait import until

from dashboard.app import create_app
from storage.db import connect
from storage.scenarios import set_objective
from tests.dashboard import ids
from tests.dashboard.builders import SMALL_TOPOLOGY, write_small_run

pytestmark = pytest.mark.browser

GRAPH = f"#{ids.OV_LATENCY} .js-plotly-plot"
START = 1_795_000_000.0  # the wall-clock run starts at 2026-11-18 11:06:40 UTC


def _layout(dash_duo: Any, path: str) -> Any:
    return dash_duo.driver.execute_script(
        f"return document.querySelector('{GRAPH}').layout.{path};"
    )


def _wall_db(tmp_path: Path, versions: Any = ()) -> Path:
    """The small run (measured q1 max [0.3, 1.2, 1.0, -, 0.4]) started on the wall clock,
    with q1's objective 1 s: violated in subinterval 1 only."""
    db = tmp_path / "wall.duckdb"
    write_small_run(db, versions=versions, document={**SMALL_TOPOLOGY, "origin": START})
    con = connect(db)
    try:
        set_objective(con, "small", "q1", 1.0)
    finally:
        con.close()
    return db


def _mark_drawn(dash_duo: Any) -> None:
    """Mark the drawn traces: a redraw of the figure replaces them."""
    dash_duo.driver.execute_script(f"document.querySelector('{GRAPH}').data[0].probe = 1;")


def _redrawn(dash_duo: Any) -> bool:
    return bool(
        dash_duo.driver.execute_script(
            f"return document.querySelector('{GRAPH}').data[0].probe === undefined;"
        )
    )


def _type(dash_duo: Any, component: str, text: str) -> None:
    field = dash_duo.find_element(f"#{component}")
    dash_duo.clear_input(field)
    field.send_keys(text)


def test_the_clock_toggle_changes_the_axis(dash_duo, tmp_path: Path) -> None:
    dash_duo.start_server(create_app(_wall_db(tmp_path), refresh_seconds=60))
    dash_duo.wait_for_element(GRAPH, timeout=20)
    until(lambda: _layout(dash_duo, "xaxis.title.text") == "wall clock (UTC)", timeout=20)
    assert _layout(dash_duo, "xaxis.type") == "date"
    assert dash_duo.find_element(f"#{ids.TIME_FROM}").get_attribute("value") == (
        "2026-11-18 11:06:40"
    )
    dash_duo.find_element(f"#{ids.CLOCK} input[value='since']").click()
    until(lambda: _layout(dash_duo, "xaxis.title.text") == "time since run start (s)", timeout=20)
    assert _layout(dash_duo, "xaxis.range") == [0, 5]
    until(lambda: "clock=since" in dash_duo.driver.current_url, timeout=10)
    assert dash_duo.find_element(f"#{ids.TIME_FROM}").get_attribute("value") == "0"
    assert dash_duo.get_logs() == []


def test_the_range_picker_sets_the_range_and_it_outlives_refreshes(dash_duo, small_db: Path):
    dash_duo.start_server(create_app(small_db, refresh_seconds=1))
    dash_duo.wait_for_element(GRAPH, timeout=20)
    _type(dash_duo, ids.TIME_FROM, "abc")
    dash_duo.find_element(f"#{ids.TIME_APPLY}").click()
    dash_duo.wait_for_contains_text(
        f"#{ids.TIME_MESSAGE}", "'abc' is not a time since the start", timeout=10
    )
    _type(dash_duo, ids.TIME_FROM, "1")
    _type(dash_duo, ids.TIME_TO, "0:03")
    dash_duo.find_element(f"#{ids.TIME_APPLY}").click()
    until(lambda: _layout(dash_duo, "xaxis.range") == [1, 3], timeout=10)
    until(lambda: not dash_duo.find_elements(f"#{ids.TIME_MESSAGE}.show"), timeout=10)
    assert dash_duo.find_element(f"#{ids.TIME_PRESET} input[value='custom']").is_selected()
    until(lambda: "from=1&to=3" in dash_duo.driver.current_url, timeout=10)
    _mark_drawn(dash_duo)
    until(lambda: _redrawn(dash_duo), timeout=10)  # the automatic refresh
    assert _layout(dash_duo, "xaxis.range") == [1, 3]
    # a preset replaces it
    dash_duo.find_element(f"#{ids.TIME_PRESET} input[value='all']").click()
    until(lambda: _layout(dash_duo, "xaxis.range") == [0, 5], timeout=10)
    until(lambda: "from=" not in dash_duo.driver.current_url, timeout=10)
    assert dash_duo.get_logs() == []


def test_pause_stops_the_refresh_and_resume_restarts_it(dash_duo, small_db: Path) -> None:
    dash_duo.start_server(create_app(small_db, refresh_seconds=1))
    dash_duo.wait_for_element(GRAPH, timeout=20)
    dash_duo.wait_for_contains_text(f"#{ids.OV_LIVE_STATUS}", "refreshes every 1 s", timeout=10)
    dash_duo.find_element(f"#{ids.OV_PAUSE}").click()
    dash_duo.wait_for_contains_text(f"#{ids.OV_LIVE_STATUS}", "paused", timeout=10)
    dash_duo.wait_for_text_to_equal(f"#{ids.OV_PAUSE}", "Resume", timeout=10)
    time.sleep(1.5)  # a refresh requested just before the pause may still land
    _mark_drawn(dash_duo)
    time.sleep(4)  # four refresh periods
    assert not _redrawn(dash_duo)
    dash_duo.find_element(f"#{ids.OV_PAUSE}").click()
    dash_duo.wait_for_contains_text(f"#{ids.OV_LIVE_STATUS}", "refreshes every 1 s", timeout=10)
    until(lambda: _redrawn(dash_duo), timeout=10)
    assert dash_duo.get_logs() == []


def test_violations_are_shown_as_time_ranges(dash_duo, tmp_path: Path) -> None:
    dash_duo.start_server(create_app(_wall_db(tmp_path), refresh_seconds=60))
    dash_duo.wait_for_contains_text(f"#{ids.OV_VIOLATIONS}", "11:06:41–11:06:42 UTC", timeout=20)
    shapes = _layout(dash_duo, "shapes")
    shaded = [s for s in shapes if s["type"] == "rect" and s["yref"] == "paper"]
    assert [(s["x0"], s["x1"]) for s in shaded] == [("2026-11-18T11:06:41", "2026-11-18T11:06:42")]
    dash_duo.wait_for_page(url=dash_duo.server_url + "/reports")
    dash_duo.wait_for_text_to_equal(
        f"#{ids.RP_VIOLATIONS}",
        "q1: above its objective of 1 s in 1 subinterval, 1 range: "
        "11:06:41–11:06:42 UTC, 1 s, peak 1.2 s",
        timeout=20,
    )
    assert dash_duo.get_logs() == []


def test_a_zoom_on_one_panel_zooms_all(dash_duo, small_db: Path) -> None:
    dash_duo.start_server(create_app(small_db, refresh_seconds=60))
    dash_duo.wait_for_element(GRAPH, timeout=20)
    from selenium.webdriver.common.action_chains import ActionChains

    heatmap = dash_duo.find_element(f"#{ids.OV_LATENCY} .nsewdrag[data-subplot='xy2']")
    dash_duo.driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", heatmap)
    step = int(heatmap.size["width"]) // 8
    ActionChains(dash_duo.driver).move_to_element(heatmap).move_by_offset(
        -step, 0
    ).click_and_hold().move_by_offset(2 * step, 0).release().perform()
    until(lambda: "from=" in dash_duo.driver.current_url, timeout=10)
    zoomed = _layout(dash_duo, "xaxis.range")
    assert 0 < zoomed[0] < zoomed[1] < 5
    ranges = dash_duo.driver.execute_script(
        f"return Object.values(document.querySelector('{GRAPH}')._fullLayout._plots)"
        ".map(p => [p.id, p.xaxis._id, p.xaxis.range]);"
    )
    assert sorted(p[0] for p in ranges) == ["xy", "xy2", "xy3", "xy4"]
    assert all(axis == "x" and shown == zoomed for _, axis, shown in ranges)
    assert dash_duo.find_element(f"#{ids.TIME_PRESET} input[value='custom']").is_selected()
    assert dash_duo.get_logs() == []


def test_a_url_with_a_range_reproduces_it(dash_duo, small_db: Path) -> None:
    dash_duo.start_server(create_app(small_db, refresh_seconds=60))
    dash_duo.wait_for_page(url=f"{dash_duo.server_url}/?run=small&from=1&to=3.5&clock=since")
    dash_duo.wait_for_element(GRAPH, timeout=20)
    until(lambda: _layout(dash_duo, "xaxis.range") == [1, 3.5], timeout=20)
    assert dash_duo.find_element(f"#{ids.TIME_PRESET} input[value='custom']").is_selected()
    assert dash_duo.find_element(f"#{ids.CLOCK} input[value='since']").is_selected()
    until(
        lambda: dash_duo.find_element(f"#{ids.TIME_TO}").get_attribute("value") == "3.5",
        timeout=10,
    )
    assert "from=1&to=3.5" in dash_duo.driver.current_url
    # an invalid range in a URL is ignored: the whole run
    dash_duo.wait_for_page(url=f"{dash_duo.server_url}/?run=small&from=5&to=2&range=9y")
    dash_duo.wait_for_element(GRAPH, timeout=20)
    until(lambda: _layout(dash_duo, "xaxis.range") == [0, 5], timeout=20)
    assert dash_duo.get_logs() == []


def _text(dash_duo: Any, component: str) -> str:
    return str(dash_duo.find_element(f"#{component}").text)


def test_the_local_clock_and_the_tables_follow_the_chosen_clock(dash_duo, tmp_path: Path):
    db = _wall_db(tmp_path, versions=[(START + 2.0, {"a": "n2", "b": "n1", "c": "n1"})])
    # the browser's zone: Japan, UTC+9 all year
    dash_duo.driver.execute_cdp_cmd("Emulation.setTimezoneOverride", {"timezoneId": "Asia/Tokyo"})
    dash_duo.driver.set_window_size(1500, 1000)
    dash_duo.start_server(create_app(db, refresh_seconds=60))
    dash_duo.wait_for_element(GRAPH, timeout=20)
    changes, alerts = f"#{ids.OV_CHANGES_TABLE}", f"#{ids.OV_ALERTS}"
    # the wall clock in UTC by default, in the chart and in every table
    dash_duo.wait_for_contains_text(changes, "11:06:42", timeout=20)
    assert "time (UTC)" in _text(dash_duo, ids.OV_CHANGES_TABLE)
    assert "from (UTC)" in _text(dash_duo, ids.OV_DRIFT_TABLE)
    assert "flagged at (UTC)" in _text(dash_duo, ids.OV_DRIFT_TABLE)
    dash_duo.wait_for_contains_text(alerts, "from (UTC)", timeout=10)
    dash_duo.wait_for_contains_text(f"#{ids.OV_EXPLAIN_TEXT}", " UTC (subinterval", timeout=20)
    dash_duo.driver.save_screenshot("/tmp/i14u-overview-clock-utc.png")
    # the local clock names the browser's zone
    dash_duo.wait_for_contains_text(f"#{ids.CLOCK}", "local time (Asia/Tokyo)", timeout=10)
    dash_duo.find_element(f"#{ids.CLOCK} input[value='local']").click()
    until(lambda: _layout(dash_duo, "xaxis.title.text") == "wall clock (Asia/Tokyo)", 20)
    # the axis shows Tokyo's time of day (read as it is, not shifted by the browser's zone)
    first = dash_duo.driver.execute_script(
        f"return document.querySelector('{GRAPH}').calcdata[0][0].x;"
    )
    assert first == (START + 9 * 3600) * 1000
    dash_duo.wait_for_contains_text(changes, "20:06:42", timeout=10)
    assert "time (Asia/Tokyo)" in _text(dash_duo, ids.OV_CHANGES_TABLE)
    assert "to (Asia/Tokyo)" in _text(dash_duo, ids.OV_DRIFT_TABLE)
    dash_duo.wait_for_contains_text(alerts, "from (Asia/Tokyo)", timeout=10)
    dash_duo.wait_for_contains_text(
        f"#{ids.OV_VIOLATIONS}", "20:06:41–20:06:42 Asia/Tokyo", timeout=10
    )
    dash_duo.wait_for_contains_text(f"#{ids.OV_EXPLAIN_TEXT}", " Asia/Tokyo (subinterval", 10)
    until(lambda: "clock=local" in dash_duo.driver.current_url, timeout=10)
    until(
        lambda: (
            dash_duo.find_element(f"#{ids.TIME_FROM}").get_attribute("value")
            == "2026-11-18 20:06:40"
        ),
        timeout=10,
    )
    dash_duo.driver.save_screenshot("/tmp/i14u-overview-clock-local.png")
    dash_duo.driver.execute_script(
        "document.getElementById(arguments[0]).scrollIntoView({block: 'start'});",
        ids.OV_CHANGES_TABLE,
    )
    dash_duo.driver.save_screenshot("/tmp/i14u-overview-clock-local-tables.png")
    # a copied link opens the same clock
    dash_duo.wait_for_page(url=dash_duo.driver.current_url)
    dash_duo.wait_for_element(GRAPH, timeout=20)
    until(lambda: _layout(dash_duo, "xaxis.title.text") == "wall clock (Asia/Tokyo)", 20)
    assert dash_duo.find_element(f"#{ids.CLOCK} input[value='local']").is_selected()
    # since the start: seconds everywhere
    dash_duo.find_element(f"#{ids.CLOCK} input[value='since']").click()
    dash_duo.wait_for_contains_text(changes, "t (s)", timeout=20)
    assert "from t (s)" in _text(dash_duo, ids.OV_DRIFT_TABLE)
    dash_duo.wait_for_contains_text(f"#{ids.OV_EXPLAIN_TEXT}", "At t = ", timeout=10)
    dash_duo.wait_for_contains_text(alerts, "from t (s)", timeout=10)
    dash_duo.driver.save_screenshot("/tmp/i14u-overview-clock-since.png")
    assert dash_duo.get_logs() == []


def test_a_url_with_a_refresh_reproduces_it(dash_duo, small_db: Path) -> None:
    dash_duo.start_server(create_app(small_db, refresh_seconds=60))
    status = f"#{ids.OV_LIVE_STATUS}"
    dash_duo.wait_for_page(url=f"{dash_duo.server_url}/?run=small&refresh=10&paused=1")
    dash_duo.wait_for_element(GRAPH, timeout=20)
    dash_duo.wait_for_contains_text(status, "paused", timeout=10)
    dash_duo.wait_for_text_to_equal(f"#{ids.OV_PAUSE}", "Resume", timeout=10)
    assert "every 10 s" in _text(dash_duo, ids.OV_RATE)
    dash_duo.find_element(f"#{ids.OV_PAUSE}").click()
    dash_duo.wait_for_contains_text(status, "refreshes every 10 s", timeout=10)
    until(lambda: "paused" not in dash_duo.driver.current_url, timeout=10)
    assert "refresh=10" in dash_duo.driver.current_url
    dash_duo.select_dcc_dropdown(f"#{ids.OV_RATE}", value="off")
    dash_duo.wait_for_contains_text(status, "automatic refresh off", timeout=10)
    until(lambda: "refresh=off" in dash_duo.driver.current_url, timeout=10)
    dash_duo.select_dcc_dropdown(f"#{ids.OV_RATE}", value="every 30 s")
    until(lambda: "refresh=30" in dash_duo.driver.current_url, timeout=10)
    # values that are not offered: the default, running, and no error
    dash_duo.wait_for_page(url=f"{dash_duo.server_url}/?run=small&refresh=7&paused=maybe")
    dash_duo.wait_for_element(GRAPH, timeout=20)
    dash_duo.wait_for_contains_text(status, "refreshes every 60 s", timeout=10)
    assert _text(dash_duo, ids.OV_PAUSE) == "Pause"
    assert dash_duo.get_logs() == []
