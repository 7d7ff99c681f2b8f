"""The loading state in headless Chromium: a slow update dims its graph and labels it
"updating…" (assets/loading.css, one rule for every page), and the label goes when the
answer arrives."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from dash.testing.wait import until

from dashboard.app import create_app
from dashboard.nodes import views as nodes_views
from tests.dashboard import ids

pytestmark = pytest.mark.browser

SLOW_SECONDS = 3.0
HEATMAP = f"#{ids.ND_HEATMAP}"


def _indicator(dash_duo) -> dict[str, Any]:
    """The heatmap's loading mark, its opacity and the content of its label."""
    return dash_duo.driver.execute_script(
        "const el = document.querySelector(arguments[0]);"
        "return {loading: el.getAttribute('data-dash-is-loading'),"
        " opacity: getComputedStyle(el).opacity,"
        " label: getComputedStyle(el, '::after').content,"
        " labelOpacity: getComputedStyle(el, '::after').opacity};",
        HEATMAP,
    )


def test_slow_node_switch_shows_updating_until_the_answer(
    dash_duo, tandem_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dash_duo.start_server(create_app(tandem_db, refresh_seconds=3600))
    dash_duo.wait_for_page(url=dash_duo.server_url + "/nodes")
    dash_duo.wait_for_element(f"{HEATMAP} .main-svg", timeout=30)
    until(lambda: _indicator(dash_duo)["loading"] is None, timeout=20)
    assert _indicator(dash_duo)["label"] == "none"  # nothing shown while nothing loads

    real = nodes_views.node_view

    def slow_node_view(*args: Any, **kwargs: Any) -> Any:
        time.sleep(SLOW_SECONDS)  # the page's own callback, made slow on the server
        return real(*args, **kwargs)

    monkeypatch.setattr(nodes_views, "node_view", slow_node_view)
    dash_duo.driver.execute_script(
        "window.dash_clientside.set_props(arguments[0], {value: 'n2'});", ids.ND_NODE
    )
    until(lambda: _indicator(dash_duo)["loading"] == "true", timeout=5)
    time.sleep(1.0)  # past the 0.4 s delay that keeps fast updates from flickering
    shown = _indicator(dash_duo)
    assert shown["loading"] == "true"  # still computing: the answer takes 3 s
    assert shown["label"] == '"updating…"'
    assert float(shown["labelOpacity"]) == 1.0
    assert float(shown["opacity"]) < 0.6
    dash_duo.driver.set_window_size(1500, 1000)
    dash_duo.driver.save_screenshot("/tmp/loading-nodes.png")

    until(lambda: _indicator(dash_duo)["loading"] is None, timeout=SLOW_SECONDS + 20)
    done = _indicator(dash_duo)
    assert done["label"] == "none" and float(done["opacity"]) == 1.0
    assert dash_duo.get_logs() == []
