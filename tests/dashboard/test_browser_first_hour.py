"""What a newcomer meets first, in headless Chromium: a Flink run's long node names
readable on every chart, the Reports page of a run measured by counters, the CE/C
heatmap's cells under the in-flight band, and no empty axes while the first ingestion
runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dash.testing.wait import until

from dashboard.app import create_app
from estimator.model import topology_from_dict
from storage.db import connect, transaction
from storage.writes import write_run
from tests.dashboard import ids
from tests.dashboard.builders import SMALL_TOPOLOGY, write_workload_run

pytestmark = pytest.mark.browser

LONG = "parse-filter-enrich-sink-probe-threads"
TM = "tm-653d69da"
FLINK_TOPOLOGY = {
    "name": "clickstream",
    "subinterval": 1.0,
    "origin": 1_795_000_000.0,
    "nodes": [
        {"id": LONG, "capacity": 1.0, "host": TM},
        {"id": "count-click-counts-probe-threads", "capacity": 1.0, "host": TM},
        {"id": TM, "capacity": 2.0},
    ],
    "sources": [{"id": "clicks"}],
    "operators": [
        {"id": "parse", "query": "views", "inputs": ["clicks"], "cost": 0.00008},
        {"id": "views", "query": "views", "inputs": ["parse"], "cost": 0.000001},
        {"id": "count", "query": "click-counts", "inputs": ["parse"], "cost": 0.00004},
        {"id": "click-counts", "query": "click-counts", "inputs": ["count"], "cost": 0.000001},
    ],
    "placement": {
        "parse": LONG,
        "views": LONG,
        "count": "count-click-counts-probe-threads",
        "click-counts": "count-click-counts-probe-threads",
    },
}


@pytest.fixture
def flink_db(tmp_path: Path) -> Path:
    """A run shaped like one the Flink connector records: thread nodes named after their
    chain inside a TaskManager node, measured by counters (a sample state is stored)."""
    db = tmp_path / "flink.duckdb"
    write_workload_run(db, "flink", topology_from_dict(FLINK_TOPOLOGY), intervals=40)
    con = connect(db)
    try:
        con.execute(
            "INSERT INTO sample_state VALUES ('flink', 'parse', 0, 0, 1.0, ?, 1, 1, 0.5, NULL)",
            [LONG],
        )
    finally:
        con.close()
    return db


def _script(dash_duo: Any, graph: str, body: str) -> Any:
    return dash_duo.driver.execute_script(
        f"const gd = document.querySelector('#{graph} .js-plotly-plot'); if (!gd) return null; "
        + body
    )


def _tick_labels_inside(dash_duo: Any, graph: str, axis: str) -> list[str]:
    """The tick labels of ``axis`` (``y2``) of ``graph``, waiting until they are drawn,
    each checked to lie inside the chart (a clipped label starts left of it)."""

    def drawn() -> list[str]:
        return _script(
            dash_duo,
            graph,
            f"return [...gd.querySelectorAll('.{axis}tick text')].map(e => e.textContent);",
        )

    until(lambda: len(drawn()) > 0, timeout=20)
    lefts = _script(
        dash_duo,
        graph,
        f"const left = gd.getBoundingClientRect().left; return [...gd.querySelectorAll("
        f"'.{axis}tick text')].map(e => e.getBoundingClientRect().left - left);",
    )
    assert min(lefts) >= 0, lefts
    return drawn()


def test_long_node_names_are_shortened_on_the_axes_and_not_clipped(
    dash_duo, flink_db: Path
) -> None:
    dash_duo.start_server(create_app(flink_db, refresh_seconds=60))
    dash_duo.wait_for_element(f"#{ids.OV_LATENCY} .y2tick", timeout=30)
    for axis in ("y2", "y4"):  # the CE/C strip and the bottleneck panel
        labels = _tick_labels_inside(dash_duo, ids.OV_LATENCY, axis)
        assert TM in labels and LONG not in labels, labels
        assert any(label.startswith("parse-filte") and "\u2026" in label for label in labels)
    # the whole name is in the data the hover shows
    assert LONG in _script(dash_duo, ids.OV_LATENCY, "return gd.data.find(t => t.type === "
                           "'heatmap').y;")  # fmt: skip
    dash_duo.driver.save_screenshot("/tmp/shell28-overview-flink.png")

    dash_duo.wait_for_page(url=dash_duo.server_url + "/nodes")
    dash_duo.wait_for_element(f"#{ids.ND_HEATMAP} .ytick", timeout=30)
    labels = _tick_labels_inside(dash_duo, ids.ND_HEATMAP, "y")
    assert TM in labels and LONG not in labels
    _tick_labels_inside(dash_duo, ids.ND_BOTTLENECK, "y")
    # the chosen node's titles fit beside the chart's tool bar
    title = _script(dash_duo, ids.ND_DLTS, "return gd.layout.title.text;")
    assert title.startswith("Load (DLTS) vs capacity on ") and LONG not in title
    dash_duo.driver.save_screenshot("/tmp/shell28-nodes-flink.png")
    assert dash_duo.get_logs() == []


def test_the_reports_page_of_a_run_measured_by_counters(dash_duo, flink_db: Path) -> None:
    """A counter run's report carries each query's pipeline delay (a range): the page
    showed no table and an untitled empty chart, and its legend did not say that the
    estimate holds the delay."""
    dash_duo.start_server(create_app(flink_db, refresh_seconds=60))
    dash_duo.wait_for_page(url=dash_duo.server_url + "/reports")
    dash_duo.wait_for_element(f"#{ids.RP_TABLE} td", timeout=30)
    queries = [r.text.split()[0] for r in dash_duo.find_elements(f"#{ids.RP_TABLE} tr")[1:]]
    assert queries == ["views", "click-counts", "system"]
    until(
        lambda: (
            _script(dash_duo, ids.RP_FIGURE, "return gd.layout.title.text;")
            == "Latency against the objective"
        ),
        timeout=20,
    )
    legend = [e.text for e in dash_duo.find_elements(f"#{ids.RP_FIGURE} .legendtext")]
    # the estimate of a counter run holds each query's engine delay, and says so
    assert legend == ["estimated Mace + engine delay", "measured max"]
    assert dash_duo.get_logs() == []


def test_the_in_flight_band_lies_on_the_heatmap_cell_edges(dash_duo, small_db: Path) -> None:
    """Subintervals 1..4 of the small run in flight: the grey band and the outline of
    the chosen node start and end where the heatmap's cells do."""
    con = connect(small_db)
    con.execute(
        "UPDATE operator_stats SET events_in = events_in - 1 WHERE operator = 'b' AND interval = 1"
    )
    con.close()
    dash_duo.start_server(create_app(small_db, refresh_seconds=60))
    dash_duo.wait_for_page(url=dash_duo.server_url + "/nodes")
    until(
        lambda: _script(dash_duo, ids.ND_HEATMAP, "return (gd.layout.shapes || []).length;") == 2,
        timeout=30,
    )
    # the cells' edges as Plotly draws them (the brick edges of its calculated trace)
    edges = _script(dash_duo, ids.ND_HEATMAP, "return Array.from(gd.calcdata[0][0].x);")
    assert edges == [0, 1, 2, 3, 4, 5]
    band = [
        s
        for s in _script(dash_duo, ids.ND_HEATMAP, "return gd.layout.shapes;")
        if s.get("yref") == "paper"
    ]
    assert [(s["x0"], s["x1"]) for s in band] == [(1, 5)]
    # the Overview's CE/C strip: the same cells on the shared axis
    dash_duo.wait_for_page(url=dash_duo.server_url + "/?clock=since")
    until(
        lambda: _script(dash_duo, ids.OV_LATENCY, "return gd.calcdata && gd.calcdata.length;"),
        timeout=30,
    )
    strip = _script(
        dash_duo,
        ids.OV_LATENCY,
        "return Array.from(gd.calcdata.find(c => c[0].trace.type === 'heatmap')[0].x);",
    )
    assert strip == [0, 1, 2, 3, 4, 5]
    assert dash_duo.get_logs() == []


