"""Latency blame on the Overview (issue 15), in headless Chromium: a click on the latency
chart explains that subinterval, the button the worst one."""

from __future__ import annotations

from pathlib import Path

import pytest
from selenium.webdriver.common.action_chains import ActionChains

from dashboard import ids
from dashboard.app import create_app

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
    dash_duo.start_server(create_app(shifting_db, refresh_seconds=60))
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


def test_path_aware_explanation_says_what_it_covers(dash_duo, tandem_db: Path):
    dash_duo.start_server(create_app(tandem_db, refresh_seconds=60))
    dash_duo.wait_for_contains_text(f"#{ids.OV_EXPLAIN_TEXT}", "n1 is the bottleneck", timeout=20)
    dash_duo.select_dcc_dropdown(f"#{ids.ESTIMATOR}", value="estimator: path-aware")
    # builders.TANDEM_TOPOLOGY: path-aware 3.25 s, of which n1's own backlog is 2.65 s
    dash_duo.wait_for_contains_text(
        f"#{ids.OV_EXPLAIN_NOTE}", "path-aware estimate at this subinterval is 3.250 s", timeout=20
    )
    assert "(Mace, 2.650 s)" in dash_duo.find_element(f"#{ids.OV_EXPLAIN_NOTE}").text
    assert dash_duo.get_logs() == []
