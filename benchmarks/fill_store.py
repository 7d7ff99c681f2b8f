"""Fill a DuckDB store with a history of runs, written through :mod:`storage.writes`.

Each run is ``clickstream-5q`` on 13 nodes (70 operators, 5 sources, 5 queries) over
3600 subintervals of 1 s, as ``mace ingest`` would store it: the topology
(:func:`write_run`), then one transaction per run of source arrivals, operator stats
(per operator, port and interval), node busy time, latency aggregates with their
histograms, a few quarantined rows and the manifest of the run's landing files
(one file per record set and minute). Values are synthetic but shaped like a real
run: On-Off arrivals (resampled per run), events propagated through the operator
graph, CPU = cost x events with noise, busy time capped at the subinterval, latency
rising with the busiest node's backlog. Run ``k`` of ``N`` was last ingested
``N - k`` days ago, so ``mace prune --older-than`` has something to choose from.

    .venv/bin/python benchmarks/fill_store.py --db /tmp/history.duckdb --json

Prints the fill time, the file size and the row count of each table.
"""

from __future__ import annotations

import argparse
import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from estimator.model import Topology
from estimator.propagation import build_load_model
from simulator.workloads import workload
from storage import writes
from storage.db import connect, transaction
from storage.histogram import BUCKETS, buckets_of

RECORD_SETS = ("arrivals", "executions", "outputs")
FILE_SECONDS = 60  # one landing file per record set and minute of the run


def run_name(k: int, day: datetime) -> str:
    """A run id as a landing folder would name it (a long common prefix, like real ids)."""
    return f"clickstream-{day:%Y-%m-%d}-{k:03d}"


def base_counts(topology: Topology, times: dict[str, np.ndarray], intervals: int) -> np.ndarray:
    counts = np.zeros((len(topology.source_ids), intervals))
    for row, source in enumerate(topology.source_ids):
        bins = np.floor(np.asarray(times[source]) / topology.subinterval).astype(np.int64)
        bins = bins[(bins >= 0) & (bins < intervals)]
        counts[row] = np.bincount(bins, minlength=intervals)
    return counts


def run_frames(
    run_id: str, topology: Topology, base: np.ndarray, rng: np.random.Generator
) -> dict[str, pd.DataFrame]:
    """The statistics of one run, as the frames ingestion hands to storage.writes."""
    intervals = base.shape[1]
    counts = rng.poisson(base * rng.uniform(0.8, 1.2)).astype(float)
    model = build_load_model(topology, counts)
    interval_index = np.arange(intervals)
    arrivals = pd.DataFrame(
        {
            "run_id": run_id,
            "source": np.repeat(topology.source_ids, intervals),
            "interval": np.tile(interval_index, len(topology.source_ids)),
            "events": counts.reshape(-1).astype(np.int64),
        }
    )
    stats = []
    cpu = np.zeros((len(topology.operators), intervals))
    for j, op in enumerate(topology.operators):
        out = np.round(model.output_series(j))
        for port in range(len(op.inputs)):
            events = np.round(model.input_series(j, port))
            seconds = op.cost[port] * events * rng.lognormal(0.0, 0.1, intervals)
            cpu[j] += seconds
            stats.append(
                pd.DataFrame(
                    {
                        "run_id": run_id,
                        "operator": op.id,
                        "port": port,
                        "interval": interval_index,
                        "events_in": events.astype(np.int64),
                        "events_out": (out if port == 0 else np.zeros(intervals)).astype(np.int64),
                        "cpu_seconds": seconds,
                    }
                )
            )
    node_of = topology.placement
    node_ids = list(topology.node_ids)
    load = np.zeros((len(node_ids), intervals))
    for j, op in enumerate(topology.operators):
        load[node_ids.index(node_of[op.id])] += cpu[j]
    capacity = np.array([topology.capacity_by_node[n] for n in node_ids])[:, None]
    busy = np.minimum(load / capacity, topology.subinterval)
    node_busy = pd.DataFrame(
        {
            "run_id": run_id,
            "node": np.repeat(node_ids, intervals),
            "interval": np.tile(interval_index, len(node_ids)),
            "busy_seconds": busy.reshape(-1),
        }
    )
    backlog = np.maximum.accumulate(np.maximum(load / capacity - topology.subinterval, 0.0), axis=1)
    latency = [latency_rows(run_id, q, backlog.max(axis=0), rng) for q in topology.queries]
    return {
        "source_arrivals": arrivals,
        "operator_stats": pd.concat(stats, ignore_index=True),
        "node_busy": node_busy,
        "latency": pd.concat(latency, ignore_index=True),
    }