def test_no_page_shows_empty_axes_during_the_first_ingestion(dash_duo, tmp_path: Path) -> None:
    db = tmp_path / "first.duckdb"
    con = connect(db)
    with transaction(con, "test run"):
        write_run(con, "small", topology_from_dict(dict(SMALL_TOPOLOGY)), [])
    con.close()
    dash_duo.start_server(create_app(db, refresh_seconds=60))
    for path, graphs in (
        ("/", (ids.OV_LATENCY, ids.OV_ERROR_GRAPH, ids.OV_BLAME_BARS)),
        ("/nodes", (ids.ND_HEATMAP, ids.ND_DLTS, ids.ND_BUSY, ids.ND_BOTTLENECK)),
        ("/reports", (ids.RP_FIGURE,)),
        ("/health", (ids.HL_BATCHES,)),
    ):
        if path != "/":
            dash_duo.wait_for_page(url=dash_duo.server_url + path)
        for graph in graphs:
            dash_duo.wait_for_contains_text(f"#{graph}", "first ingestion is running", 30)
        # one look for the ticks of all the page's graphs: an empty answer takes the
        # driver's implicit wait, during which a late axis would still be seen
        ticks = dash_duo.find_elements(", ".join(f"#{g} .xtick, #{g} .ytick" for g in graphs))
        drawn = {g for g in graphs for t in ticks if dash_duo.driver.execute_script(
            "return arguments[0].closest('#' + arguments[1]) !== null;", t, g)}  # fmt: skip
        assert ticks == [], f"{path} {sorted(drawn)} show axes"
    assert dash_duo.get_logs() == []
