"""What-if numbers a newcomer can trust, in headless Chromium: the headline names each
query an edit changes (not only the system's worst case, which another query may set),
Optimize says how many operators it proposes to move and keeps to a cap, every field of
the page has a label, and a change applied during the run shows its two predictions
(this page's and the Changes table's) with the reason they differ."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from dash.testing.wait import until

from dashboard.app import create_app
from dashboard.core.data import Database, RunCache
from dashboard.core.estimators import shown_estimator
from dashboard.core.report import change_checks
from estimator.auto import DEFAULT
from tests.dashboard import ids
from tests.dashboard.builders import write_small_run
from tests.dashboard.test_browser_whatif_flink import flink_db  # noqa: F401 (a fixture)

pytestmark = pytest.mark.browser

SUMMARY = f"#{ids.WI_MACE_WC}"
SHOTS = os.environ.get("MACE_SCREENSHOTS")  # a folder: keep the screenshots there


def _shot(dash_duo, name: str) -> None:
    if SHOTS:
        dash_duo.driver.set_window_size(1500, 1200)
        dash_duo.driver.save_screenshot(str(Path(SHOTS) / f"{name}.png"))


def _open(dash_duo, db: Path) -> None:
    dash_duo.start_server(create_app(db, refresh_seconds=60))
    dash_duo.wait_for_page(url=dash_duo.server_url + "/whatif")
    dash_duo.wait_for_contains_text(SUMMARY, "WC: scenario", timeout=20)


def _type(dash_duo, component: str, text: str) -> None:
    field = dash_duo.find_element(f"#{component}")
    field.clear()
    field.send_keys(text)


def test_the_headline_names_the_query_an_edit_changes(dash_duo, small_db: Path) -> None:
    """q1 (on n2) sets the worst case; q2 runs alone on n1. Four times n1's capacity
    leaves the system's worst case as it is and makes q2 faster: the headline says so."""
    _open(dash_duo, small_db)
    dash_duo.select_dcc_dropdown(f"#{ids.WI_CAP_NODE}", value="n1")
    _type(dash_duo, ids.WI_CAP_VALUE, "4")
    dash_duo.find_element(f"#{ids.WI_SET_CAP}").click()
    dash_duo.wait_for_contains_text(SUMMARY, "per query: q2", timeout=20)
    _shot(dash_duo, "whatif-headline")
    text = dash_duo.find_element(SUMMARY).text
    assert "no change to the worst case" in text
    assert re.search(r"per query: q2 0\.\d\d s → 0\.\d\d s \(-\d+%\)$", text), text
    assert "q1" not in text.split("per query:")[1]
    assert dash_duo.get_logs() == []


def test_optimize_says_how_many_moves_it_proposes_and_keeps_to_a_cap(
    dash_duo, small_db: Path
) -> None:
    _open(dash_duo, small_db)
    _type(dash_duo, ids.WI_OPT_BUDGET, "0.5")
    dash_duo.find_element(f"#{ids.WI_OPT_START}").click()
    status = f"#{ids.WI_OPT_STATUS}"
    dash_duo.wait_for_contains_text(status, "of 3 operators", timeout=30)
    assert re.search(r"proposes [1-3] moves? of 3 operators", dash_duo.find_element(status).text)
    until(lambda: dash_duo.find_element(f"#{ids.WI_OPT_START}").is_enabled(), timeout=20)
    _type(dash_duo, ids.WI_OPT_MAX_MOVES, "0")
    dash_duo.find_element(f"#{ids.WI_OPT_START}").click()
    dash_duo.wait_for_contains_text(
        status, "proposes 0 moves of 3 operators (at most 0)", timeout=30
    )
    # the capped result keeps the current placement: every query unchanged
    until(
        lambda: (
            {
                row.text.split()[-1]
                for row in dash_duo.find_elements(f"#{ids.WI_OPT_QUERIES} tbody tr")[1:]
            }
            == {"+0.0%"}
        ),
        timeout=10,
    )
    assert dash_duo.get_logs() == []


