"""Latency blame on the Overview, in headless Chromium: a click on the latency
chart explains that subinterval, the button the worst one."""

from __future__ import annotations

from pathlib import Path

import pytest
from selenium.webdriver.common.action_chains import ActionChains

from dashboard.app import create_app
from tests.dashboard import ids

pytestmark = pytest.mark.browser


def click_time(dash_duo, graph: str, time: float) -> None:
    """Click the plot area of ``graph`` at ``time`` on its x axis (mid-height)."""
    drag = dash_duo.find_element(f"#{graph} .nsewdrag")
    dash_duo.driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", drag)
    offset = dash_duo.driver.execute_script(
        f"const xa = document.querySelector('#{graph} .js-plotly-plot')._fullLayout.xaxis;"
        "return xa.l2p(arguments[0]) - xa._length / 2;",
        time,
    )
    ActionChains(dash_duo.driver).move_to_element(drag).move_by_offset(int(offset), 0).pause(
        0.3
    ).click().perform()


def test_click_explains_the_clicked_subinterval(dash_duo, shifting_db: Path):
    dash_duo.start_server(create_app(shifting_db, refresh_seconds=60, estimator="mace"))
    text = f"#{ids.OV_EXPLAIN_TEXT}"
    # hand-computed in builders.SHIFTING_CPU: the worst subinterval is 1, on n1, all c's
    dash_duo.wait_for_contains_text(
        text, "At t = 1 s (subinterval 1), n1 is the bottleneck: 1.200 s behind", timeout=20
    )
    assert "since t = 0 s (subinterval 0)" in dash_duo.find_element(text).text
    dash_duo.wait_for_element(f"#{ids.OV_LATENCY} .nsewdrag", timeout=20)
    click_time(dash_duo, ids.OV_LATENCY, 4.0)
    # at t = 4 s n2 is behind by 0.5 s, split between a (1/3) and b (2/3)
    dash_duo.wait_for_contains_text(
        text, "At t = 4 s (subinterval 4), n2 is the bottleneck: 0.500 s behind", timeout=20
    )
    bars = f"#{ids.OV_BLAME_BARS} .bars .point text"
    labels = sorted(e.text for e in dash_duo.find_elements(bars))
    assert labels == ["0.167 s (33%)", "0.333 s (67%)"]
    assert "Share of the backlog on n2" in dash_duo.find_element(f"#{ids.OV_BLAME_BARS}").text
    dash_duo.wait_for_contains_text(f"#{ids.OV_BLAME_SOURCES}", "100.0%", timeout=10)
    # clicking the worst point explains n1 again
    click_time(dash_duo, ids.OV_LATENCY, 1.0)
    dash_duo.wait_for_contains_text(text, "n1 is the bottleneck: 1.200 s", timeout=20)
    click_time(dash_duo, ids.OV_LATENCY, 4.0)
    dash_duo.wait_for_contains_text(text, "n2 is the bottleneck", timeout=20)
    dash_duo.find_element(f"#{ids.OV_EXPLAIN_WORST}").click()
    dash_duo.wait_for_contains_text(text, "n1 is the bottleneck: 1.200 s", timeout=20)
    assert dash_duo.get_logs() == []


def test_path_aware_explanation_shows_the_critical_path(dash_duo, tandem_db: Path):
    dash_duo.start_server(create_app(tandem_db, refresh_seconds=60, estimator="mace"))
    text = f"#{ids.OV_EXPLAIN_TEXT}"
    dash_duo.wait_for_contains_text(text, "n1 is the bottleneck", timeout=20)
    dash_duo.select_dcc_dropdown(f"#{ids.ESTIMATOR}", value="estimator: path-aware")
    # builders.TANDEM_TOPOLOGY: path-aware 3.25 s at its worst subinterval 1
    dash_duo.wait_for_contains_text(
        text, "the path-aware estimate is 3.250 s along the critical path n1 \u2192 n2", timeout=20
    )
    dash_duo.wait_for_element(f"#{ids.OV_LATENCY} .nsewdrag", timeout=20)
    click_time(dash_duo, ids.OV_LATENCY, 3.0)
    # at t = 3 s: n1 +1.25 s on [0, 0], n2 +1.0 s on [1, 3] (b's)
    dash_duo.wait_for_contains_text(
        text,
        "At t = 3 s (subinterval 3), the path-aware estimate is 2.250 s along the critical "
        "path n1 \u2192 n2: n1 +1.250 s (busy from t = 0 s); n2 +1.000 s (busy from t = 1 s)",
        timeout=20,
    )
    dash_duo.wait_for_contains_text(f"#{ids.OV_BLAME_BARS}", "b 1.000 s", timeout=10)
    ticks = sorted(
        dash_duo.find_elements(f"#{ids.OV_BLAME_BARS} .ytick text"), key=lambda e: e.location["y"]
    )
    # one bar per node, in path order from the top (the tick's two lines join in .text)
    assert [t.text.replace("\n", "") for t in ticks] == ["n1t 0\u20131 s", "n2t 1\u20134 s"]
    bars = dash_duo.find_element(f"#{ids.OV_BLAME_BARS}").text
    assert "a 0.972 s" in bars and "Critical path: 2.250 s" in bars
    graph = dash_duo.driver.execute_script(
        f"return document.getElementById('{ids.OV_BLAME_GRAPH}')._cyreg.cy.nodes()"
        ".map(n => n.data('label_blame'));"
    )
    assert "b\n1.000 s · 44%" in graph
    assert dash_duo.find_elements(f"#{ids.OV_EXPLAIN_NOTE}") == []  # no caveat: all covered
    dash_duo.driver.set_window_size(1500, 1000)
    dash_duo.driver.execute_script(
        f"document.getElementById('{ids.OV_EXPLAIN_TEXT}').scrollIntoView();"
    )
    dash_duo.driver.save_screenshot("/tmp/i15-path-blame.png")
    assert dash_duo.get_logs() == []
