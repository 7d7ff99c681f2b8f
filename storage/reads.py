"""Typed reads for the estimator, the dashboard and the reports.

Intervals are subinterval indexes; ranges are half-open ``[start, stop)``.
Frames come back sorted by their key. Unknown runs raise :class:`StorageError`.
Reads return rows and frames; what aggregates them lives with its user
(:func:`estimator.arrivals.arrivals_window`, :func:`dashboard.core.data.latency_rollup`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from estimator.arrivals import MAX_INTERVALS
from estimator.model import (
    Topology,
    node_entry,
    topology_from_dict,
    version_at,
    version_starts,
)
from storage.db import storage_errors
from storage.errors import StorageError


@dataclass(frozen=True)
class RunInfo:
    """A run and the range of intervals holding statistics (None when it has none yet)."""

    run_id: str
    name: str
    subinterval: float
    origin: float
    first_interval: int | None
    last_interval: int | None
    counters: bool = False  # statistics from counter samples (samples/), not per-event records
    profile_sub_buckets: int | None = None  # k of its node_profile rows (None: not fixed yet)


@dataclass(frozen=True)
class PlacementVersion:
    """One placement of a run, valid from ``valid_from`` (seconds, the run's clock), with
    every node's capacity in it (a version may rescale a vertex as well as move
    operators), and ``stopped_at``, when the job stopped processing before it (a Flink
    rescale's restart; None: no stop): nothing is served from then until ``valid_from``."""

    version: int
    valid_from: float
    placement: dict[str, str]
    capacities: dict[str, float] = field(default_factory=dict)
    stopped_at: float | None = None


def _query(con: duckdb.DuckDBPyConnection, what: str, sql: str, params: list[Any]) -> pd.DataFrame:
    with storage_errors(what):
        return con.execute(sql, params).df()


def _statistics(
    con: duckdb.DuckDBPyConnection, what: str, sql: str, params: list[Any], key: list[str]
) -> pd.DataFrame:
    """Rows of ``sql`` (a one-run read of a statistics table, no ORDER BY) sorted by
    ``key``, through Arrow.

    ``ORDER BY`` cost DuckDB 20 ms (rows stored in key order) to 55 ms (rows in the
    order the merges' upserts left them) of a run's 290 k operator rows; the rows
    come back from the scan as a few sorted stretches (one per ingested batch and
    upsert thread), which a stable sort of one integer per row merges in 6 ms, and
    rows already in order are only checked. Arrow's conversion gives the frame
    ``.df()`` gives (dtypes and values) in a fraction of the time.
    """
    with storage_errors(what):
        table = con.sql(sql, params=params).to_arrow_table()
    order = _sort_order(table, key)
    if order is not None:
        table = table.take(order)
    return table.to_pandas()


def _sort_order(table: pa.Table, key: list[str]) -> np.ndarray | None:
    """The permutation sorting ``table`` by ``key`` (strings by code point, as DuckDB's
    default collation; integers by value), or None when it is sorted already."""
    if table.num_rows < 2 or _in_order(table, key):
        return None
    codes, sizes = [], []
    for column in key:
        values = table[column].combine_chunks()
        if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
            encoded = values.dictionary_encode()
            names = encoded.dictionary.to_numpy(zero_copy_only=False)
            rank = np.empty(len(names), dtype=np.int64)
            rank[np.argsort(names)] = np.arange(len(names))
            code = rank[encoded.indices.to_numpy()]
        else:
            code = values.to_numpy().astype(np.int64, copy=False)
            code = code - code.min()
        codes.append(code)
        sizes.append(int(code.max()) + 1)
    if math.prod(sizes) >= 2**62:  # one integer per row would overflow: sort by columns
        return np.lexsort(codes[::-1])
    combined = codes[0]
    for code, size in zip(codes[1:], sizes[1:], strict=True):
        combined = combined * size + code
    return np.argsort(combined, kind="stable")


def _in_order(table: pa.Table, key: list[str]) -> bool:
    """Whether each row's ``key`` is below the next row's (3 ms for 290 k rows)."""
    rows = table.num_rows
    ordered = None
    for column in reversed(key):
        values = table[column]
        before, after = values.slice(0, rows - 1), values.slice(1)
        below = pc.less(before, after)
        ordered = (
            below if ordered is None else pc.or_(below, pc.and_(pc.equal(before, after), ordered))
        )
    return bool(pc.all(ordered).as_py())


def _range_clause(start: int | None, stop: int | None, params: list[Any]) -> str:
    """The SQL of an interval window; a window longer than the estimator's limit is
    refused before anything is read or allocated (a run stored before ingestion bounded
    run lengths may reach hundreds of millions of subintervals with one stray row)."""
    if stop is not None and stop - (start or 0) > MAX_INTERVALS:
        raise StorageError(
            f"a window of {stop - (start or 0)} subintervals, more than the limit of "
            f"{MAX_INTERVALS}: the run holds a row far beyond its other data; prune it "
            "(mace prune) and ingest it again"
        )
    clause = ""
    if start is not None:
        clause += " AND interval >= ?"
        params.append(int(start))
    if stop is not None:
        clause += " AND interval < ?"
        params.append(int(stop))
    return clause


_RUNS = (
    "SELECT r.run_id, r.name, r.subinterval, r.origin, k.first_interval, k.last_interval,"
    " EXISTS (SELECT 1 FROM sample_state c WHERE c.run_id = r.run_id) AS counters,"
    " r.profile_sub_buckets"
    " FROM runs r LEFT JOIN run_keys k USING (run_id)"
)


def _run_info(row: tuple[Any, ...]) -> RunInfo:
    run_id, name, subinterval, origin, first, last, counters, sub_buckets = row
    return RunInfo(
        str(run_id),
        str(name),
        float(subinterval),
        float(origin),
        None if first is None else int(first),
        None if last is None else int(last),
        bool(counters),
        None if sub_buckets is None else int(sub_buckets),
    )


def too_long(run: RunInfo) -> bool:
    """Whether the run's data reaches beyond :data:`MAX_INTERVALS` subintervals, so that
    reading all of it is refused (a stray row stored before run lengths were bounded)."""
    return run.last_interval is not None and run.last_interval + 1 > MAX_INTERVALS


def list_runs(con: duckdb.DuckDBPyConnection) -> list[RunInfo]:
    """All runs, by run_id, with their interval ranges (kept in ``run_keys`` by the
    writes, so listing reads no statistics)."""
    with storage_errors("listing runs"):
        rows = con.execute(_RUNS + " ORDER BY r.run_id").fetchall()
    return [_run_info(row) for row in rows]


def get_run(con: duckdb.DuckDBPyConnection, run_id: str) -> RunInfo:
    """One run; StorageError naming it if unknown."""
    with storage_errors(f"reading run '{run_id}'"):
        rows = con.execute(_RUNS + " WHERE r.run_id = ?", [run_id]).fetchall()
    if not rows:
        raise StorageError(f"unknown run '{run_id}'")
    return _run_info(rows[0])


def profile_sub_buckets(con: duckdb.DuckDBPyConnection, run_id: str) -> int | None:
    """The k of the run's stored node_profile (None: an unknown run, or one whose k is
    not fixed yet)."""
    with storage_errors(f"reading the profile grid of run '{run_id}'"):
        rows = con.execute(
            "SELECT profile_sub_buckets FROM runs WHERE run_id = ?", [run_id]
        ).fetchall()
    return None if not rows or rows[0][0] is None else int(rows[0][0])


def run_key(con: duckdb.DuckDBPyConnection, run_id: str) -> int:
    """The run's integer key, which statistics rows are filtered by (-1: no statistics
    yet, matching no row). See :mod:`storage` for why not run_id."""
    with storage_errors(f"reading the key of run '{run_id}'"):
        rows = con.execute("SELECT run_key FROM run_keys WHERE run_id = ?", [run_id]).fetchall()
    return int(rows[0][0]) if rows else -1


def interval_range(con: duckdb.DuckDBPyConnection, run_id: str) -> tuple[int, int] | None:
    """``(first, stop)`` of the intervals holding statistics (stop exclusive), or None."""
    run = get_run(con, run_id)
    if run.first_interval is None or run.last_interval is None:
        return None
    return run.first_interval, run.last_interval + 1


def placement_versions(con: duckdb.DuckDBPyConnection, run_id: str) -> list[PlacementVersion]:
    """The run's placements in version order (version 0 is the one of topology.yaml),
    each with its node capacities: ``node_capacities``' rows, else (version 0, or a
    version stored before them) ``nodes.capacity``, and the stop before it
    (``version_stops``)."""
    with storage_errors(f"reading placements of run '{run_id}'"):
        rows = con.execute(
            "SELECT version, valid_from, operator, node FROM placements WHERE run_id = ?"
            " ORDER BY version, operator",
            [run_id],
        ).fetchall()
        first = con.execute(
            "SELECT node, capacity FROM nodes WHERE run_id = ? ORDER BY position", [run_id]
        ).fetchall()
        later = con.execute(
            "SELECT version, node, capacity FROM node_capacities WHERE run_id = ?"
            " ORDER BY version, node",
            [run_id],
        ).fetchall()
        stops = con.execute(
            "SELECT version, stopped_at FROM version_stops WHERE run_id = ?", [run_id]
        ).fetchall()
    if not rows:
        get_run(con, run_id)
        raise StorageError(f"run '{run_id}' has no placement")
    base = {str(node): float(capacity) for node, capacity in first}
    versions: dict[int, PlacementVersion] = {}
    for version, valid_from, operator, node in rows:
        entry = versions.setdefault(
            int(version), PlacementVersion(int(version), float(valid_from), {}, dict(base))
        )
        entry.placement[str(operator)] = str(node)
    for version, node, capacity in later:
        if int(version) in versions and str(node) in base:
            versions[int(version)].capacities[str(node)] = float(capacity)
    for version, stopped_at in stops:
        if int(version) in versions:
            versions[int(version)] = replace(versions[int(version)], stopped_at=float(stopped_at))
    return list(versions.values())


def run_topology(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    interval: int | None = None,
    *,
    run: RunInfo | None = None,
    versions: list[PlacementVersion] | None = None,
) -> Topology:
    """Rebuild the run's Topology with the placement valid at the start of ``interval``
    (None: the latest placement version) and the node capacities of topology.yaml (a
    version's own are in :func:`placement_versions`: a model fitted on the run's start
    reads its threads at the capacities they had then). A caller holding the run's
    :func:`get_run` and :func:`placement_versions` passes them to spare reading them
    again."""
    run = run or get_run(con, run_id)
    params = [run_id]
    with storage_errors(f"reading topology of run '{run_id}'"):
        nodes = con.execute(
            "SELECT node, capacity, host, bundle_time, bundle_size, slots, python_workers,"
            " checkpoint_interval FROM nodes"
            " WHERE run_id = ? ORDER BY position",
            params,
        ).fetchall()
        sources = con.execute(
            "SELECT source, event_bytes FROM sources WHERE run_id = ? ORDER BY position", params
        ).fetchall()
        operators = con.execute(
            "SELECT operator, query, cost, selectivity, model, product_coefficient, event_bytes"
            " FROM operators WHERE run_id = ? ORDER BY position",
            params,
        ).fetchall()
        edges = con.execute(
            "SELECT operator, upstream FROM edges WHERE run_id = ? ORDER BY operator, port",
            params,
        ).fetchall()
        links = con.execute(
            "SELECT src, dst, delay, bandwidth FROM links WHERE run_id = ? ORDER BY src, dst",
            params,
        ).fetchall()
    inputs: dict[str, list[str]] = {}
    for operator, upstream in edges:
        inputs.setdefault(operator, []).append(upstream)
    versions = versions or placement_versions(con, run_id)
    if interval is None:
        chosen = versions[-1]
    else:
        starts = version_starts([v.valid_from for v in versions], run.origin, run.subinterval)
        chosen = versions[version_at(starts, interval)]
    document: dict[str, Any] = {
        "name": run.name,
        "subinterval": run.subinterval,
        "origin": run.origin,
        "nodes": [node_entry(*node) for node in nodes],
        "sources": [{"id": s, "event_bytes": b} for s, b in sources],
        "operators": [
            {
                "id": op,
                "query": query,
                "inputs": inputs.get(op, []),
                "cost": list(cost),
                "selectivity": list(selectivity),
                "model": model,
                "product_coefficient": coefficient,
                "event_bytes": size,
            }
            for op, query, cost, selectivity, model, coefficient, size in operators
        ],
        "placement": chosen.placement,
        "links": [
            {"from": s, "to": d, "delay": delay, "bandwidth": bandwidth}
            for s, d, delay, bandwidth in links
        ],
    }
    for entry in document["operators"]:
        if entry["model"] != "product":
            del entry["product_coefficient"]
    return topology_from_dict(document)


def source_arrivals_frame(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    start: int | None = None,
    stop: int | None = None,
) -> pd.DataFrame:
    """source, interval, events (:func:`estimator.arrivals.arrivals_window` makes the
    matrix the estimator uses)."""
    params: list[Any] = [run_key(con, run_id)]
    return _statistics(
        con,
        f"reading source_arrivals of run '{run_id}'",
        "SELECT source, interval, events FROM source_arrivals WHERE run_key = ?"
        + _range_clause(start, stop, params),
        params,
        ["source", "interval"],
    )


def operator_stats_frame(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    start: int | None = None,
    stop: int | None = None,
) -> pd.DataFrame:
    """operator, port, interval, events_in, events_out, cpu_seconds, work_seconds (NaN
    where not measured)."""
    params: list[Any] = [run_key(con, run_id)]
    return _statistics(
        con,
        f"reading operator_stats of run '{run_id}'",
        "SELECT operator, port, interval, events_in, events_out, cpu_seconds, work_seconds"
        " FROM operator_stats WHERE run_key = ?" + _range_clause(start, stop, params),
        params,
        ["operator", "port", "interval"],
    )


def operator_cpu_frame(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    start: int | None = None,
    stop: int | None = None,
) -> pd.DataFrame:
    """operator, interval, cpu: operator_stats.cpu_seconds summed over ports (the
    measured operator DLTS; :func:`estimator.runs.node_loads` maps it to nodes)."""
    params: list[Any] = [run_key(con, run_id)]
    return _query(
        con,
        f"reading operator_stats of run '{run_id}'",
        "SELECT operator, interval, sum(cpu_seconds) AS cpu FROM operator_stats"
        " WHERE run_key = ?" + _range_clause(start, stop, params) + " GROUP BY ALL"
        " ORDER BY operator, interval",
        params,
    )


def node_busy_frame(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    start: int | None = None,
    stop: int | None = None,
) -> pd.DataFrame:
    """node, interval, busy_seconds (wall-clock buckets)."""
    params: list[Any] = [run_key(con, run_id)]
    return _statistics(
        con,
        f"reading node_busy of run '{run_id}'",
        "SELECT node, interval, busy_seconds FROM node_busy WHERE run_key = ?"
        + _range_clause(start, stop, params),
        params,
        ["node", "interval"],
    )


def node_profile_frame(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    start: int | None = None,
    stop: int | None = None,
) -> pd.DataFrame:
    """node, interval, sub_bucket, cpu_seconds (stimulus-time buckets; empty for a run
    ingested before migration 8 or measured by counters)."""
    params: list[Any] = [run_key(con, run_id)]
    return _query(
        con,
        f"reading node_profile of run '{run_id}'",
        "SELECT node, interval, sub_bucket, cpu_seconds FROM node_profile WHERE run_key = ?"
        + _range_clause(start, stop, params)
        + " ORDER BY node, interval, sub_bucket",
        params,
    )


def source_profile_frame(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    start: int | None = None,
    stop: int | None = None,
) -> pd.DataFrame:
    """source, interval, sub_bucket, events (stimulus-time buckets; empty for a run
    ingested before migration 9 or measured by counters)."""
    params: list[Any] = [run_key(con, run_id)]
    return _statistics(
        con,
        f"reading source_profile of run '{run_id}'",
        "SELECT source, interval, sub_bucket, events FROM source_profile WHERE run_key = ?"
        + _range_clause(start, stop, params),
        params,
        ["source", "interval", "sub_bucket"],
    )


def latency_stats_frame(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    query: str | None = None,
    start: int | None = None,
    stop: int | None = None,
    *,
    with_histogram: bool = False,
) -> pd.DataFrame:
    """query, interval, outputs, lat_max, lat_mean, lat_p50, lat_p95, lat_p99,
    quantiles_exact (and histogram if asked)."""
    params: list[Any] = [run_key(con, run_id)]
    where = ""
    if query is not None:
        where = " AND query = ?"
        params.append(query)
    columns = "query, interval, outputs, lat_sum, lat_max, lat_mean, lat_p50, lat_p95, lat_p99"
    columns += ", quantiles_exact" + (", histogram" if with_histogram else "")
    return _statistics(
        con,
        f"reading latency_stats of run '{run_id}'",
        f"SELECT {columns} FROM latency_stats WHERE run_key = ?{where}"
        + _range_clause(start, stop, params),
        params,
        ["query", "interval"],
    )


def ingested_paths(con: duckdb.DuckDBPyConnection) -> set[str]:
    """Paths of every file in the manifest (already ingested) and of every file written
    by landing compaction (its rows are ingested already)."""
    with storage_errors("reading ingest_files"):
        rows = con.execute(
            "SELECT path FROM ingest_files UNION ALL SELECT path FROM landing_compactions"
        ).fetchall()
    return {str(r[0]) for r in rows}


def given_up_files(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[int, float]]:
    """path -> (size, modification time) of every file that was quarantined whole (given
    up as unreadable): read again once either changes."""
    with storage_errors("reading ingest_files"):
        rows = con.execute(
            "SELECT f.path, f.size_bytes, f.modified_at FROM ingest_files f"
            " WHERE f.rows_read = 0 AND EXISTS (SELECT 1 FROM quarantine q"
            "  WHERE q.file = f.path AND q.row_number IS NULL)"
        ).fetchall()
    return {str(path): (int(size), float(modified)) for path, size, modified in rows}


def sample_state_frame(con: duckdb.DuckDBPyConnection, run_id: str) -> pd.DataFrame:
    """The stored newest counter sample of each (operator, subtask, port) of a run."""
    return _query(
        con,
        "reading sample_state",
        "SELECT operator, subtask, port, time, node, records_in, records_out, busy_seconds,"
        " work_seconds FROM sample_state WHERE run_id = ? ORDER BY operator, subtask, port",
        [run_id],
    )


def topology_stamps(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """run_id -> the stamp of the topology files its stored topology came from."""
    with storage_errors("reading run_topology_stamps"):
        rows = con.execute("SELECT run_id, stamp FROM run_topology_stamps").fetchall()
    return {str(run_id): str(stamp) for run_id, stamp in rows}
