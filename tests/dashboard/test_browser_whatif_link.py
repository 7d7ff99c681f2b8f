"""The What-if baseline window and the scenario's link in headless Chromium:
the baseline stays pinned while new data arrives and moves when re-pinned;
a copied URL reproduces the scenario in a fresh session; a bad link is named and left out."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
from dash.testing.wait import until

from dashboard.app import create_app
from dashboard.core import data
from dashboard.core.data import Database, RunCache
from dashboard.whatif import link as whatif_link
from dashboard.whatif import scenario as whatif_scenario
from estimator.whatif import WhatIfEngine
from tests.dashboard import ids
from tests.dashboard.builders import append_small_intervals

pytestmark = pytest.mark.browser

SUMMARY = f"#{ids.WI_MACE_WC}"
LABEL = f"#{ids.WI_BASELINE_LABEL}"
MOVE_B = ("move", {"operator": "b", "node": "n1"})


def _open(dash_duo, db: Path, refresh: float = 60, query: str = "") -> None:
    dash_duo.start_server(create_app(db, refresh_seconds=refresh, estimator="mace"))
    dash_duo.wait_for_page(url=f"{dash_duo.server_url}/whatif{query}")
    dash_duo.wait_for_contains_text(SUMMARY, "MaceWC: scenario", timeout=20)


def _move(dash_duo, operator: str, node: str) -> None:
    dash_duo.select_dcc_dropdown(f"#{ids.WI_OPERATOR}", value=operator)
    dash_duo.select_dcc_dropdown(f"#{ids.WI_TARGET}", value=node)
    dash_duo.find_element(f"#{ids.WI_MOVE}").click()


def _expected(db: Path, window: tuple[int, int] | None, *actions: tuple[str, dict]) -> str:
    engine = WhatIfEngine()
    inputs = data.inputs_for_run(engine, RunCache(Database(db)).get("small"), window)
    edits: list[dict] = []
    for action, values in actions:
        edits = whatif_scenario.add_edit(inputs, edits, action, values).edits
    return whatif_scenario.render(engine, inputs, whatif_scenario.fold_edits(inputs, edits)).summary


def _linked(url: str) -> list | None:
    """The edits the URL's scenario holds (None: it has none)."""
    values = parse_qs(urlparse(url).query).get("scenario")
    return whatif_link.decode_link(values[0]).pairs if values else None


def _edits(dash_duo) -> list[str]:
    items = dash_duo.find_elements(f"#{ids.WI_EDITS} li")
    return [li.text.removesuffix("undo").strip() for li in items]


def test_baseline_stays_pinned_while_data_arrives_and_moves_when_re_pinned(
    dash_duo, small_db: Path
) -> None:
    _open(dash_duo, small_db, refresh=1)
    dash_duo.wait_for_text_to_equal(LABEL, "baseline: 0:00–0:05 (pinned)", timeout=20)
    append_small_intervals(small_db, [40, 40, 40])  # an ingestion pass: a heavier load
    dash_duo.wait_for_text_to_equal(
        LABEL, "baseline: 0:00–0:05 (pinned); the run's data now reaches 0:08", timeout=20
    )
    _move(dash_duo, *MOVE_B[1].values())
    # the edit is judged against the pinned window, not the grown run
    pinned = _expected(small_db, (0, 5), MOVE_B)
    assert pinned.startswith("MaceWC: scenario 4.6000 s, current 0.8469 s")  # test_views
    dash_duo.wait_for_text_to_equal(SUMMARY, pinned, timeout=20)

    dash_duo.find_element(f"#{ids.WI_REPIN}").click()
    dash_duo.wait_for_text_to_equal(LABEL, "baseline: 0:00–0:08 (pinned)", timeout=20)
    latest = _expected(small_db, None, MOVE_B)
    assert latest != pinned
    dash_duo.wait_for_text_to_equal(SUMMARY, latest, timeout=20)
    assert _edits(dash_duo) == ["moved b to n1"]
    assert dash_duo.get_logs() == []


def test_a_copied_url_reproduces_the_scenario_in_a_fresh_session(dash_duo, small_db) -> None:
    _open(dash_duo, small_db)
    before = dash_duo.find_element(SUMMARY).text
    _move(dash_duo, "b", "n1")
    until(lambda: dash_duo.find_element(SUMMARY).text != before, timeout=20)
    moved = dash_duo.find_element(SUMMARY).text
    until(lambda: _linked(dash_duo.driver.current_url) == [MOVE_B], timeout=10)
    link = dash_duo.driver.current_url

    # another browser session: nothing in session storage, only the link
    dash_duo.driver.execute_script("window.sessionStorage.clear();")
    dash_duo.wait_for_page(url=f"{dash_duo.server_url}/whatif")
    dash_duo.wait_for_contains_text(SUMMARY, "no change to the worst case", timeout=20)
    dash_duo.driver.execute_script("window.sessionStorage.clear();")
    dash_duo.wait_for_page(url=link)
    dash_duo.wait_for_text_to_equal(SUMMARY, moved, timeout=20)
    until(lambda: _edits(dash_duo) == ["moved b to n1"], timeout=10)
    dash_duo.wait_for_text_to_equal(LABEL, "baseline: 0:00–0:05 (pinned)", timeout=20)
    assert dash_duo.get_logs() == []


def test_a_bad_link_is_named_and_left_out(dash_duo, small_db: Path) -> None:
    _open(dash_duo, small_db, query="?scenario=garbage")
    dash_duo.wait_for_contains_text(
        f"#{ids.WI_MESSAGE}", "the link's scenario cannot be read: it was left out", timeout=20
    )
    assert "no change to the worst case" in dash_duo.find_element(SUMMARY).text

    wrong = whatif_link.encode_link(
        "small",
        (0, 99),  # past the run's data
        [
            {"action": "move", "values": {"operator": "zz", "node": "n1"}},
            {"action": MOVE_B[0], "values": MOVE_B[1]},
        ],
    )
    dash_duo.driver.execute_script("window.sessionStorage.clear();")
    dash_duo.wait_for_page(url=f"{dash_duo.server_url}/whatif?scenario={wrong}")
    dash_duo.wait_for_contains_text(
        f"#{ids.WI_MESSAGE}",
        "the link's baseline window ends after the run's data: it was left out; "
        "the link's edit 1 (move) was left out: move: unknown operator 'zz'",
        timeout=20,
    )
    until(lambda: _edits(dash_duo) == ["moved b to n1"], timeout=20)
    dash_duo.wait_for_text_to_equal(SUMMARY, _expected(small_db, None, MOVE_B), timeout=20)
    dash_duo.wait_for_text_to_equal(LABEL, "baseline: 0:00–0:05 (pinned)", timeout=20)
    assert dash_duo.get_logs() == []
