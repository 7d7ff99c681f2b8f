"""What-if follows the top bar's time picker as the other pages do: its time chart shows
the picked range on the picked clock, and its worst cases are those of that range
(real browser)."""

from __future__ import annotations

import re
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
BURST = 120  # the first two minutes are overloaded: a backlog of about a minute
ARRIVALS = [15 if k < BURST else 5 for k in range(INTERVALS)]
CHART = f"#{ids.WI_MACE} .js-plotly-plot"
SUMMARY = f"#{ids.WI_MACE_WC}"
WALL = "wall clock (UTC)"
LAST = "2026-11-18 11:16:40"  # the end of the run


def _run(tmp_path: Path) -> Path:
    db = tmp_path / "burst.duckdb"
    write_series_run(
        db,
        "burst",
        {**ONE_NODE_TOPOLOGY, "origin": START},
        ARRIVALS,
        {"a": [0.1 * a for a in ARRIVALS]},
        {"q1": [0.3] * INTERVALS},
    )
    return db


def _axis(dash_duo: Any) -> Any:
    """The chart's x axis title and range (dates as "YYYY-MM-DD hh:mm:ss")."""
    return dash_duo.driver.execute_script(
        f"const x = document.querySelector('{CHART}').layout.xaxis;"
        "const r = (x.range || []).map(v => typeof v === 'string' ? "
        "v.replace('T', ' ').replace(/\\.0+$/, '') : v);"
        "return [x.title && x.title.text, r];"
    )


def _current_wc(text: str) -> float:
    found = re.search(r"current (\d+\.\d+) s", text)
    assert found, text
    return float(found.group(1))


def test_whatif_follows_the_shared_range_and_clock(dash_duo, tmp_path: Path) -> None:
    dash_duo.driver.set_window_size(1500, 1000)
    dash_duo.start_server(create_app(_run(tmp_path), refresh_seconds=60))
    # the whole run first: its worst case is the burst's backlog
    dash_duo.wait_for_page(url=f"{dash_duo.server_url}/whatif?run=burst")
    dash_duo.wait_for_contains_text(SUMMARY, "WC: scenario", timeout=20)
    whole = _current_wc(dash_duo.find_element(SUMMARY).text)
    assert whole > 20, whole
    until(lambda: _axis(dash_duo) == [WALL, ["2026-11-18 11:06:40", LAST]], timeout=20)
    assert "11:06:40–11:16:40 UTC" in dash_duo.find_element(f"#{ids.WI_BASELINE_LABEL}").text
    # the last five minutes: the chart and the worst cases of that range only
    dash_duo.find_element(f"#{ids.TIME_PRESET} input[value='5m']").click()
    dash_duo.wait_for_contains_text(SUMMARY, "worst cases over 11:11:40–11:16:40 UTC", timeout=20)
    assert _current_wc(dash_duo.find_element(SUMMARY).text) < 2
    until(lambda: _axis(dash_duo) == [WALL, ["2026-11-18 11:11:40", LAST]], timeout=20)
    # the clock: seconds since the start
    dash_duo.find_element(f"#{ids.CLOCK} input[value='since']").click()
    dash_duo.wait_for_contains_text(SUMMARY, "worst cases over t = 300–600 s", timeout=20)
    until(lambda: _axis(dash_duo) == ["time since run start (s)", [300, 600]], timeout=20)
    assert "range=5m" in dash_duo.driver.current_url
    assert "clock=since" in dash_duo.driver.current_url
    assert dash_duo.get_logs() == []
