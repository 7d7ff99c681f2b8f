"""The Data health page in headless Chromium: freshness, batches, quarantine reasons."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest

from dashboard.app import create_app
from storage import writes
from storage.db import connect
from tests.dashboard import ids

pytestmark = pytest.mark.browser


def test_health_page_shows_batches_and_quarantine_reasons(dash_duo, small_db: Path) -> None:
    con = connect(small_db)
    end = datetime.now(UTC).replace(tzinfo=None) - timedelta(seconds=30)
    entry = writes.ManifestEntry("small/executions/x.parquet", "small", "executions", 9, 1.0, 12, 2)
    writes.record_batch(
        con, 99, [entry], rows_kept=10, started_at=end - timedelta(seconds=4), finished_at=end
    )
    writes.add_quarantine(
        con,
        99,
        pd.DataFrame(
            {
                "run_id": ["small", "small"],
                "record_set": ["executions", "executions"],
                "file": ["small/executions/x.parquet"] * 2,
                "row_number": [4, 7],
                "reason": ["cpu_seconds out of range"] * 2,
                "raw": ['{"cpu_seconds": 1e300}'] * 2,
            }
        ),
    )
    con.close()
    dash_duo.start_server(create_app(small_db, refresh_seconds=60))
    dash_duo.wait_for_page(url=dash_duo.server_url + "/health")
    dash_duo.wait_for_contains_text(f"#{ids.HL_KPIS}", "Quarantined rows", timeout=20)
    kpis = dash_duo.find_element(f"#{ids.HL_KPIS}").text
    assert "batch run" in kpis  # the small run starts at 0: no wall-clock lag
    assert "batch 99: 1 file(s) in 4.0 s" in kpis
    assert "\n2\n" in kpis  # two quarantined rows
    dash_duo.wait_for_contains_text(f"#{ids.HL_REASONS}", "cpu_seconds out of range", timeout=20)
    assert "x.parquet row 4" in dash_duo.find_element(f"#{ids.HL_REASONS}").text
    dash_duo.wait_for_element(f"#{ids.HL_BATCHES} .main-svg", timeout=20)
    dash_duo.driver.set_window_size(1500, 1000)
    dash_duo.driver.save_screenshot("/tmp/health.png")
    assert dash_duo.get_logs() == []
