"""DuckDB store of per-subinterval statistics, deployments and scenarios (DESIGN section 6).

Every SQL statement of the project lives in this package. Open a database with
:func:`storage.db.connect`; it applies the versioned migrations of
:mod:`storage.schema` on a writable connection.
"""
