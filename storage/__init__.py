"""DuckDB store of per-subinterval statistics, deployments and scenarios (DESIGN section 6).

Every SQL statement of the project lives in this package. Open a database with
:func:`storage.db.connect`; it applies the versioned migrations of
:mod:`storage.schema` on a writable connection. The queries live in
:mod:`storage.reads`, :mod:`storage.writes`, :mod:`storage.scenarios` and
:mod:`storage.placement_requests`.
"""

from __future__ import annotations

from storage.db import connect, transaction
from storage.errors import DatabaseLockedError, StorageError

__all__ = ["DatabaseLockedError", "StorageError", "connect", "transaction"]
