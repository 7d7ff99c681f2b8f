"""Headless Chromium for dash_duo (the small test databases are in tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from selenium.webdriver.chrome.options import Options

from simulator.workloads import workload_model
from tests.dashboard.builders import write_workload_run

CHROMIUM = Path("/usr/bin/chromium")


def pytest_setup_options() -> Options:
    options = Options()
    if CHROMIUM.exists():
        options.binary_location = str(CHROMIUM)
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--window-size=1400,1000",
    ):
        options.add_argument(argument)
    return options


@pytest.fixture
def five_node_db(tmp_path: Path) -> Path:
    """A run of the simulator's clickstream-5q on its default 5 nodes: 70 operators and
    5 sources, the graph the operator-graph tests read."""
    db = tmp_path / "five.duckdb"
    topology, _ = workload_model("clickstream-5q")
    write_workload_run(db, "five", topology)
    return db
