"""The Help page in headless Chromium: every term and the CE diagram, no console
errors; the other pages carry the same definitions as hover titles."""

from __future__ import annotations

from pathlib import Path

import pytest

from dashboard.app import create_app
from dashboard.shell.glossary import GLOSSARY, term_id
from tests.dashboard import ids

pytestmark = pytest.mark.browser


def _start(dash_duo, db: Path, path: str) -> None:
    dash_duo.start_server(create_app(db, refresh_seconds=60))
    dash_duo.wait_for_page(url=dash_duo.server_url + path)


def test_help_defines_every_term_and_shows_the_diagram(dash_duo, small_db: Path):
    _start(dash_duo, small_db, "/help")
    dash_duo.wait_for_element(f"#{ids.HELP_DIAGRAM} .main-svg", timeout=20)
    for name in GLOSSARY:
        assert dash_duo.find_element(f"#{term_id(name)}").text == name
    text = dash_duo.find_element(f"#{ids.HELP_TERMS}").text
    for definition in GLOSSARY.values():
        assert definition in text
    legend = dash_duo.find_element(f"#{ids.HELP_DIAGRAM}").text
    assert "CE (backlog carried over)" in legend
    assert "capacity × w" in legend
    nav = [link.text for link in dash_duo.find_elements(".nav-link")]
    assert nav[-3:] == ["Reports", "Data health", "Help"]
    assert dash_duo.get_logs() == []


def test_terms_have_hover_titles_on_the_pages(dash_duo, small_db: Path):
    _start(dash_duo, small_db, "/nodes")
    dash_duo.wait_for_element(f"#{ids.ND_HEATMAP} .main-svg", timeout=20)
    titles = {e.text: e.get_attribute("title") for e in dash_duo.find_elements("abbr")}
    assert titles["CE/C"] == GLOSSARY["CE/C"]
    assert titles["DLTS"] == GLOSSARY["DLTS"]
    dash_duo.wait_for_page(url=dash_duo.server_url + "/whatif")
    dash_duo.wait_for_element(f"#{ids.WI_MACE} .main-svg", timeout=20)
    titles = {e.text: e.get_attribute("title") for e in dash_duo.find_elements("abbr")}
    assert titles["subinterval factor"] == GLOSSARY["subinterval factor"]
    dash_duo.wait_for_page(url=dash_duo.server_url + "/reports")
    dash_duo.wait_for_element(f"#{ids.RP_TABLE} td", timeout=20)
    titles = {e.text: e.get_attribute("title") for e in dash_duo.find_elements("abbr")}
    for name in ("estimated", "predicted", "measured", "Mace", "DLTS", "w", "eps"):
        assert titles[name] == GLOSSARY[name]
    dash_duo.wait_for_page(url=dash_duo.server_url + "/")
    dash_duo.wait_for_element(f"#{ids.OV_LATENCY} .main-svg", timeout=20)
    labels = dash_duo.find_elements(".kpi-label")
    assert all(label.get_attribute("title") for label in labels)
    assert GLOSSARY["MaceWC"] in labels[0].get_attribute("title")
    assert dash_duo.get_logs() == []
