"""What a page says while a run has no statistics yet: ingestion's progress, so that a
newcomer who opens the dashboard right after starting a demo sees that the first
ingestion is running rather than an error."""

from __future__ import annotations

from storage.dashboard_reads import IngestionProgress


def waiting_message(run_id: str, progress: IngestionProgress) -> str:
    """The one line shown in place of a run's figures before its first statistics."""
    pending = (
        f"; {progress.pending} file{'s' * (progress.pending != 1)} waiting to be read again"
        if progress.pending
        else ""
    )
    if progress.batches == 0:
        return (
            f"Run '{run_id}': the first ingestion is running (no batch finished yet{pending}). "
            "The figures appear when it finishes; this page refreshes by itself."
        )
    last = progress.last_finished
    when = f", the latest at {last:%H:%M:%S} UTC" if last is not None else ""
    return (
        f"Run '{run_id}' has no statistics yet: ingestion is running "
        f"({progress.batches} batch{'es' * (progress.batches != 1)} done, "
        f"{progress.files} file{'s' * (progress.files != 1)} read{when}{pending}). "
        "Its figures appear after the batch that reads its first files."
    )
