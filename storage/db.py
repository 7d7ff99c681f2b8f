"""Opening the DuckDB file and turning DuckDB failures into project errors.

One process owns the writable file (DuckDB takes an exclusive file lock, and
while a writer holds it other processes cannot open the file even read-only).
Inside one process, ``connect(path)`` called twice shares one database
instance, so the dashboard and the in-process ingestion scheduler can both
open the same file; give each thread its own connection.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from storage.errors import DatabaseLockedError, StorageError

_MIGRATING = threading.Lock()
"""Connections of one process share the database instance: two threads creating or
migrating the schema of a new file at once conflict (DuckDB: "Catalog write-write
conflict"), as ``mace demo``'s dashboard and ingestion did on start-up."""

_CONFIG: dict[str, str | bool | int | float | list[str]] = {
    "autoload_known_extensions": False,
    "autoinstall_known_extensions": False,
}
"""Every connection: DuckDB never loads or downloads an extension on its own (given a
SQLite file, it would fetch its SQLite reader from the network)."""

_LOCK_HOLDER = re.compile(r"Conflicting lock is held in (?P<program>.+?) \(PID (?P<pid>\d+)\)")


def connect(path: str | Path, *, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """Open the database file; a writable connection creates or migrates the schema.

    Raises :class:`DatabaseLockedError` naming the lock holder when another
    process owns the file, and :class:`StorageError` for other failures.
    """
    from storage.schema import check_schema, migrate

    file = Path(path)
    if read_only and not file.is_file():
        raise StorageError(f"{file}: no such database file")
    if not read_only and not file.parent.is_dir():
        raise StorageError(f"{file}: folder {file.parent} does not exist")
    try:
        con = duckdb.connect(str(file), read_only=read_only, config=_CONFIG)
    except duckdb.Error as exc:
        raise _open_error(file, exc) from None
    try:
        if read_only:
            check_complete(con, file)
            check_schema(con, file)
        else:
            with _MIGRATING:
                refuse_foreign(con, file)
                try:
                    migrate(con)
                except StorageError as exc:
                    raise StorageError(f"{file}: {exc}") from exc
    except BaseException:
        con.close()
        raise
    return con


def connect_to_read(path: str | Path) -> duckdb.DuckDBPyConnection:
    """Open an existing database file for work that only reads it (``mace report``).

    Read-only when the file holds the current schema: it opens and closes in about
    half the CPU time of a writable connection (18 ms less on the 100-run store, see
    :mod:`storage`) and never writes, and several read-only processes may read the
    file at once. A file with an older schema is opened writable, which migrates it,
    as is a file this process already holds writable (DuckDB refuses to open one
    file with two configurations in a process). Errors as :func:`connect`.
    """
    from storage.schema import SCHEMA_VERSION, check_schema, current_version

    file = Path(path)
    if not file.is_file():
        raise StorageError(f"{file}: no such database file")
    try:
        con = duckdb.connect(str(file), read_only=True, config=_CONFIG)
    except duckdb.ConnectionException as exc:
        if "different configuration" not in str(exc):
            raise _open_error(file, exc) from None
        return connect(file)
    except duckdb.Error as exc:
        raise _open_error(file, exc) from None
    try:
        check_complete(con, file)
        version = current_version(con)
        if version == 0:
            check_schema(con, file)  # refuses it
    except BaseException:
        con.close()
        raise
    if version == SCHEMA_VERSION:
        return con
    con.close()
    return connect(file)


DUCKDB_HEADER_BYTES = 3 * 4096
"""DuckDB's file starts with three 4 KiB headers; block ``b`` follows at
``DUCKDB_HEADER_BYTES + b * block_size``."""


def check_complete(con: duckdb.DuckDBPyConnection, file: Path) -> None:
    """Refuse a file cut short (a full disk, an interrupted copy): one whose tables use a
    block that starts beyond its end. Reading it fails on some tables only, and a read
    that misses them would look like an empty answer.

    Every block in use has an id below the file's block count, so a file that holds all
    of them is complete at once. A valid file may be shorter (free blocks at its end are
    not written); only then is each table's last block looked up, which reads the layout
    of every column segment (0.1 s for the 28.8 M operator rows of the 100-run store)."""
    with storage_errors("reading the storage layout"):
        block_size, blocks = (
            int(v)
            for v in con.execute(
                "SELECT block_size, total_blocks FROM pragma_database_size() LIMIT 1"
            ).fetchall()[0]
        )
        size = file.stat().st_size
        if size >= DUCKDB_HEADER_BYTES + blocks * block_size:
            return
        tables = con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()"
        ).fetchall()
        last = -1
        for (table,) in tables:
            used = con.execute(
                "SELECT max(block_id) FROM pragma_storage_info(?) WHERE persistent", [table]
            ).fetchall()[0][0]
            last = max(last, -1 if used is None else int(used))
    if last >= 0 and size <= DUCKDB_HEADER_BYTES + last * block_size:
        raise StorageError(
            f"{file}: truncated database file ({size} bytes; its tables use block {last}, "
            f"which starts at byte {DUCKDB_HEADER_BYTES + last * block_size})"
        )


def refuse_foreign(con: duckdb.DuckDBPyConnection, file: Path) -> None:
    """Refuse a database that holds tables but no ``schema_version``: another program's
    file, which migrating would fill with this product's tables."""
    from storage.schema import current_version

    if current_version(con) > 0:
        return
    with storage_errors("reading the tables"):
        tables = con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'main'"
        ).fetchall()[0][0]
    if tables:
        raise StorageError(
            f"{file}: not a mace store ({tables} table(s) and no schema_version); "
            "give a new file or one mace created"
        )


def _open_error(file: Path, exc: duckdb.Error) -> StorageError:
    message = str(exc)
    match = _LOCK_HOLDER.search(message)
    if match or "Could not set lock" in message:
        pid = int(match["pid"]) if match else None
        program = match["program"] if match else None
        holder = f"{program} (PID {pid})" if match else "another process"
        return DatabaseLockedError(
            f"{file} is locked by {holder}: only one process may open the database while it "
            "writes; stop that process, or let it do the work (mace serve ingests in-process; "
            "ask it for a report with mace report --url http://127.0.0.1:PORT, or use its "
            "Reports page)",
            pid,
            program,
        )
    if "xtension" in message:  # DuckDB wants an extension to read the file's format
        return StorageError(f"{file}: not a DuckDB database file")
    return StorageError(f"{file}: cannot open database: {_first_line(message)}")


def _first_line(message: str) -> str:
    return message.strip().splitlines()[0] if message.strip() else "unknown error"


@contextmanager
def storage_errors(what: str) -> Iterator[None]:
    """Re-raise ``duckdb.Error`` raised inside the block as :class:`StorageError`."""
    try:
        yield
    except duckdb.Error as exc:
        raise StorageError(f"{what}: {_first_line(str(exc))}") from exc


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection, what: str) -> Iterator[None]:
    """Run the block in one DuckDB transaction: all of it is committed, or none of it."""
    with storage_errors(what):
        con.execute("BEGIN TRANSACTION")
    try:
        yield
    except BaseException:
        with storage_errors(f"{what} (rollback)"):
            con.execute("ROLLBACK")
        raise
    with storage_errors(f"{what} (commit)"):
        con.execute("COMMIT")
