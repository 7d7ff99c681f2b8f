"""Files waiting to be read again (table ``ingest_pending``, docs/design.md, "DuckDB store").

A landing file that cannot be read cleanly (a truncated Parquet file, a JSON Lines
file whose last line is incomplete, a damaged page, a file gone since discovery)
is neither ingested nor quarantined at once: ingestion keeps it here with its size
and modification time and the time it was first seen in that state, and retries it
on later passes. Call :func:`replace_pending` inside the batch transaction.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import duckdb

from storage.db import storage_errors


@dataclass(frozen=True)
class PendingFile:
    """A file not ingested yet, in the state (size, mtime) seen since ``first_seen``."""

    path: str
    size_bytes: int
    modified_at: float
    first_seen: float
    reason: str


def pending_files(con: duckdb.DuckDBPyConnection) -> dict[str, PendingFile]:
    """Every pending file by path."""
    with storage_errors("reading ingest_pending"):
        rows = con.execute(
            "SELECT path, size_bytes, modified_at, first_seen, reason FROM ingest_pending"
        ).fetchall()
    return {
        str(r[0]): PendingFile(str(r[0]), int(r[1]), float(r[2]), float(r[3]), str(r[4]))
        for r in rows
    }


def replace_pending(con: duckdb.DuckDBPyConnection, files: Iterable[PendingFile]) -> None:
    """Make ``files`` the whole pending set (a file not listed is ingested or gone)."""
    rows = [[f.path, f.size_bytes, f.modified_at, f.first_seen, f.reason] for f in files]
    with storage_errors("writing ingest_pending"):
        con.execute("DELETE FROM ingest_pending")
        if rows:
            con.executemany("INSERT INTO ingest_pending VALUES (?, ?, ?, ?, ?)", rows)