def latency_rows(
    run_id: str, query: str, backlog: np.ndarray, rng: np.random.Generator
) -> pd.DataFrame:
    """Per-interval latency aggregates with a histogram spread around the median bucket."""
    intervals = len(backlog)
    outputs = rng.poisson(200.0, intervals) + 1
    median = 0.005 * rng.lognormal(0.0, 0.2, intervals) + 0.2 * backlog
    lat_max = median * rng.uniform(2.0, 4.0, intervals)
    offsets = np.arange(-4, 5)
    weights = np.exp(-0.5 * (offsets / 1.5) ** 2)
    spread = rng.multinomial(outputs, weights / weights.sum())
    columns = np.clip(buckets_of(median)[:, None] + offsets[None, :], 0, BUCKETS - 1)
    histograms = np.zeros((intervals, BUCKETS), dtype=np.int64)
    np.add.at(histograms, (np.arange(intervals)[:, None], columns), spread)
    return pd.DataFrame(
        {
            "run_id": run_id,
            "query": query,
            "interval": np.arange(intervals),
            "outputs": outputs,
            "lat_sum": median * 1.1 * outputs,
            "lat_max": lat_max,
            "lat_p50": median,
            "lat_p95": median * 1.8,
            "lat_p99": np.minimum(median * 2.2, lat_max),
            "histogram": list(histograms),
        }
    )


def manifest(run_id: str, intervals: int, rows: dict[str, int]) -> list[writes.ManifestEntry]:
    files = max(1, intervals // FILE_SECONDS)
    return [
        writes.ManifestEntry(
            f"{run_id}/{record_set}/part-{k:05d}.parquet",
            run_id,
            record_set,
            1_000_000,
            0.0,
            rows[record_set] // files,
            1 if k == 0 else 0,
        )
        for record_set in RECORD_SETS
        for k in range(files)
    ]


def fill(
    db: Path, runs: int, intervals: int, nodes: int, seed: int, *, now: datetime
) -> dict[str, Any]:
    topology, times = workload("clickstream-5q", nodes=nodes, duration=float(intervals), seed=seed)
    base = base_counts(topology, times, intervals)
    rng = np.random.default_rng(seed)
    con = connect(db)
    started = time.perf_counter()
    try:
        for k in range(runs):
            day = now - timedelta(days=runs - k)
            run_id = run_name(k, day)
            frames = run_frames(run_id, topology, base, rng)
            with transaction(con, f"filling run {run_id}"):
                writes.write_run(con, run_id, topology)
                writes.merge_source_arrivals(con, frames["source_arrivals"])
                writes.merge_operator_stats(con, frames["operator_stats"])
                writes.merge_node_busy(con, frames["node_busy"])
                writes.merge_latency_stats(con, frames["latency"])
                batch = writes.next_batch_id(con)
                writes.add_quarantine(
                    con,
                    batch,
                    pd.DataFrame(
                        [[run_id, rs, f"{run_id}/{rs}/part-00000.parquet", 7, "bad row", "{}"]
                         for rs in RECORD_SETS],
                        columns=list(writes.QUARANTINE_COLUMNS),
                    ),
                )  # fmt: skip
                rows = {
                    "arrivals": int(frames["source_arrivals"]["events"].sum()),
                    "executions": int(frames["operator_stats"]["events_in"].sum()),
                    "outputs": int(frames["latency"]["outputs"].sum()),
                }
                files = manifest(run_id, intervals, rows)
                writes.record_batch(
                    con,
                    batch,
                    files,
                    rows_kept=sum(f.rows_read - f.rows_quarantined for f in files),
                    started_at=day,
                    finished_at=day,
                )
        fill_seconds = time.perf_counter() - started
        con.execute("CHECKPOINT")
        tables = [
            r[0]
            for r in con.execute(
                "SELECT table_name FROM information_schema.tables ORDER BY table_name"
            ).fetchall()
        ]
        counts = {t: int(con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0]) for t in tables}
    finally:
        con.close()
    return {
        "db": str(db),
        "runs": runs,
        "intervals": intervals,
        "operators": len(topology.operators),
        "nodes": len(topology.node_ids),
        "sources": len(topology.source_ids),
        "queries": len(topology.queries),
        "fill_seconds": round(fill_seconds, 1),
        "seconds_per_run": round(fill_seconds / runs, 2),
        "size_mb": round(db.stat().st_size / 1e6, 1),
        "rows": counts,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, type=Path, help="DuckDB file (must not exist)")
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--intervals", type=int, default=3600)
    parser.add_argument("--nodes", type=int, default=13)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    if args.db.exists():
        parser.error(f"{args.db} exists; give a new file")
    now = datetime.now(UTC).replace(tzinfo=None)
    result = fill(args.db, args.runs, args.intervals, args.nodes, args.seed, now=now)
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:>16}: {value}")


if __name__ == "__main__":
    main()
