"""Versioned migrations creating the tables of docs/design.md, "DuckDB store".

``schema_version`` holds one row per applied migration. :func:`migrate` applies
the missing ones in order, each in its own transaction, so a database written by
an older release is brought up to date when it is opened for writing.

Migrations 1 to 7 are the strings below; later ones are the files of
``storage/migrations`` (``NNN_name.sql``, applied in their number's order).

Conventions: times are seconds (DOUBLE); ``interval`` is the subinterval index
``floor((t - origin) / subinterval)``; JSON documents are stored as VARCHAR.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from storage.db import storage_errors, transaction
from storage.errors import StorageError

_V1 = """
CREATE TABLE runs (
    run_id       VARCHAR PRIMARY KEY,
    name         VARCHAR NOT NULL,
    subinterval  DOUBLE  NOT NULL,
    origin       DOUBLE  NOT NULL,
    created_at   TIMESTAMP NOT NULL DEFAULT current_timestamp
);
CREATE TABLE nodes (
    run_id    VARCHAR NOT NULL,
    node      VARCHAR NOT NULL,
    capacity  DOUBLE  NOT NULL,
    position  INTEGER NOT NULL,
    PRIMARY KEY (run_id, node)
);
CREATE TABLE sources (
    run_id      VARCHAR NOT NULL,
    source      VARCHAR NOT NULL,
    event_bytes DOUBLE  NOT NULL,
    position    INTEGER NOT NULL,
    PRIMARY KEY (run_id, source)
);
-- cost[q] and selectivity[q] belong to input port q (0-based), in the order of edges.port.
CREATE TABLE operators (
    run_id              VARCHAR  NOT NULL,
    operator            VARCHAR  NOT NULL,
    query               VARCHAR  NOT NULL,
    cost                DOUBLE[] NOT NULL,
    selectivity         DOUBLE[] NOT NULL,
    model               VARCHAR  NOT NULL,
    product_coefficient DOUBLE   NOT NULL,
    event_bytes         DOUBLE   NOT NULL,
    position            INTEGER  NOT NULL,
    PRIMARY KEY (run_id, operator)
);
-- upstream (a source or an operator) feeds input port `port` of `operator`.
CREATE TABLE edges (
    run_id    VARCHAR NOT NULL,
    upstream  VARCHAR NOT NULL,
    operator  VARCHAR NOT NULL,
    port      INTEGER NOT NULL,
    PRIMARY KEY (run_id, operator, port)
);
CREATE TABLE links (
    run_id    VARCHAR NOT NULL,
    src       VARCHAR NOT NULL,
    dst       VARCHAR NOT NULL,
    delay     DOUBLE  NOT NULL,
    bandwidth DOUBLE,
    PRIMARY KEY (run_id, src, dst)
);
-- Placement versions: version 0 is topology.yaml (valid_from = the run's origin),
-- later versions come from topology-<epoch>.yaml (valid_from = epoch, same clock).
CREATE TABLE placements (
    run_id     VARCHAR NOT NULL,
    version    INTEGER NOT NULL,
    valid_from DOUBLE  NOT NULL,
    operator   VARCHAR NOT NULL,
    node       VARCHAR NOT NULL,
    PRIMARY KEY (run_id, version, operator)
);
CREATE TABLE source_arrivals (
    run_id   VARCHAR NOT NULL,
    source   VARCHAR NOT NULL,
    interval BIGINT  NOT NULL,
    events   BIGINT  NOT NULL,
    PRIMARY KEY (run_id, source, interval)
);
CREATE TABLE operator_stats (
    run_id      VARCHAR NOT NULL,
    operator    VARCHAR NOT NULL,
    port        INTEGER NOT NULL,
    interval    BIGINT  NOT NULL,
    events_in   BIGINT  NOT NULL,
    events_out  BIGINT  NOT NULL,
    cpu_seconds DOUBLE  NOT NULL,
    PRIMARY KEY (run_id, operator, port, interval)
);
CREATE TABLE node_busy (
    run_id       VARCHAR NOT NULL,
    node         VARCHAR NOT NULL,
    interval     BIGINT  NOT NULL,
    busy_seconds DOUBLE  NOT NULL,
    PRIMARY KEY (run_id, node, interval)
);
-- histogram: counts in the fixed log-spaced buckets of storage.histogram (HISTOGRAM_SCHEME).
-- lat_sum makes the mean mergeable; quantiles_exact tells whether p50/p95/p99 are exact
-- (the whole interval arrived in one batch) or read from the merged histogram.
CREATE TABLE latency_stats (
    run_id          VARCHAR  NOT NULL,
    query           VARCHAR  NOT NULL,
    interval        BIGINT   NOT NULL,
    outputs         BIGINT   NOT NULL,
    lat_sum         DOUBLE   NOT NULL,
    lat_max         DOUBLE   NOT NULL,
    lat_mean        DOUBLE   NOT NULL,
    lat_p50         DOUBLE   NOT NULL,
    lat_p95         DOUBLE   NOT NULL,
    lat_p99         DOUBLE   NOT NULL,
    histogram       BIGINT[] NOT NULL,
    quantiles_exact BOOLEAN  NOT NULL,
    PRIMARY KEY (run_id, query, interval)
);
CREATE TABLE ingest_batches (
    batch_id         BIGINT PRIMARY KEY,
    files            BIGINT NOT NULL,
    rows_read        BIGINT NOT NULL,
    rows_kept        BIGINT NOT NULL,
    rows_quarantined BIGINT NOT NULL,
    started_at       TIMESTAMP NOT NULL,
    finished_at      TIMESTAMP NOT NULL
);
-- The manifest: a file listed here has been ingested (written in the same transaction
-- as its aggregates, so a crash before the commit leaves neither).
CREATE TABLE ingest_files (
    path             VARCHAR PRIMARY KEY,
    run_id           VARCHAR NOT NULL,
    record_set       VARCHAR NOT NULL,
    size_bytes       BIGINT  NOT NULL,
    modified_at      DOUBLE  NOT NULL,
    batch_id         BIGINT  NOT NULL,
    rows_read        BIGINT  NOT NULL,
    rows_quarantined BIGINT  NOT NULL
);
-- row_number is 1-based within the file (NULL: the whole file was unreadable).
CREATE TABLE quarantine (
    run_id     VARCHAR NOT NULL,
    record_set VARCHAR NOT NULL,
    file       VARCHAR NOT NULL,
    row_number BIGINT,
    reason     VARCHAR NOT NULL,
    raw        VARCHAR,
    batch_id   BIGINT  NOT NULL
);
-- placement, capacities, rate_scale and added_queries are JSON documents (VARCHAR).
CREATE TABLE scenarios (
    scenario_id   VARCHAR PRIMARY KEY,
    run_id        VARCHAR NOT NULL,
    name          VARCHAR NOT NULL,
    placement     VARCHAR NOT NULL,
    capacities    VARCHAR NOT NULL,
    rate_scale    VARCHAR NOT NULL,
    added_queries VARCHAR NOT NULL,
    created_at    TIMESTAMP NOT NULL DEFAULT current_timestamp
);
CREATE TABLE latency_objectives (
    run_id            VARCHAR NOT NULL,
    query             VARCHAR NOT NULL,
    objective_seconds DOUBLE  NOT NULL,
    updated_at        TIMESTAMP NOT NULL DEFAULT current_timestamp,
    PRIMARY KEY (run_id, query)
);
"""

# The newest counter sample per (run, operator, subtask, port) of the samples/ record set:
# the predecessor of the next batch's first sample (ingest.samples). Replaced per batch.
_V2 = """
CREATE TABLE sample_state (
    run_id       VARCHAR NOT NULL,
    operator     VARCHAR NOT NULL,
    subtask      BIGINT  NOT NULL,
    port         BIGINT  NOT NULL,
    time         DOUBLE  NOT NULL,
    node         VARCHAR NOT NULL,
    records_in   DOUBLE  NOT NULL,
    records_out  DOUBLE  NOT NULL,
    busy_seconds DOUBLE,
    PRIMARY KEY (run_id, operator, subtask, port)
);
"""

# Files not ingested yet because they could not be read (caught mid-write, damaged or
# gone): retried on every pass while they change, quarantined for good once unchanged
# (same size and modification time) for a grace period since first_seen (ingest.job).
_V3 = """
CREATE TABLE ingest_pending (
    path        VARCHAR PRIMARY KEY,
    size_bytes  BIGINT  NOT NULL,
    modified_at DOUBLE  NOT NULL,
    first_seen  DOUBLE  NOT NULL,
    reason      VARCHAR NOT NULL
);
"""

# The topology files (names, sizes, modification times) each run was last loaded from:
# a pass skips a run whose topology files are unchanged and which has no new data file.
_V4 = """
CREATE TABLE run_topology_stamps (
    run_id VARCHAR PRIMARY KEY,
    stamp  VARCHAR NOT NULL
);
"""

# Alerts of a run (storage.alerts): latency objectives breached (measured or predicted) and
# drift of the predictive model, over subintervals [start_interval, end_interval]. query is
# NULL for an alert about the whole system; delivered: POSTed to the webhook. And the
# training window of a refitted predictive model (storage.scenarios).
_V5 = """
CREATE SEQUENCE alert_ids START 1;
CREATE TABLE alerts (
    alert_id       BIGINT    PRIMARY KEY DEFAULT nextval('alert_ids'),
    run_id         VARCHAR   NOT NULL,
    query          VARCHAR,
    kind           VARCHAR   NOT NULL
        CHECK (kind IN ('measured_breach', 'predicted_breach', 'drift')),
    start_interval BIGINT    NOT NULL,
    end_interval   BIGINT    NOT NULL,
    value          DOUBLE    NOT NULL,
    objective      DOUBLE,
    detail         VARCHAR   NOT NULL DEFAULT '',
    created_at     TIMESTAMP NOT NULL DEFAULT current_timestamp,
    updated_at     TIMESTAMP NOT NULL DEFAULT current_timestamp,
    delivered      BOOLEAN   NOT NULL DEFAULT false,
    delivered_at   TIMESTAMP
);
-- The window [start_interval, stop_interval) the run's predictive model is fitted on
-- after a refit (no row: the first share of the run, the default).
CREATE TABLE training_windows (
    run_id         VARCHAR   PRIMARY KEY,
    start_interval BIGINT    NOT NULL,
    stop_interval  BIGINT    NOT NULL CHECK (stop_interval > start_interval),
    updated_at     TIMESTAMP NOT NULL DEFAULT current_timestamp
);
"""

# Placement requests: the What-if page's "Apply to the running system" leaves one here and
# the live engine of `mace demo` (which polls the table) applies or refuses it
# (storage.placement_requests). status: pending, applied (valid_from = the time of the
# placement version it became, as in topology-<epoch>.yaml) or refused (detail: why).
_V6 = """
CREATE SEQUENCE placement_request_ids START 1;
CREATE TABLE placement_requests (
    request_id   BIGINT    PRIMARY KEY DEFAULT nextval('placement_request_ids'),
    run_id       VARCHAR   NOT NULL,
    placement    VARCHAR   NOT NULL,
    requested_at TIMESTAMP NOT NULL DEFAULT current_timestamp,
    status       VARCHAR   NOT NULL DEFAULT 'pending',
    valid_from   DOUBLE,
    detail       VARCHAR
);
"""


def _rebuilt(table: str, columns: str, key: str, order: str) -> str:
    """Recreate a statistics table with a trailing ``run_key`` column, rows sorted by
    ``run_key`` then ``order`` (DuckDB has no ALTER TABLE for this in one step)."""
    return f"""
CREATE TABLE {table}_v7 ({columns}, run_key BIGINT NOT NULL, PRIMARY KEY ({key}));
INSERT INTO {table}_v7 SELECT t.*, k.run_key FROM {table} t JOIN run_keys k USING (run_id)
    ORDER BY k.run_key, {order};
DROP TABLE {table};
ALTER TABLE {table}_v7 RENAME TO {table};
"""


# History of many runs. run_keys gives each run a small integer, stored with every statistics
# row: DuckDB's zonemaps keep only the first 8 bytes of a VARCHAR, so runs whose ids share a
# prefix ("clickstream-2026-...") could not be told apart and every per-run read scanned
# every run; an integer zonemap skips the other runs' row groups. first/last_interval keep
# each run's span of statistics so listing runs reads no statistics. runs.last_ingested_at
# is when ingestion last recorded a file of the run (run age for mace prune).
_V7 = (
    """
CREATE TABLE run_keys (
    run_id         VARCHAR PRIMARY KEY,
    run_key        BIGINT  NOT NULL UNIQUE,
    first_interval BIGINT,
    last_interval  BIGINT
);
INSERT INTO run_keys (run_id, run_key)
    SELECT run_id, row_number() OVER (ORDER BY run_id) FROM (
        SELECT run_id FROM runs UNION SELECT run_id FROM source_arrivals
        UNION SELECT run_id FROM operator_stats UNION SELECT run_id FROM node_busy
        UNION SELECT run_id FROM latency_stats);
UPDATE run_keys SET first_interval = s.lo, last_interval = s.hi FROM (
    SELECT run_id, min(interval) AS lo, max(interval) AS hi FROM (
        SELECT run_id, interval FROM source_arrivals
        UNION ALL SELECT run_id, interval FROM operator_stats
        UNION ALL SELECT run_id, interval FROM latency_stats) GROUP BY run_id) s
    WHERE run_keys.run_id = s.run_id;
ALTER TABLE runs ADD COLUMN last_ingested_at TIMESTAMP;
UPDATE runs SET last_ingested_at = s.finished FROM (
    SELECT f.run_id, max(b.finished_at) AS finished FROM ingest_files f
    JOIN ingest_batches b USING (batch_id) GROUP BY f.run_id) s
    WHERE runs.run_id = s.run_id;
-- What became of an ingested landing file (mace landing): NULL still there as ingested,
-- 'deleted', or 'compacted' into the file compacted_into (a row of landing_compactions).
ALTER TABLE ingest_files ADD COLUMN landing VARCHAR;
ALTER TABLE ingest_files ADD COLUMN compacted_into VARCHAR;
-- A landing file written by compaction: its rows are those of the ingest_files rows
-- compacted into it, already in the store, so ingestion never reads it.
CREATE TABLE landing_compactions (
    path        VARCHAR   PRIMARY KEY,
    run_id      VARCHAR   NOT NULL,
    record_set  VARCHAR   NOT NULL,
    files       BIGINT    NOT NULL,
    rows        BIGINT    NOT NULL,
    size_bytes  BIGINT    NOT NULL,
    modified_at DOUBLE    NOT NULL,
    created_at  TIMESTAMP NOT NULL DEFAULT current_timestamp
);
"""
    + _rebuilt(
        "source_arrivals",
        "run_id VARCHAR NOT NULL, source VARCHAR NOT NULL, interval BIGINT NOT NULL,"
        " events BIGINT NOT NULL",
        "run_id, source, interval",
        "source, interval",
    )
    + _rebuilt(
        "operator_stats",
        "run_id VARCHAR NOT NULL, operator VARCHAR NOT NULL, port INTEGER NOT NULL,"
        " interval BIGINT NOT NULL, events_in BIGINT NOT NULL, events_out BIGINT NOT NULL,"
        " cpu_seconds DOUBLE NOT NULL",
        "run_id, operator, port, interval",
        "operator, port, interval",
    )
    + _rebuilt(
        "node_busy",
        "run_id VARCHAR NOT NULL, node VARCHAR NOT NULL, interval BIGINT NOT NULL,"
        " busy_seconds DOUBLE NOT NULL",
        "run_id, node, interval",
        "node, interval",
    )
    + _rebuilt(
        "latency_stats",
        "run_id VARCHAR NOT NULL, query VARCHAR NOT NULL, interval BIGINT NOT NULL,"
        " outputs BIGINT NOT NULL, lat_sum DOUBLE NOT NULL, lat_max DOUBLE NOT NULL,"
        " lat_mean DOUBLE NOT NULL, lat_p50 DOUBLE NOT NULL, lat_p95 DOUBLE NOT NULL,"
        " lat_p99 DOUBLE NOT NULL, histogram BIGINT[] NOT NULL, quantiles_exact BOOLEAN NOT NULL",
        "run_id, query, interval",
        "query, interval",
    )
)

MIGRATIONS_FOLDER = Path(__file__).with_name("migrations")
"""Migrations after the 7th: one file ``NNN_name.sql`` each, numbered on from 8."""


def _file_migrations(first: int) -> tuple[str, ...]:
    """The SQL of the files in :data:`MIGRATIONS_FOLDER`, in order; their numbers must
    run on from ``first`` without a gap or a repeat."""
    files = sorted(MIGRATIONS_FOLDER.glob("*.sql"))
    numbers = [int(f.name.split("_", 1)[0]) for f in files]
    if numbers != list(range(first, first + len(files))):
        raise StorageError(
            f"{MIGRATIONS_FOLDER}: migration files numbered {numbers}, expected "
            f"{first}, {first + 1}, ... in order"
        )
    return tuple(f.read_text(encoding="utf-8") for f in files)


_BUILT_IN = (_V1, _V2, _V3, _V4, _V5, _V6, _V7)
MIGRATIONS: tuple[str, ...] = _BUILT_IN + _file_migrations(len(_BUILT_IN) + 1)
SCHEMA_VERSION = len(MIGRATIONS)


def current_version(con: duckdb.DuckDBPyConnection) -> int:
    """The highest applied migration (0 for an empty database)."""
    with storage_errors("reading schema version"):
        exists = con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = ?",
            ["schema_version"],
        ).fetchall()
        if not exists[0][0]:
            return 0
        rows = con.execute("SELECT max(version) FROM schema_version").fetchall()
    # fetchall, not fetchone: DuckDB 2 refuses further work while a result is unfinished.
    return int(rows[0][0]) if rows[0][0] is not None else 0


def migrate(con: duckdb.DuckDBPyConnection) -> int:
    """Apply the missing migrations in order; return the resulting version."""
    with storage_errors("creating schema"):
        con.execute(
            "CREATE TABLE IF NOT EXISTS schema_version ("
            " version INTEGER PRIMARY KEY,"
            " applied_at TIMESTAMP NOT NULL DEFAULT current_timestamp)"
        )
    version = current_version(con)
    if version > SCHEMA_VERSION:
        raise StorageError(
            f"database schema version {version} is newer than this program "
            f"(knows up to {SCHEMA_VERSION}); upgrade mace"
        )
    for number in range(version + 1, SCHEMA_VERSION + 1):
        what = f"applying migration {number} (schema version {version} to {SCHEMA_VERSION})"
        with transaction(con, what), storage_errors(what):
            con.execute(MIGRATIONS[number - 1])
            con.execute("INSERT INTO schema_version (version) VALUES (?)", [number])
    return SCHEMA_VERSION


def check_schema(con: duckdb.DuckDBPyConnection, file: Path) -> None:
    """For read-only use: the database must already hold the current schema."""
    version = current_version(con)
    if version == 0:
        raise StorageError(f"{file}: not a mace store (no schema_version table)")
    if version != SCHEMA_VERSION:
        raise StorageError(
            f"{file}: schema version {version}, expected {SCHEMA_VERSION}; "
            "open it once for writing (e.g. mace ingest) to migrate it"
        )
