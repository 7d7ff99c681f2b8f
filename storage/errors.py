"""Errors of the DuckDB store, reported by the command line as one line."""

from __future__ import annotations

from estimator.errors import MaceError


class StorageError(MaceError):
    """A database problem reported to the user in one line (wraps ``duckdb.Error``)."""


class DatabaseLockedError(StorageError):
    """The database file is locked by another process (another writer)."""

    def __init__(self, message: str, holder_pid: int | None, holder_program: str | None):
        super().__init__(message)
        self.holder_pid = holder_pid
        self.holder_program = holder_program
