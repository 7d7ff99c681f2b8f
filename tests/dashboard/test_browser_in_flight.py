"""The newest subintervals of a live run, whose events are not all out yet, in headless
Chromium: greyed "in flight" on the Overview (the latency and the prediction error),
Nodes and Reports charts and kept out of the headline figures and the cards."""

from __future__ import annotations

from pathlib import Path

import pytest
from dash.testing.wait import until
from selenium.common.exceptions import StaleElementReferenceException

from dashboard.app import create_app
from storage.db import connect
from tests.dashboard import ids

pytestmark = pytest.mark.browser


@pytest.fixture
def in_flight_db(small_db: Path) -> Path:
    """The small run with one of a's outputs of subinterval 1 not executed by b yet:
    subintervals 1..4 are incomplete, only 0 is complete."""
    con = connect(small_db)
    con.execute(
        "UPDATE operator_stats SET events_in = events_in - 1 WHERE operator = 'b' AND interval = 1"
    )
    con.close()
    return small_db


def _greyed(dash_duo, graph: str) -> None:
    """Wait until ``graph`` carries the "in flight" label (a graph may redraw meanwhile)."""

    def labelled() -> bool:
        try:
            notes = dash_duo.find_elements(f"#{graph} .annotation-text")
            return "in flight" in [e.text for e in notes]
        except StaleElementReferenceException:
            return False

    until(labelled, timeout=20)


def test_in_flight_subintervals_are_greyed_and_left_out_of_the_cards(
    dash_duo, in_flight_db: Path
) -> None:
    dash_duo.start_server(create_app(in_flight_db, refresh_seconds=60))
    # measured max 1.2 s in subinterval 1 (in flight) is not the headline: 0.3 s is
    dash_duo.wait_for_contains_text(f"#{ids.OV_KPI_WC}", "measured 0.300 s", timeout=20)
    bottleneck = dash_duo.find_element(f"#{ids.OV_KPI_BOTTLENECK}").text
    assert bottleneck == "none (no backlog at t = 0 s) · last 4 s still in flight"
    _greyed(dash_duo, ids.OV_LATENCY)
    _greyed(dash_duo, ids.OV_ERROR_GRAPH)  # its error reads the measured latency too

    dash_duo.wait_for_page(url=dash_duo.server_url + "/nodes")
    for graph in (ids.ND_HEATMAP, ids.ND_BOTTLENECK, ids.ND_DLTS):
        _greyed(dash_duo, graph)

    dash_duo.wait_for_page(url=dash_duo.server_url + "/reports")
    _greyed(dash_duo, ids.RP_FIGURE)
    # the report's q1 row covers subinterval 0 only: measured WC, p99 and mean 0.3 s
    dash_duo.wait_for_element(f"#{ids.RP_TABLE} td", timeout=20)
    cells = [e.text for e in dash_duo.find_elements(f"#{ids.RP_TABLE} td")]
    assert cells[:13] == [
        "q1",
        "0",
        "0",
        "0.3",
        "0",
        "0",
        "0.3",
        "0",
        "0",
        "0.3",
        "1",
        "100.0%",
        "",
    ]
    assert dash_duo.get_logs() == []
