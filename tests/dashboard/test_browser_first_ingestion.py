"""A run registered before its first ingestion finishes, in headless Chromium: the
pages say that ingestion is running, not that something is wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from dashboard.app import create_app
from estimator.model import topology_from_dict
from storage.db import connect, transaction
from storage.writes import write_run
from tests.dashboard import ids
from tests.dashboard.builders import SMALL_TOPOLOGY

pytestmark = pytest.mark.browser


def test_a_run_without_statistics_shows_the_first_ingestion_running(
    dash_duo, tmp_path: Path
) -> None:
    db = tmp_path / "first.duckdb"
    con = connect(db)
    with transaction(con, "test run"):
        write_run(con, "small", topology_from_dict(dict(SMALL_TOPOLOGY)), [])
    con.close()
    dash_duo.start_server(create_app(db, refresh_seconds=60))
    dash_duo.wait_for_contains_text(
        f"#{ids.OV_MESSAGE}", "Run 'small': the first ingestion is running", timeout=20
    )
    assert "no statistics" not in dash_duo.find_element(f"#{ids.OV_MESSAGE}").text
    # said once, by the page's message: the range picker has nothing to complain about
    assert not dash_duo.find_elements(f"#{ids.TIME_MESSAGE}")
    dash_duo.wait_for_page(url=dash_duo.server_url + "/nodes")
    dash_duo.wait_for_contains_text("body", "the first ingestion is running", timeout=20)
    assert dash_duo.get_logs() == []
