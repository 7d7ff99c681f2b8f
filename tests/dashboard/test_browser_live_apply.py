"""What-if "Apply to the running system" in headless Chromium: the
click stores a placement request, a live simulator (this test's, polling the same
database as ``mace demo`` does) applies it and writes ``topology-<epoch>.yaml``, which
ingestion reads as a second placement version; the page then says the request was
applied. Without a live simulator the button is disabled and says why."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from dash.testing.wait import until

from dashboard.app import create_app
from dashboard.whatif import live as whatif_live
from estimator.loaders import dump_topology
from estimator.model import topology_from_dict
from ingest.extract import discover
from mace.demo_command import placement_inbox
from simulator.fast import warm_up
from simulator.live import run_live
from simulator.workloads import workload_model
from storage.db import connect
from storage.placement_requests import APPLIED, latest_request
from tests.dashboard import ids
from tests.dashboard.builders import SMALL_TOPOLOGY

pytestmark = pytest.mark.browser

BUTTON = f"#{ids.WI_LIVE_APPLY}"
STATUS = f"#{ids.WI_LIVE_STATUS}"
SHOTS = os.environ.get("MACE_SCREENSHOTS")  # a folder: keep the screenshots there


def _shot(dash_duo, name: str) -> None:
    if SHOTS:
        dash_duo.driver.set_window_size(1500, 1000)
        dash_duo.driver.save_screenshot(str(Path(SHOTS) / f"{name}.png"))


def _open(dash_duo, app) -> None:  # type: ignore[no-untyped-def]
    dash_duo.start_server(app)
    dash_duo.wait_for_page(url=dash_duo.server_url + "/whatif")
    dash_duo.wait_for_contains_text(f"#{ids.WI_MACE_WC}", "WC: scenario", timeout=20)


def test_apply_sends_the_placement_and_the_live_simulator_applies_it(
    dash_duo, small_db: Path, tmp_path: Path
) -> None:
    warm_up()  # compile the engine (or load it from the cache) before any timeout runs
    topology_file = tmp_path / "small.yaml"
    topology_file.write_text(dump_topology(topology_from_dict(SMALL_TOPOLOGY)))
    topology, model = workload_model(str(topology_file), load=0.3)
    landing, stop = tmp_path / "landing", threading.Event()
    simulator = threading.Thread(
        target=run_live,
        args=(topology, model, landing, "small", stop),
        kwargs={"flush_every": 0.3, "segment": 4.0,
                "requests": placement_inbox(small_db, "small")},
        daemon=True,
    )  # fmt: skip
    _open(dash_duo, create_app(small_db, refresh_seconds=1, live_run="small"))
    simulator.start()
    try:
        until(lambda: dash_duo.find_element(BUTTON).is_enabled(), timeout=10)
        assert "Sends this scenario's placement" in dash_duo.find_element(STATUS).text
        dash_duo.select_dcc_dropdown(f"#{ids.WI_OPERATOR}", value="a")
        dash_duo.select_dcc_dropdown(f"#{ids.WI_TARGET}", value="n1")
        dash_duo.find_element(f"#{ids.WI_MOVE}").click()
        dash_duo.wait_for_contains_text(f"#{ids.WI_EDITS}", "a to n1", timeout=10)
        dash_duo.find_element(BUTTON).click()
        dash_duo.wait_for_contains_text(STATUS, "Request #1 applied", timeout=20)
        _shot(dash_duo, "whatif-live-applied")
    finally:
        stop.set()
        simulator.join(timeout=30)
    con = connect(small_db)
    try:
        request = latest_request(con, "small")
    finally:
        con.close()
    assert request is not None and request.status == APPLIED
    assert request.placement == {"a": "n1", "b": "n2", "c": "n1"}
    versions = list((landing / "small").glob("topology-*.yaml"))
    assert len(versions) == 1
    (run,) = discover(landing, set())
    # the new version moves operators and keeps the nodes' capacities; a simulated
    # change has no restart (no stop)
    placement, capacities = {"a": "n1", "b": "n2", "c": "n1"}, {"n1": 1.0, "n2": 2.0}
    assert run.versions == [(request.valid_from, placement, capacities, None)]
    assert dash_duo.get_logs() == []


def test_without_a_live_simulator_the_button_says_why(dash_duo, small_db: Path) -> None:
    _open(dash_duo, create_app(small_db, refresh_seconds=60))
    dash_duo.wait_for_contains_text(STATUS, "no live simulator listens", timeout=10)
    assert not dash_duo.find_element(BUTTON).is_enabled()
    assert dash_duo.find_element(STATUS).text == whatif_live.NO_LIVE_ENGINE
    _shot(dash_duo, "whatif-live-unavailable")
    assert dash_duo.get_logs() == []
