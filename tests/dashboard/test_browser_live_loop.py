"""The closed loop end to end, through the real parts: a live
simulator writes telemetry, Spark ingests it into DuckDB, the What-if page's "Apply to
the running system" moves an operator on the running simulator, the next ingestion
reads the new placement version, and the Overview then shows its change marker and a
Changes row."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from dash.testing.wait import until

from dashboard.app import create_app
from estimator.loaders import dump_topology
from estimator.model import topology_from_dict, version_starts
from ingest.job import ingest_once
from mace.demo_command import placement_inbox
from simulator.fast import warm_up
from simulator.live import run_live
from simulator.workloads import workload_model
from storage import reads
from storage.db import connect
from tests.dashboard import ids
from tests.dashboard.builders import SMALL_TOPOLOGY

pytestmark = [pytest.mark.browser, pytest.mark.spark]

RUN = "loop"


def _versions(db: Path) -> int:
    """Placement versions of the run whose first subinterval holds statistics (0 before
    its first rows): the Overview marks a change once the data reaches it, and a version
    applied a moment ago starts after the newest ingested subinterval."""
    con = connect(db)
    try:
        runs = {r.run_id for r in reads.list_runs(con)}
        stored = reads.interval_range(con, RUN) if RUN in runs else None
        if stored is None:
            return 0
        info = reads.get_run(con, RUN)
        valid_from = [v.valid_from for v in reads.placement_versions(con, RUN)]
        starts = version_starts(valid_from, info.origin, info.subinterval)
        return sum(1 for start in starts if start < stored[1])
    finally:
        con.close()


def _ingest_until(landing: Path, db: Path, spark, versions: int, timeout: float) -> None:  # type: ignore[no-untyped-def]
    """Ingest the landing folder again and again until the run has statistics and
    ``versions`` placement versions with data (the simulator keeps writing meanwhile)."""
    deadline = time.monotonic() + timeout
    while True:
        ingest_once(landing, db, spark)
        if _versions(db) >= versions:
            return
        assert time.monotonic() < deadline, f"run '{RUN}' never reached {versions} versions"
        time.sleep(1.0)


def test_apply_on_the_live_system_shows_up_as_a_change_on_the_overview(
    dash_duo, spark, tmp_path: Path
) -> None:
    warm_up()  # compile the engine (or load it from the cache) before any timeout runs
    topology_file = tmp_path / "small.yaml"
    topology_file.write_text(dump_topology(topology_from_dict(SMALL_TOPOLOGY)))
    topology, model = workload_model(str(topology_file), load=0.3)
    db, landing = tmp_path / "live.duckdb", tmp_path / "landing"
    connect(db).close()
    stop = threading.Event()
    simulator = threading.Thread(
        target=run_live,
        args=(topology, model, landing, RUN, stop),
        kwargs={"flush_every": 0.3, "segment": 4.0,
                "requests": placement_inbox(db, RUN)},
        daemon=True,
    )  # fmt: skip
    simulator.start()
    try:
        time.sleep(3.0)  # some telemetry on the first placement
        _ingest_until(landing, db, spark, versions=1, timeout=60)
        dash_duo.start_server(create_app(db, refresh_seconds=1, live_run=RUN))
        dash_duo.wait_for_page(url=f"{dash_duo.server_url}/whatif?run={RUN}")
        dash_duo.wait_for_contains_text(f"#{ids.WI_MACE_WC}", "WC: scenario", timeout=30)
        button = f"#{ids.WI_LIVE_APPLY}"
        until(lambda: dash_duo.find_element(button).is_enabled(), timeout=10)
        before = topology.placement["a"]
        target = next(n for n in topology.node_ids if n != before)
        dash_duo.select_dcc_dropdown(f"#{ids.WI_OPERATOR}", value="a")
        dash_duo.select_dcc_dropdown(f"#{ids.WI_TARGET}", value=target)
        dash_duo.find_element(f"#{ids.WI_MOVE}").click()
        dash_duo.wait_for_contains_text(f"#{ids.WI_EDITS}", f"a to {target}", timeout=10)
        dash_duo.find_element(button).click()
        dash_duo.wait_for_contains_text(f"#{ids.WI_LIVE_STATUS}", "Request #1 applied", 30)
        time.sleep(2.0)  # some telemetry on the new placement
        _ingest_until(landing, db, spark, versions=2, timeout=60)
    finally:
        stop.set()
        simulator.join(timeout=30)
    dash_duo.wait_for_page(url=f"{dash_duo.server_url}/?run={RUN}")
    graph = f"#{ids.OV_LATENCY}"
    # read in one script: the live refresh redraws the chart every second
    annotations = (
        f"return Array.from(document.querySelectorAll('{graph} .annotation-text'))"
        ".map(e => e.textContent);"
    )
    until(lambda: "change" in (dash_duo.driver.execute_script(annotations) or []), timeout=30)
    table = f"#{ids.OV_CHANGES_TABLE}"
    dash_duo.wait_for_contains_text(table, f"a: {before} → {target}", timeout=30)
    assert dash_duo.get_logs() == []
