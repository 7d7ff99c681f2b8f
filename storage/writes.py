"""Writing runs, topologies and statistics; used by ingestion's load step and by tests.

Statistics are *merged*: a row whose key already exists is added to (counts
and sums add, max is max, histograms add), so late rows update their interval
and loading two halves of the data equals loading all of it. Call these
inside :func:`storage.db.transaction` to make a whole batch atomic.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa

from estimator.model import Topology
from storage.db import storage_errors
from storage.histogram import BUCKETS, quantile_from_histogram

_names = itertools.count()

SOURCE_ARRIVALS_COLUMNS = ("run_id", "source", "interval", "events")
OPERATOR_STATS_COLUMNS = (
    "run_id",
    "operator",
    "port",
    "interval",
    "events_in",
    "events_out",
    "cpu_seconds",
    "work_seconds",
)
NODE_BUSY_COLUMNS = ("run_id", "node", "interval", "busy_seconds")
NODE_PROFILE_COLUMNS = ("run_id", "node", "interval", "sub_bucket", "cpu_seconds")
SOURCE_PROFILE_COLUMNS = ("run_id", "source", "interval", "sub_bucket", "events")
LATENCY_COLUMNS = (
    "run_id",
    "query",
    "interval",
    "outputs",
    "lat_sum",
    "lat_max",
    "lat_p50",
    "lat_p95",
    "lat_p99",
    "histogram",
)
QUARANTINE_COLUMNS = ("run_id", "record_set", "file", "row_number", "reason", "raw")


@dataclass(frozen=True)
class ManifestEntry:
    """One ingested file for the manifest table ``ingest_files``."""

    path: str
    run_id: str
    record_set: str
    size_bytes: int
    modified_at: float
    rows_read: int
    rows_quarantined: int


Version = (
    tuple[float, Mapping[str, str]]
    | tuple[float, Mapping[str, str], Mapping[str, float]]
    | tuple[float, Mapping[str, str], Mapping[str, float], float | None]
)
"""A later placement version: (valid_from, placement), optionally with its node
capacities and the time the job stopped before it (None: no stop), e.g. from
``topology-<epoch>.yaml``."""


def write_run(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    topology: Topology,
    versions: Sequence[Version] = (),
    profile_sub_buckets: int | None = None,
) -> None:
    """Replace a run's description: the topology and its placement versions.

    Version 0 is ``topology.placement``, valid from the run's origin, with the
    topology's node capacities; ``versions`` are later ones (:data:`Version`), each
    with the capacities of its nodes (a node it leaves out, or a version without
    capacities: the topology's).
    ``profile_sub_buckets`` is the k of its node_profile rows; a k already stored
    stays (the rows merged later must share the grid of the stored ones).
    """
    with storage_errors(f"writing run '{run_id}'"):
        for table in (
            "nodes",
            "sources",
            "operators",
            "edges",
            "links",
            "placements",
            "node_capacities",
            "version_stops",
        ):
            con.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])
        # an upsert, not delete + insert: created_at and last_ingested_at stay
        con.execute(
            "INSERT INTO runs (run_id, name, subinterval, origin, profile_sub_buckets)"
            " VALUES (?, ?, ?, ?, ?)"
            " ON CONFLICT (run_id) DO UPDATE SET name = excluded.name,"
            " subinterval = excluded.subinterval, origin = excluded.origin,"
            " profile_sub_buckets = coalesce(runs.profile_sub_buckets,"
            " excluded.profile_sub_buckets)",
            [run_id, topology.name, topology.subinterval, topology.origin, profile_sub_buckets],
        )
        _ensure_run_keys(con, [run_id])
        con.executemany(
            "INSERT INTO nodes (run_id, node, capacity, position, host, bundle_time,"
            " bundle_size, slots, python_workers, checkpoint_interval)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                [
                    run_id,
                    n.id,
                    n.capacity,
                    k,
                    n.host,
                    n.bundle_time,
                    n.bundle_size,
                    n.slots,
                    n.python_workers,
                    n.checkpoint_interval,
                ]
                for k, n in enumerate(topology.nodes)
            ],
        )
        con.executemany(
            "INSERT INTO sources VALUES (?, ?, ?, ?)",
            [[run_id, s.id, s.event_bytes, k] for k, s in enumerate(topology.sources)],
        )
        con.executemany(
            "INSERT INTO operators VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                [
                    run_id,
                    o.id,
                    o.query,
                    list(o.cost),
                    list(o.selectivity),
                    o.model,
                    o.product_coefficient,
                    o.event_bytes,
                    k,
                ]
                for k, o in enumerate(topology.operators)
            ],
        )
        con.executemany(
            "INSERT INTO edges VALUES (?, ?, ?, ?)",
            [
                [run_id, upstream, o.id, port]
                for o in topology.operators
                for port, upstream in enumerate(o.inputs)
            ],
        )
        if topology.links:
            con.executemany(
                "INSERT INTO links VALUES (?, ?, ?, ?, ?)",
                [[run_id, lk.src, lk.dst, lk.delay, lk.bandwidth] for lk in topology.links],
            )
        later = sorted(versions, key=_first)
        all_versions = [(topology.origin, topology.placement), *[(v[0], v[1]) for v in later]]
        con.executemany(
            "INSERT INTO placements VALUES (?, ?, ?, ?, ?)",
            [
                [run_id, version, valid_from, op, node]
                for version, (valid_from, placement) in enumerate(all_versions)
                for op, node in placement.items()
            ],
        )
        capacities = [v[2] if len(v) > 2 else {} for v in later]
        if capacities:
            con.executemany(
                "INSERT INTO node_capacities VALUES (?, ?, ?, ?)",
                [
                    [run_id, version, n.id, float(own.get(n.id, n.capacity))]
                    for version, own in enumerate(capacities, start=1)
                    for n in topology.nodes
                ],
            )
        stops = [
            [run_id, version, float(v[3])]
            for version, v in enumerate(later, start=1)
            if len(v) > 3 and v[3] is not None
        ]
        if stops:
            con.executemany("INSERT INTO version_stops VALUES (?, ?, ?)", stops)


def _first(version: Version) -> float:
    return version[0]


def _register(con: duckdb.DuckDBPyConnection, frame: pd.DataFrame) -> str:
    name = f"incoming_{next(_names)}"
    con.register(name, frame)
    return name


def _checked(frame: pd.DataFrame, columns: Iterable[str], table: str) -> pd.DataFrame:
    wanted = list(columns)
    if frame.empty:
        return frame.reindex(columns=wanted)
    missing = [c for c in wanted if c not in frame.columns]
    if missing:
        raise ValueError(f"{table}: frame lacks column(s) {', '.join(missing)}")
    return frame[wanted]


def _ensure_run_keys(con: duckdb.DuckDBPyConnection, run_ids: Iterable[str]) -> None:
    """Give each new run the next integer ``run_key`` (see :mod:`storage`)."""
    ids = sorted(set(run_ids))
    with storage_errors("writing run_keys"):
        known = {
            r[0]
            for r in con.execute(
                "SELECT run_id FROM run_keys WHERE list_contains(?, run_id)", [ids]
            ).fetchall()
        }
        new = [run_id for run_id in ids if run_id not in known]
        if new:
            first = con.execute("SELECT coalesce(max(run_key), 0) + 1 FROM run_keys").fetchall()
            con.executemany(
                "INSERT INTO run_keys (run_id, run_key) VALUES (?, ?)",
                [[run_id, int(first[0][0]) + k] for k, run_id in enumerate(new)],
            )


def _merge(
    con: duckdb.DuckDBPyConnection,
    frame: pd.DataFrame | pa.Table,
    table: str,
    sql: str,
    *,
    span: bool = True,
) -> None:
    """Run ``sql`` with ``{incoming}`` naming ``frame`` (which has run_id), after giving
    its runs their keys; with ``span``, widen each run's span of intervals to its rows."""
    if len(frame) == 0:
        return
    name = f"incoming_{next(_names)}"
    con.register(name, frame)
    try:
        with storage_errors(f"merging {table}"):
            run_ids = con.execute(f"SELECT DISTINCT run_id FROM {name}").fetchall()
            _ensure_run_keys(con, [str(r[0]) for r in run_ids])
            con.execute(sql.format(incoming=name))
            if span:
                con.execute(
                    "UPDATE run_keys SET"
                    " first_interval = least(coalesce(run_keys.first_interval, s.lo), s.lo),"
                    " last_interval = greatest(coalesce(run_keys.last_interval, s.hi), s.hi)"
                    " FROM (SELECT run_id, min(interval) AS lo, max(interval) AS hi"
                    f" FROM {name} GROUP BY run_id) s WHERE run_keys.run_id = s.run_id"
                )
    finally:
        con.unregister(name)


def merge_source_arrivals(con: duckdb.DuckDBPyConnection, frame: pd.DataFrame) -> None:
    """Add events per (run_id, source, interval)."""
    _merge(
        con,
        _checked(frame, SOURCE_ARRIVALS_COLUMNS, "source_arrivals"),
        "source_arrivals",
        "INSERT INTO source_arrivals (run_id, source, interval, events, run_key)"
        " SELECT i.*, k.run_key FROM (SELECT run_id, source, interval, sum(events)"
        " FROM {incoming} GROUP BY ALL) i JOIN run_keys k USING (run_id)"
        " ORDER BY k.run_key, source, interval"
        " ON CONFLICT (run_id, source, interval) DO UPDATE"
        " SET events = source_arrivals.events + excluded.events",
    )


def merge_operator_stats(con: duckdb.DuckDBPyConnection, frame: pd.DataFrame) -> None:
    """Add events_in, events_out, cpu_seconds and work_seconds per (run_id, operator,
    port, interval); ``work_seconds`` may be left out (NULL: not measured), and a sum
    stays NULL only while no row measured it."""
    if "work_seconds" not in frame.columns:
        frame = frame.assign(work_seconds=np.nan)
    _merge(
        con,
        _checked(frame, OPERATOR_STATS_COLUMNS, "operator_stats"),
        "operator_stats",
        "INSERT INTO operator_stats (run_id, operator, port, interval, events_in, events_out,"
        " cpu_seconds, work_seconds, run_key)"
        " SELECT i.*, k.run_key FROM (SELECT run_id, operator, port, interval,"
        " sum(events_in), sum(events_out), sum(cpu_seconds), sum(work_seconds)"
        " FROM {incoming} GROUP BY ALL) i"
        " JOIN run_keys k USING (run_id) ORDER BY k.run_key, operator, port, interval"
        " ON CONFLICT (run_id, operator, port, interval) DO UPDATE SET"
        " events_in = operator_stats.events_in + excluded.events_in,"
        " events_out = operator_stats.events_out + excluded.events_out,"
        " cpu_seconds = operator_stats.cpu_seconds + excluded.cpu_seconds,"
        " work_seconds = CASE WHEN operator_stats.work_seconds IS NULL"
        " AND excluded.work_seconds IS NULL THEN NULL"
        " ELSE coalesce(operator_stats.work_seconds, 0) + coalesce(excluded.work_seconds, 0) END",
    )


def merge_node_busy(con: duckdb.DuckDBPyConnection, frame: pd.DataFrame) -> None:
    """Add busy_seconds per (run_id, node, interval)."""
    _merge(
        con,
        _checked(frame, NODE_BUSY_COLUMNS, "node_busy"),
        "node_busy",
        "INSERT INTO node_busy (run_id, node, interval, busy_seconds, run_key)"
        " SELECT i.*, k.run_key FROM (SELECT run_id, node, interval, sum(busy_seconds)"
        " FROM {incoming} GROUP BY ALL) i JOIN run_keys k USING (run_id)"
        " ORDER BY k.run_key, node, interval"
        " ON CONFLICT (run_id, node, interval) DO UPDATE"
        " SET busy_seconds = node_busy.busy_seconds + excluded.busy_seconds",
        span=False,
    )


def merge_node_profile(con: duckdb.DuckDBPyConnection, frame: pd.DataFrame) -> None:
    """Add cpu_seconds per (run_id, node, interval, sub_bucket) (the arrival profile of
    the burst-aware estimator; stimulus-time intervals, as operator_stats)."""
    _merge(
        con,
        _checked(frame, NODE_PROFILE_COLUMNS, "node_profile"),
        "node_profile",
        "INSERT INTO node_profile (run_id, node, interval, sub_bucket, cpu_seconds, run_key)"
        " SELECT i.*, k.run_key FROM (SELECT run_id, node, interval, sub_bucket,"
        " sum(cpu_seconds) FROM {incoming} GROUP BY ALL) i JOIN run_keys k USING (run_id)"
        " ORDER BY k.run_key, node, interval, sub_bucket"
        " ON CONFLICT (run_id, node, interval, sub_bucket) DO UPDATE"
        " SET cpu_seconds = node_profile.cpu_seconds + excluded.cpu_seconds",
        span=False,
    )


def merge_source_profile(con: duckdb.DuckDBPyConnection, frame: pd.DataFrame) -> None:
    """Add events per (run_id, source, interval, sub_bucket) (the arrival profile that
    predictions push through the fitted model; stimulus-time intervals, as
    source_arrivals)."""
    _merge(
        con,
        _checked(frame, SOURCE_PROFILE_COLUMNS, "source_profile"),
        "source_profile",
        "INSERT INTO source_profile (run_id, source, interval, sub_bucket, events, run_key)"
        " SELECT i.*, k.run_key FROM (SELECT run_id, source, interval, sub_bucket,"
        " sum(events) FROM {incoming} GROUP BY ALL) i JOIN run_keys k USING (run_id)"
        " ORDER BY k.run_key, source, interval, sub_bucket"
        " ON CONFLICT (run_id, source, interval, sub_bucket) DO UPDATE"
        " SET events = source_profile.events + excluded.events",
        span=False,
    )


def merge_latency_stats(con: duckdb.DuckDBPyConnection, frame: pd.DataFrame) -> None:
    """Merge per (run_id, query, interval) latency aggregates into ``latency_stats``.

    ``frame`` holds one row per key with ``histogram`` a length-``BUCKETS`` count
    vector and the batch's exact quantiles (NaN when unknown). A key that is new
    keeps those exact quantiles (``quantiles_exact``); a key that already
    exists is merged (outputs and lat_sum add, lat_max is the max, histograms
    add) and its quantiles are then read from the merged histogram. Rows are
    merged as arrays and inserted as one Arrow table (row-by-row parameters cost
    about 15 ms a row).
    """
    incoming = _checked(frame, LATENCY_COLUMNS, "latency_stats").reset_index(drop=True)
    if incoming.empty:
        return
    histograms = _histograms(incoming["histogram"])
    keys = ["run_id", "query", "interval"]
    name = _register(con, incoming[keys])
    try:
        with storage_errors("reading latency_stats"):
            existing = con.execute(
                "SELECT l.run_id, l.query, l.interval, l.outputs, l.lat_sum, l.lat_max,"
                f" l.histogram FROM latency_stats l JOIN {name} i"
                " USING (run_id, query, interval)"
            ).df()
    finally:
        con.unregister(name)
    outputs = incoming["outputs"].to_numpy(dtype=np.int64)
    lat_sum = incoming["lat_sum"].to_numpy(dtype=float)
    lat_max = incoming["lat_max"].to_numpy(dtype=float)
    quantiles = incoming[["lat_p50", "lat_p95", "lat_p99"]].to_numpy(dtype=float)
    if not existing.empty:
        previous = incoming[keys].merge(existing, on=keys, how="left")
        merged = previous["outputs"].notna().to_numpy()
        old = previous[merged]
        histograms[merged] += _histograms(old["histogram"])
        outputs[merged] += old["outputs"].to_numpy(dtype=np.int64)
        lat_sum[merged] += old["lat_sum"].to_numpy(dtype=float)
        lat_max[merged] = np.maximum(lat_max[merged], old["lat_max"].to_numpy(dtype=float))
        quantiles[merged] = np.nan
    exact = ~np.isnan(quantiles).any(axis=1)
    for row in np.flatnonzero(~exact):
        quantiles[row] = [
            quantile_from_histogram(histograms[row], q, float(lat_max[row]))
            for q in (0.5, 0.95, 0.99)
        ]
    table = pa.table(
        {
            "run_id": pa.array(incoming["run_id"].astype(str)),
            "query": pa.array(incoming["query"].astype(str)),
            "interval": pa.array(incoming["interval"].to_numpy(dtype=np.int64)),
            "outputs": outputs,
            "lat_sum": lat_sum,
            "lat_max": lat_max,
            "lat_mean": lat_sum / outputs,
            "lat_p50": quantiles[:, 0],
            "lat_p95": quantiles[:, 1],
            "lat_p99": quantiles[:, 2],
            "histogram": pa.ListArray.from_arrays(
                np.arange(0, histograms.size + 1, BUCKETS, dtype=np.int32), histograms.reshape(-1)
            ),
            "quantiles_exact": exact,
        }
    )
    _merge(
        con,
        table,
        "latency_stats",
        "INSERT OR REPLACE INTO latency_stats SELECT i.*, k.run_key FROM {incoming} i"
        " JOIN run_keys k USING (run_id) ORDER BY k.run_key, i.query, i.interval",
    )


def _histograms(column: pd.Series) -> np.ndarray:
    """(rows x BUCKETS) int64 counts; ValueError if a histogram has the wrong length."""
    rows = [np.asarray(h, dtype=np.int64) for h in column]
    if any(h.shape != (BUCKETS,) for h in rows):
        raise ValueError(f"latency_stats: histogram must have {BUCKETS} buckets")
    return np.stack(rows) if rows else np.zeros((0, BUCKETS), dtype=np.int64)


def add_quarantine(con: duckdb.DuckDBPyConnection, batch_id: int, frame: pd.DataFrame) -> None:
    """Append bad rows (run_id, record_set, file, row_number, reason, raw)."""
    rows = _checked(frame, QUARANTINE_COLUMNS, "quarantine").copy()
    if rows.empty:
        return
    rows["batch_id"] = batch_id
    name = _register(con, rows)
    try:
        with storage_errors("writing quarantine"):
            con.execute(
                "INSERT INTO quarantine SELECT run_id, record_set, file,"
                f" CAST(row_number AS BIGINT), reason, raw, batch_id FROM {name}"
            )
    finally:
        con.unregister(name)


def next_batch_id(con: duckdb.DuckDBPyConnection) -> int:
    """One more than the largest batch id so far."""
    with storage_errors("reading ingest_batches"):
        rows = con.execute("SELECT coalesce(max(batch_id), 0) + 1 FROM ingest_batches").fetchall()
    return int(rows[0][0])


def record_batch(
    con: duckdb.DuckDBPyConnection,
    batch_id: int,
    files: Sequence[ManifestEntry],
    *,
    rows_kept: int,
    started_at: datetime,
    finished_at: datetime,
) -> None:
    """Write the batch row and its files into the manifest (marks them ingested)."""
    rows_read = sum(f.rows_read for f in files)
    quarantined = sum(f.rows_quarantined for f in files)
    run_ids = sorted({f.run_id for f in files})
    with storage_errors("writing ingest_batches"):
        if run_ids:  # the runs' age (mace prune): when a file of theirs was last recorded
            con.execute(
                "UPDATE runs SET last_ingested_at = ? WHERE list_contains(?, run_id)",
                [finished_at, run_ids],
            )
        con.execute(
            "INSERT INTO ingest_batches VALUES (?, ?, ?, ?, ?, ?, ?)",
            [batch_id, len(files), rows_read, rows_kept, quarantined, started_at, finished_at],
        )
        if files:
            con.executemany(
                # OR REPLACE: a file given up earlier and changed since is read again
                "INSERT OR REPLACE INTO ingest_files (path, run_id, record_set, size_bytes,"
                " modified_at, batch_id, rows_read, rows_quarantined)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    [
                        f.path,
                        f.run_id,
                        f.record_set,
                        f.size_bytes,
                        f.modified_at,
                        batch_id,
                        f.rows_read,
                        f.rows_quarantined,
                    ]
                    for f in files
                ],
            )