def test_a_bad_cap_is_one_line(dash_duo, small_db: Path) -> None:
    _open(dash_duo, small_db)
    _type(dash_duo, ids.WI_OPT_MAX_MOVES, "two")
    dash_duo.find_element(f"#{ids.WI_OPT_START}").click()
    dash_duo.wait_for_contains_text(
        f"#{ids.WI_MESSAGE}", "optimize: enter the most moves as a whole number", timeout=30
    )
    assert dash_duo.get_logs() == []


LABELLED = """
const page = document.getElementById('_pages_content') || document;
return Array.from(page.querySelectorAll('input, select, textarea, button.dash-dropdown'))
  .filter(e => e.type !== 'hidden' && e.type !== 'file' && e.offsetParent !== null)
  .filter(e => e.getAttribute('aria-hidden') !== 'true' && e.type !== 'button')
  .filter(e => !e.closest('.dash-spreadsheet'))
  .filter(e => !(e.getAttribute('aria-label') || e.closest('label')
                 || (e.id && document.querySelector('label[for="' + CSS.escape(e.id) + '"]'))))
  .map(e => e.outerHTML.slice(0, 160));
"""
"""The visible fields of the page without a label (none may be left). A table's own
filter row (a DataTable's, under its column headings) is the table's widget, not a
field of the form."""


def test_every_field_of_the_page_has_a_label(dash_duo, flink_db: Path) -> None:  # noqa: F811
    """On a Flink run, so that the Flink card's fields are shown too; every tab."""
    _open(dash_duo, flink_db)
    dash_duo.wait_for_element(f"#{ids.WI_FL_CARD} #{ids.WI_FL_TABLE} td", timeout=30)
    unlabelled = dash_duo.driver.execute_script(LABELLED)
    for tab in ("Admit a query", "Provision for an objective", "Compare plans"):
        dash_duo.find_element(f"//a[normalize-space()='{tab}']", "xpath").click()
        until(lambda tab=tab: dash_duo.find_element(".tab-pane.active").is_displayed(), timeout=10)
        unlabelled += dash_duo.driver.execute_script(LABELLED)
    assert unlabelled == [], "\n".join(unlabelled)
    assert dash_duo.get_logs() == []


def test_an_applied_change_shows_both_predictions_and_why_they_differ(
    dash_duo, tmp_path: Path
) -> None:
    """b moved from n2 to n1 at 2 s. The What-if figure (both placements on the same
    arrivals) and the Changes table's (before against after, with the model fitted
    before the change) differ; the page shows both, the Overview's number, and why."""
    db = tmp_path / "moved.duckdb"
    write_small_run(db, versions=[(2.0, {"a": "n2", "b": "n1", "c": "n1"})])
    run = RunCache(Database(db)).get("small")
    # the table verifies with the estimate the page shows: the default's choice
    (check,) = change_checks(run, shown_estimator(run, DEFAULT).name)
    _open(dash_duo, db)
    dash_duo.wait_for_element(f"#{ids.WI_CH_TABLE} td", timeout=20)
    cells = [td.text for td in dash_duo.find_elements(f"#{ids.WI_CH_TABLE} tbody td")]
    at, moved, here, table, measured, why = cells
    assert (at, moved) == ("0:02", "b: n2 → n1")
    assert table == f"{check.predicted_change:+.0%}" and measured == f"{check.measured_change:+.0%}"
    assert here != table
    assert why.startswith(
        "different arrivals: here both placements see the same arrivals of 0:00–0:05"
    )
    assert "different model: fitted on 0:00–0:05 here, on 0:00–0:02 (before the change only)" in why
    _shot(dash_duo, "whatif-changes")
    # the Overview's Changes table shows the same number
    dash_duo.find_element("a.nav-link[href='/'], a.nav-link[href^='/?']").click()
    dash_duo.wait_for_element(f"#{ids.OV_CHANGES_TABLE} td", timeout=20)
    shown = dash_duo.find_element(
        f"#{ids.OV_CHANGES_TABLE} td[data-dash-column='predicted_change']"
    ).text
    assert shown == table
    assert dash_duo.get_logs() == []
