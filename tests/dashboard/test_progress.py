"""The line a page shows while a run has no statistics yet."""

from __future__ import annotations

from datetime import datetime

from dashboard.core.progress import waiting_message
from storage.dashboard_reads import IngestionProgress


def test_before_the_first_batch_it_says_the_first_ingestion_is_running() -> None:
    text = waiting_message("demo", IngestionProgress(0, 0, 0, None, 2))
    assert text == (
        "Run 'demo': the first ingestion is running (no batch finished yet; 2 files waiting"
        " to be read again). The figures appear when it finishes; this page refreshes by itself."
    )


def test_after_other_batches_it_counts_them() -> None:
    progress = IngestionProgress(3, 1, 10, datetime(2026, 1, 2, 3, 4, 5), 0)
    assert waiting_message("demo", progress) == (
        "Run 'demo' has no statistics yet: ingestion is running (3 batches done, 1 file read,"
        " the latest at 03:04:05 UTC). Its figures appear after the batch that reads its"
        " first files."
    )