SAMPLE_STATE_COLUMNS = (
    "run_id", "operator", "subtask", "port", "time", "node", "records_in", "records_out",
    "busy_seconds", "work_seconds",
)  # fmt: skip


def replace_sample_state(con: duckdb.DuckDBPyConnection, frame: pd.DataFrame) -> None:
    """Keep the newest counter sample per (run_id, operator, subtask, port)."""
    _merge(
        con,
        _checked(frame, SAMPLE_STATE_COLUMNS, "sample_state"),
        "sample_state",
        "INSERT OR REPLACE INTO sample_state SELECT * FROM {incoming}",
        span=False,
    )


def set_topology_stamp(con: duckdb.DuckDBPyConnection, run_id: str, stamp: str) -> None:
    """Remember which topology files the run's stored topology was loaded from."""
    with storage_errors(f"recording the topology stamp of run '{run_id}'"):
        con.execute("INSERT OR REPLACE INTO run_topology_stamps VALUES (?, ?)", [run_id, stamp])


def record_run_failure(
    con: duckdb.DuckDBPyConnection, run_id: str, reason: str, fingerprint: str, at: datetime
) -> None:
    """Mark a run as failed by ingestion (replacing an earlier failure of it)."""
    with storage_errors(f"recording the failure of run '{run_id}'"):
        con.execute(
            "INSERT OR REPLACE INTO run_failures VALUES (?, ?, ?, ?)",
            [run_id, reason, fingerprint, at],
        )


def clear_run_failure(con: duckdb.DuckDBPyConnection, run_id: str) -> None:
    """Forget a run's failure once its files were ingested."""
    with storage_errors(f"clearing the failure of run '{run_id}'"):
        con.execute("DELETE FROM run_failures WHERE run_id = ?", [run_id])


def forget_given_up(con: duckdb.DuckDBPyConnection, paths: Sequence[str]) -> None:
    """Delete the whole-file quarantine rows of files given up earlier and read again."""
    if not paths:
        return
    with storage_errors("clearing the quarantine of files read again"):
        con.executemany(
            "DELETE FROM quarantine WHERE file = ? AND row_number IS NULL", [[p] for p in paths]
        )
