"""The operator graph in headless Chromium on a reference run, the
simulator's clickstream-5q on 5 nodes (70 operators, 5 sources): operators grouped
inside their machine, labels readable (11 px or more) when fitted on load, zoom bounded,
a legend and colour modes, no console warning (the wheel-sensitivity one included),
fitted again when a hidden tab shows it; and a click on a row of the Nodes heatmap
chooses that node."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dash.testing.wait import until
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.actions.action_builder import ActionBuilder

from dashboard.app import create_app
from dashboard.shell.graph import elements, style
from tests.dashboard import ids

pytestmark = pytest.mark.browser

CONSOLE_HOOK = """
window.__consoleMessages = [];
for (const level of ["warn", "error"]) {
  const original = console[level];
  console[level] = function (...args) {
    window.__consoleMessages.push(level + ": " + args.join(" "));
    original.apply(console, args);
  };
}
"""
"""Installed before any script of the page: what the page logs as a warning or error
(dash_duo's get_logs only sees severe browser messages)."""

GRAPH_STATE = """
const box = document.getElementById(arguments[0]);
const cy = box && box._cyreg && box._cyreg.cy;
if (!cy || cy.nodes('.operator').length === 0) { return null; }
const ops = cy.nodes('.operator');
const shown = cy.elements(':visible').not('.frame').renderedBoundingBox();
return {
  zoom: cy.zoom(), minZoom: cy.minZoom(), maxZoom: cy.maxZoom(),
  width: cy.width(), height: cy.height(),
  font: parseFloat(ops[0].style('font-size')) * cy.zoom(),
  machines: cy.nodes('.machine').map(n => n.id()),
  parents: Object.fromEntries(ops.map(n => [n.id(), n.parent().id()])),
  colors: Object.fromEntries(ops.map(n => [n.id(), n.style('background-color')])),
  inside: shown.x1 >= -1 && shown.y1 >= -1 && shown.x2 <= cy.width() + 1
          && shown.y2 <= cy.height() + 1,
};
"""


ZOOM_OUT = "document.getElementById(arguments[0])._cyreg.cy.zoom(0.2);"


def tab(dash_duo, label: str) -> None:
    (link,) = [e for e in dash_duo.find_elements(".nav-link") if e.text == label]
    link.click()


def watch_console(dash_duo) -> None:
    dash_duo.driver.execute_cdp_cmd(
        "Page.addScriptToEvaluateOnNewDocument", {"source": CONSOLE_HOOK}
    )


def console_messages(dash_duo) -> list[str]:
    return dash_duo.driver.execute_script("return window.__consoleMessages || []")


def graph_state(dash_duo, graph: str, timeout: float = 30) -> dict[str, Any]:
    state: dict[str, Any] = {}

    def drawn() -> bool:
        state.update(dash_duo.driver.execute_script(GRAPH_STATE, graph) or {})
        return bool(state)

    until(drawn, timeout=timeout)
    return state


def wheel(dash_duo, graph: str, delta: float, notches: int) -> None:
    """Mouse-wheel notches over the middle of the graph."""
    dash_duo.driver.execute_script(
        """const box = document.getElementById(arguments[0]);
        const r = box.getBoundingClientRect();
        const target = box.querySelector('canvas:last-of-type') || box;
        for (let k = 0; k < arguments[2]; k++) {
          target.dispatchEvent(new WheelEvent('wheel', {deltaY: arguments[1], deltaMode: 0,
            clientX: r.left + r.width / 2, clientY: r.top + r.height / 2, bubbles: true}));
        }""",
        graph,
        delta,
        notches,
    )


def rgb(color: str) -> str:
    r, g, b = (int(color[k : k + 2], 16) for k in (1, 3, 5))
    return f"rgb({r},{g},{b})"


def test_overview_graph_is_readable_grouped_and_bounded(dash_duo, five_node_db: Path):
    watch_console(dash_duo)
    dash_duo.driver.set_window_size(1500, 1000)
    dash_duo.start_server(create_app(five_node_db, refresh_seconds=60))
    graph = ids.OV_BLAME_GRAPH
    dash_duo.wait_for_element(f"#{graph}", timeout=20)
    dash_duo.driver.execute_script(
        "document.getElementById(arguments[0]).scrollIntoView({block: 'center'})", graph
    )
    state = graph_state(dash_duo, graph)
    # operators grouped in their machine, five labelled boxes
    assert sorted(state["machines"]) == [f"machine:n{k}" for k in range(1, 6)]
    assert len(state["parents"]) == 70
    assert all(parent == f"machine:n{op[1]}" for op, parent in state["parents"].items())
    # fitted on load: the whole graph in view, the labels 11 px or more
    assert state["inside"]
    assert state["font"] >= 11, state
    assert (state["minZoom"], state["maxZoom"]) == (style.MIN_ZOOM, style.MAX_ZOOM)

    # a fast wheel never zooms past the limit; Fit brings the whole graph back
    # (wheeled again until it zooms: a graph still being drawn is fitted once more)
    def zoomed_in() -> bool:
        wheel(dash_duo, graph, -600, 6)
        return graph_state(dash_duo, graph)["zoom"] > state["zoom"] * 1.5

    until(zoomed_in, timeout=15)
    assert graph_state(dash_duo, graph)["zoom"] <= style.MAX_ZOOM
    dash_duo.find_element(f"#{ids.OV_GRAPH_FIT}").click()
    until(lambda: graph_state(dash_duo, graph)["inside"], timeout=10)
    assert graph_state(dash_duo, graph)["zoom"] == pytest.approx(state["zoom"], rel=0.02)
    # colour by share of the backlog by default, with its legend; then by node
    legend = f"#{ids.OV_GRAPH_LEGEND}"
    dash_duo.wait_for_contains_text(legend, "the whole backlog", timeout=10)
    dash_duo.find_element(f"#{ids.OV_GRAPH_MODE} input[value='{style.NODE}']").click()
    dash_duo.wait_for_contains_text(legend, "n5", timeout=10)
    colors = elements.node_colors([f"n{k}" for k in range(1, 6)])
    until(lambda: graph_state(dash_duo, graph)["colors"]["q3_join"] == rgb(colors["n3"]), 10)
    dash_duo.find_element(f"#{ids.OV_GRAPH_MODE} input[value='{style.UTILISATION}']").click()
    dash_duo.wait_for_contains_text(legend, "150% and more", timeout=10)
    assert console_messages(dash_duo) == []
    assert dash_duo.get_logs() == []


def test_whatif_graph_shows_a_moved_operator_in_its_new_machine(dash_duo, five_node_db: Path):
    watch_console(dash_duo)
    dash_duo.driver.set_window_size(1500, 1000)
    dash_duo.start_server(create_app(five_node_db, refresh_seconds=60))
    dash_duo.wait_for_page(url=dash_duo.server_url + "/whatif")
    dash_duo.wait_for_contains_text(f"#{ids.WI_MACE_WC}", "WC: scenario", timeout=30)
    graph = ids.WI_GRAPH
    state = graph_state(dash_duo, graph)
    assert state["font"] >= 11 and state["inside"], state
    assert state["parents"]["q1_join"] == "machine:n1"
    dash_duo.select_dcc_dropdown(f"#{ids.WI_OPERATOR}", value="q1_join")
    dash_duo.select_dcc_dropdown(f"#{ids.WI_TARGET}", value="n4")
    dash_duo.find_element(f"#{ids.WI_MOVE}").click()
    until(lambda: graph_state(dash_duo, graph)["parents"]["q1_join"] == "machine:n4", 30)
    dash_duo.find_element(f"#{ids.WI_GRAPH_MODE} input[value='{style.CHANGE}']").click()
    dash_duo.wait_for_contains_text(f"#{ids.WI_GRAPH_LEGEND}", "moved by the scenario", 10)
    until(lambda: graph_state(dash_duo, graph)["colors"]["q1_join"] == rgb(style.MOVED), 10)
    after = graph_state(dash_duo, graph)
    assert after["colors"]["q1_output"] == rgb(style.NEUTRAL)
    assert after["font"] >= 11 and after["inside"], after
    # a graph changed while its tab is hidden is fitted again when the tab comes back
    tab(dash_duo, "Admit a query")
    until(lambda: graph_state(dash_duo, graph)["width"] == 0, timeout=10)
    dash_duo.driver.execute_script(ZOOM_OUT, graph)
    tab(dash_duo, "Scenario editor")
    until(lambda: graph_state(dash_duo, graph)["inside"], timeout=10)
    assert graph_state(dash_duo, graph)["zoom"] == pytest.approx(after["zoom"], rel=0.02)
    assert console_messages(dash_duo) == []
    assert dash_duo.get_logs() == []


def test_click_on_a_heatmap_row_chooses_that_node(dash_duo, five_node_db: Path):
    dash_duo.start_server(create_app(five_node_db, refresh_seconds=60))
    dash_duo.wait_for_page(url=dash_duo.server_url + "/nodes")
    drag = dash_duo.wait_for_element(f"#{ids.ND_HEATMAP} .nsewdrag", timeout=30)
    dash_duo.wait_for_contains_text(f"#{ids.ND_DLTS}", "on n1", timeout=20)

    def shapes(band: bool) -> list[list[float]]:
        """The heatmap's row outlines, or (``band``) the newest subintervals' grey band,
        which spans the whole plot's height (yref 'paper')."""
        return dash_duo.driver.execute_script(
            f"const el = document.querySelector('#{ids.ND_HEATMAP} .js-plotly-plot');"
            "return (el.layout.shapes || []).filter(s => (s.yref === 'paper') === arguments[0])"
            ".map(s => [s.y0, s.y1]);",
            band,
        )

    def outlined_rows() -> list[list[float]]:
        return shapes(False)

    until(lambda: outlined_rows() == [[-0.5, 0.5]], timeout=10)  # n1, the default
    in_flight = shapes(True)
    assert len(in_flight) == 1  # the fixture's newest subinterval is still in flight
    dash_duo.driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", drag)
    # the middle of row n3 (category 2 of n1..n5), in the middle of the time axis
    dy = dash_duo.driver.execute_script(
        f"const ya = document.querySelector('#{ids.ND_HEATMAP} .js-plotly-plot')"
        "._fullLayout.yaxis; return ya.l2p(2) - ya._length / 2;"
    )
    ActionChains(dash_duo.driver).move_to_element(drag).move_by_offset(0, int(dy)).pause(
        0.3
    ).click().perform()
    dash_duo.wait_for_contains_text(f"#{ids.ND_DLTS}", "on n3", timeout=20)
    dash_duo.wait_for_contains_text(f"#{ids.ND_NODE}", "n3", timeout=10)
    assert "on n3" in dash_duo.find_element(f"#{ids.ND_BUSY}").text

    # the heatmap is not redrawn for a node switch: its outline moves from n1 to n3
    until(lambda: outlined_rows() == [[1.5, 2.5]], timeout=10)
    assert shapes(True) == in_flight  # the grey band stays through the switch
    assert dash_duo.get_logs() == []


TAP_POINTS = """
const cy = document.getElementById(arguments[0])._cyreg.cy;
const r = cy.container().getBoundingClientRect();
const op = cy.$id(arguments[1]).renderedPosition();
const box = cy.$id(arguments[2]);
const b = box.renderedBoundingBox({includeLabels: false});
const kids = box.children().map(n => n.renderedBoundingBox());
const clear = ([x, y]) => !kids.some(
  k => x >= k.x1 - 4 && x <= k.x2 + 4 && y >= k.y1 - 4 && y <= k.y2 + 4);
const spots = [[b.x1 + 8, b.y2 - 8], [b.x2 - 8, b.y2 - 8], [b.x1 + 8, b.y1 + 8],
               [b.x2 - 8, b.y1 + 8]];
const spot = spots.find(clear);
return {operator: [r.left + op.x, r.top + op.y],
        machine: spot && [r.left + spot[0], r.top + spot[1]]};
"""
"""Where to tap, in the page's viewport: the operator's centre, and a spot inside the
machine's box clear of its operators."""


def tap(dash_duo, point: list[float]) -> None:
    """A real click at ``point`` of the viewport."""
    action = ActionBuilder(dash_duo.driver)
    action.pointer_action.move_to_location(int(point[0]), int(point[1]))
    action.pointer_action.click()
    action.perform()


def test_whatif_taps_choose_the_operator_and_its_target_machine(dash_duo, five_node_db: Path):
    dash_duo.driver.set_window_size(1500, 1000)
    dash_duo.start_server(create_app(five_node_db, refresh_seconds=60))
    dash_duo.wait_for_page(url=dash_duo.server_url + "/whatif")
    dash_duo.wait_for_contains_text(f"#{ids.WI_MACE_WC}", "WC: scenario", timeout=30)
    graph = ids.WI_GRAPH
    assert graph_state(dash_duo, graph)["parents"]["q1_join"] == "machine:n1"
    dash_duo.driver.execute_script(
        "document.getElementById(arguments[0]).scrollIntoView({block: 'center'})", graph
    )
    points = dash_duo.driver.execute_script(TAP_POINTS, graph, "q1_join", "machine:n4")
    assert points["machine"] is not None, points
    tap(dash_duo, points["operator"])
    dash_duo.wait_for_contains_text(f"#{ids.WI_OPERATOR}", "q1_join", timeout=10)
    tap(dash_duo, points["machine"])
    dash_duo.wait_for_contains_text(f"#{ids.WI_TARGET}", "n4", timeout=10)
    assert "q1_join" in dash_duo.find_element(f"#{ids.WI_OPERATOR}").text  # still chosen
    dash_duo.find_element(f"#{ids.WI_MOVE}").click()
    until(lambda: graph_state(dash_duo, graph)["parents"]["q1_join"] == "machine:n4", 30)
    assert dash_duo.get_logs() == []
