"""Headless Chromium for dash_duo, and small test databases written without Spark."""

from __future__ import annotations

from pathlib import Path

import pytest
from selenium.webdriver.chrome.options import Options

from storage.db import connect
from storage.scenarios import set_objective
from tests.dashboard.builders import TANDEM_CPU, TANDEM_TOPOLOGY, write_small_run

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
def small_db(tmp_path: Path) -> Path:
    """The hand-computed run of test_report, with an objective of 1 s for q1."""
    db = tmp_path / "small.duckdb"
    write_small_run(db)
    con = connect(db)
    set_objective(con, "small", "q1", 1.0)
    con.close()
    return db


@pytest.fixture
def tandem_db(tmp_path: Path) -> Path:
    """The hand-computed two-node tandem run of builders.TANDEM_TOPOLOGY."""
    db = tmp_path / "tandem.duckdb"
    write_small_run(db, "tandem", document=TANDEM_TOPOLOGY, measured_cpu=TANDEM_CPU)
    return db
