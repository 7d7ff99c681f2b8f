"""What became of ingested landing files (``mace landing``): the manifest's side.

Only a file ingested clean may go: listed in ``ingest_files``, still in the landing
folder as ingested (``landing`` is NULL), with no quarantined row (its rows in
``quarantine`` point into it by row number, and a file quarantined whole was never
read) and not waiting in ``ingest_pending``. Whoever deletes or compacts a file checks
on disk that it is unchanged since ingestion (same size and modification time).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import duckdb

from storage.db import storage_errors, transaction


@dataclass(frozen=True)
class IngestedFile:
    """A file of the manifest that may leave the landing folder."""

    path: str
    run_id: str
    record_set: str
    size_bytes: int
    modified_at: float
    rows_read: int


def removable_files(
    con: duckdb.DuckDBPyConnection, run_id: str | None = None
) -> list[IngestedFile]:
    """Files ingested clean and still in place, by run, record set and path."""
    params: list[object] = []
    where = ""
    if run_id is not None:
        where = " AND f.run_id = ?"
        params.append(run_id)
    with storage_errors("reading ingest_files"):
        rows = con.execute(
            "SELECT f.path, f.run_id, f.record_set, f.size_bytes, f.modified_at, f.rows_read"
            " FROM ingest_files f WHERE f.landing IS NULL AND f.rows_quarantined = 0"
            " AND f.path NOT IN (SELECT file FROM quarantine)"
            " AND f.path NOT IN (SELECT path FROM ingest_pending)" + where + " ORDER BY ALL",
            params,
        ).fetchall()
    return [
        IngestedFile(str(p), str(r), str(s), int(b), float(m), int(n)) for p, r, s, b, m, n in rows
    ]


def mark_deleted(con: duckdb.DuckDBPyConnection, paths: Sequence[str]) -> None:
    """Record that these manifest files were deleted from the landing folder."""
    if not paths:
        return
    with transaction(con, "recording deleted landing files"):
        con.execute(
            "UPDATE ingest_files SET landing = 'deleted' WHERE list_contains(?, path)",
            [list(paths)],
        )


def record_compaction(
    con: duckdb.DuckDBPyConnection,
    path: str,
    files: Sequence[IngestedFile],
    *,
    rows: int,
    size_bytes: int,
    modified_at: float,
) -> None:
    """Record, in one transaction, the compacted file (so ingestion never reads it) and
    that ``files`` were compacted into it."""
    first = files[0]
    with transaction(con, f"recording compacted file {path}"):
        con.execute(
            "INSERT INTO landing_compactions (path, run_id, record_set, files, rows,"
            " size_bytes, modified_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [path, first.run_id, first.record_set, len(files), rows, size_bytes, modified_at],
        )
        con.execute(
            "UPDATE ingest_files SET landing = 'compacted', compacted_into = ?"
            " WHERE list_contains(?, path)",
            [path, [f.path for f in files]],
        )
