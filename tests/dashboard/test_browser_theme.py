"""Dark mode in headless Chromium: the page and its Plotly figures follow the browser's
colour-scheme preference (emulated through the DevTools protocol), at load and when it
changes, without new figures from the server and within the Content-Security-Policy."""

from __future__ import annotations

from pathlib import Path

import pytest
from dash.testing.wait import until

from dashboard.app import create_app
from dashboard.shell import theme
from tests.dashboard import ids

pytestmark = pytest.mark.browser

DARK_PAGE = "rgb(22, 25, 29)"  # --mace-bg in theme.css
DARK_PAPER = "#16191d"  # theme.js's figure background
GRAPH = f"#{ids.OV_LATENCY}"


def _prefer(dash_duo, scheme: str) -> None:
    dash_duo.driver.execute_cdp_cmd(
        "Emulation.setEmulatedMedia",
        {"features": [{"name": "prefers-color-scheme", "value": scheme}]},
    )


def _page_background(dash_duo) -> str:
    return dash_duo.driver.execute_script("return getComputedStyle(document.body).backgroundColor;")


def _figure_colours(dash_duo) -> dict[str, str]:
    """The colours Plotly drew with (its full layout), not the ones the server sent."""
    return dash_duo.driver.execute_script(
        "const gd = document.querySelector(arguments[0] + ' .js-plotly-plot');"
        "const full = gd._fullLayout;"
        "return {paper: full.paper_bgcolor, plot: full.plot_bgcolor, font: full.font.color,"
        " grid: full.xaxis.gridcolor};",
        GRAPH,
    )


def _open_overview(dash_duo, db: Path) -> None:
    dash_duo.wait_for_page(url=dash_duo.server_url + "/")
    dash_duo.wait_for_element(f"{GRAPH} .main-svg", timeout=30)
    dash_duo.wait_for_contains_text(f"#{ids.OV_KPI_WC}", "measured", timeout=30)


def test_dark_preference_darkens_page_and_figures(dash_duo, small_db: Path) -> None:
    dash_duo.start_server(create_app(small_db, refresh_seconds=60))
    dash_duo.driver.set_window_size(1500, 1000)
    _prefer(dash_duo, "light")
    _open_overview(dash_duo, small_db)
    assert _page_background(dash_duo) == "rgb(255, 255, 255)"
    light = _figure_colours(dash_duo)
    assert light["paper"] in ("white", "#fff", "#ffffff")
    dash_duo.driver.save_screenshot("/tmp/theme-light.png")

    _prefer(dash_duo, "dark")
    _open_overview(dash_duo, small_db)  # a fresh load with the dark preference
    assert _page_background(dash_duo) == DARK_PAGE
    until(lambda: _figure_colours(dash_duo)["paper"] == DARK_PAPER, timeout=10)
    dark = _figure_colours(dash_duo)
    assert dark["font"] == "#dde3ea" and dark["grid"] != light["grid"]
    dash_duo.driver.save_screenshot("/tmp/theme-dark.png")

    # the preference changes while the page is open: recoloured in place, and back
    _prefer(dash_duo, "light")
    until(lambda: _page_background(dash_duo) == "rgb(255, 255, 255)", timeout=10)
    until(lambda: _figure_colours(dash_duo) == light, timeout=10)
    _prefer(dash_duo, "dark")
    until(lambda: _figure_colours(dash_duo)["paper"] == DARK_PAPER, timeout=10)
    assert dash_duo.get_logs() == []  # no CSP violation, no script error


def _heat_scale(dash_duo) -> list[str]:
    """The colours of the Nodes heatmap's scale as Plotly drew it."""
    return dash_duo.driver.execute_script(
        "const gd = document.querySelector(arguments[0] + ' .js-plotly-plot');"
        "return gd._fullLayout.coloraxis.colorscale.map(stop => stop[1]);",
        f"#{ids.ND_HEATMAP}",
    )


def test_the_nodes_heatmap_is_dark_on_a_dark_page(dash_duo, five_node_db: Path) -> None:
    """No backlog is the plot's own dark colour, not a pale yellow that outshines the page;
    back to the light scale when the preference changes."""
    dash_duo.start_server(create_app(five_node_db, refresh_seconds=60))
    dash_duo.driver.set_window_size(1500, 1000)
    _prefer(dash_duo, "dark")
    dash_duo.wait_for_page(url=dash_duo.server_url + "/nodes")
    dash_duo.wait_for_element(f"#{ids.ND_HEATMAP} .main-svg", timeout=30)
    dash_duo.wait_for_contains_text(f"#{ids.ND_DLTS}", "on n1", timeout=30)
    until(lambda: _heat_scale(dash_duo)[0] == theme.DARK_PLOT, timeout=10)
    assert _heat_scale(dash_duo) == [colour for _, colour in theme.DARK_HEAT]
    dash_duo.driver.save_screenshot("/tmp/i14u-nodes-dark.png")
    _prefer(dash_duo, "light")
    until(lambda: _heat_scale(dash_duo) == [c for _, c in theme.YL_OR_RD], timeout=10)
    _prefer(dash_duo, "dark")
    until(lambda: _heat_scale(dash_duo)[0] == theme.DARK_PLOT, timeout=10)
    assert dash_duo.get_logs() == []
