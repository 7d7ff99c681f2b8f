"""Benchmark: Spark ingestion end to end, on each master given, vs the same aggregation
in DuckDB over the Parquet.

Generates N execution rows (default 10 million) as Parquet in a temporary folder. For
each ``--master`` in turn (one SparkSession at a time in this process): start-up (the
session start until an executor is registered, then a cold pass) and steady state (a
second pass over a copy of the files, the session up), each into its own DuckDB file.
``--master cluster`` starts a two-worker standalone cluster on 127.0.0.1 for the run
(``ingest.standalone.LocalCluster``, one core and ``--worker-memory`` each); a
``spark://`` URL uses a running cluster whose workers see the temporary folder. DuckDB
directly over the same files (validation + operator_stats + node_busy with wall-clock
splitting) is the reference timed in the same run. Prints JSON with rows/s, the ratio to
DuckDB, where the steady-state time goes, and the load average before and after. The
first master's session start includes launching the driver JVM; later ones reuse it.

    .venv/bin/python benchmarks/bench_ingest.py --json --master local[2] --master cluster
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

TOPOLOGY = """\
name: bench
subinterval: 1.0
nodes: [{id: n1, capacity: 1.0}, {id: n2, capacity: 1.0}, {id: n3, capacity: 2.0}]
sources: [{id: s}]
operators:
  - {id: o1, query: q, inputs: [s], cost: 0.0001}
  - {id: o2, query: q, inputs: [o1], cost: 0.0001}
  - {id: o3, query: q, inputs: [o2], cost: 0.0001}
  - {id: o4, query: q, inputs: [o3], cost: 0.0001}
placement: {o1: n1, o2: n2, o3: n3, o4: n3}
"""
PLACEMENT = {"o1": "n1", "o2": "n2", "o3": "n3", "o4": "n3"}


def write_landing(landing: Path, run_id: str, rows: int, files: int, seed: int) -> None:
    """A run folder with ``rows`` synthetic executions spread over ``files`` Parquet files."""
    run = landing / run_id
    (run / "executions").mkdir(parents=True)
    (run / "topology.yaml").write_text(TOPOLOGY)
    rng = np.random.default_rng(seed)
    operators = np.array(list(PLACEMENT))
    per_file = -(-rows // files)
    for k in range(files):
        n = min(per_file, rows - k * per_file)
        stimulus = np.sort(rng.uniform(k * 100.0, (k + 1) * 100.0, n))
        op = rng.integers(0, len(operators), n)
        table = pa.table(
            {
                "node": pa.array([PLACEMENT[o] for o in operators])
                .take(pa.array(op))
                .dictionary_encode(),
                "operator": pa.array(operators).take(pa.array(op)).dictionary_encode(),
                "port": np.zeros(n, dtype=np.int64),
                "stimulus_time": stimulus,
                "start_time": stimulus + rng.exponential(0.05, n),
                "cpu_seconds": rng.exponential(1e-4, n),
                "outputs": np.ones(n, dtype=np.int64),
            }
        )
        pq.write_table(table, run / "executions" / f"part-{k:05d}.parquet")


DUCKDB_SQL = """
WITH raw AS (
    SELECT *, floor(stimulus_time)::BIGINT AS interval,
           start_time AS s,
           start_time + cpu_seconds / CASE node WHEN 'n3' THEN 2.0 ELSE 1.0 END AS e
    FROM read_parquet(?)
), checked AS (
    SELECT *, (node IS NULL OR operator IS NULL OR port IS NULL OR stimulus_time IS NULL
               OR start_time IS NULL OR cpu_seconds IS NULL OR outputs IS NULL
               OR isnan(cpu_seconds) OR isnan(stimulus_time) OR isnan(start_time)
               OR cpu_seconds < 0 OR outputs < 0 OR start_time < stimulus_time
               OR operator NOT IN ('o1', 'o2', 'o3', 'o4') OR node NOT IN ('n1', 'n2', 'n3')
               OR port <> 0) AS bad
    FROM raw
), stats AS (
    SELECT operator, port, interval, count(*) AS events_in, sum(outputs) AS events_out,
           sum(cpu_seconds) AS cpu_seconds
    FROM checked WHERE NOT bad GROUP BY ALL
), pieces AS (
    SELECT node, s, e,
           unnest(range(floor(s)::BIGINT,
                        greatest(floor(s), ceil(e - 1e-9) - 1)::BIGINT + 1)) AS w
    FROM checked WHERE NOT bad
), busy AS (
    SELECT node, w AS interval, sum(least(e, w + 1) - greatest(s, w)) AS busy_seconds
    FROM pieces GROUP BY ALL
)
SELECT (SELECT count(*) FROM stats), (SELECT count(*) FROM busy),
       (SELECT sum(cpu_seconds) FROM stats), (SELECT count(*) FROM checked WHERE bad)
"""


def duckdb_reference(folder: Path) -> tuple[float, tuple[object, ...]]:
    start = time.perf_counter()
    con = duckdb.connect()
    row = con.execute(DUCKDB_SQL, [str(folder / "*.parquet")]).fetchall()[0]
    con.close()
    return time.perf_counter() - start, tuple(row)


def run_master(master: str, root: Path, rows: int, name: str) -> dict[str, Any]:
    """Start-up and steady state of ingestion on ``master``; stops its session."""
    from ingest.job import ingest_once
    from ingest.session import executor_count, ready_spark

    marks: dict[str, float] = {}

    def progress(files: int, new_rows: int, what: str) -> None:
        marks["spark_done"] = time.perf_counter()

    clock = time.perf_counter()
    spark = ready_spark(master)
    session_seconds = time.perf_counter() - clock
    try:
        cold = ingest_once(root / "cold", root / f"cold-{name}.duckdb", spark)
        clock = time.perf_counter()
        warm = ingest_once(root / "warm", root / f"warm-{name}.duckdb", spark, progress=progress)
        warm_seconds = time.perf_counter() - clock
        spark_seconds = marks["spark_done"] - clock
        executors = executor_count(spark.sparkContext)
        parallelism = spark.sparkContext.defaultParallelism
    finally:
        spark.stop()
    con = duckdb.connect(str(root / f"warm-{name}.duckdb"), read_only=True)
    cpu = con.execute("SELECT sum(cpu_seconds) FROM operator_stats").fetchall()[0][0]
    con.close()
    return {
        "master": master,
        "executors": executors,
        "default_parallelism": parallelism,
        "start_up": {
            "session_seconds": round(session_seconds, 2),
            "cold_pass_seconds": round(cold.seconds, 2),
            "total_seconds": round(session_seconds + cold.seconds, 2),
        },
        "steady_state": {
            "seconds": round(warm_seconds, 2),
            "rows_per_second": round(rows / warm_seconds),
            "spark_jobs_and_collect_seconds": round(spark_seconds, 2),
            "duckdb_load_and_manifest_seconds": round(warm_seconds - spark_seconds, 2),
        },
        "rows_kept": warm.rows_kept,
        "cpu_seconds": float(cpu),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3, help="DuckDB reference repeats")
    parser.add_argument(
        "--master",
        action="append",
        help="Spark master, repeatable: local[N], spark://HOST:PORT, or 'cluster' (a "
        "two-worker standalone cluster on 127.0.0.1 for this run); default local[*]",
    )
    parser.add_argument("--worker-memory", default="2g", help="memory of each worker of 'cluster'")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    from ingest.standalone import LocalCluster

    load_before = os.getloadavg()
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        root = Path(tmp)
        clock = time.perf_counter()
        write_landing(root / "cold", "bench", args.rows, args.files, seed=1)
        write_landing(root / "warm", "bench", args.rows, args.files, seed=1)
        generate_seconds = time.perf_counter() - clock

        for k, label in enumerate(args.master or ["local[*]"]):
            master = label
            extra: dict[str, Any] = {"label": label}
            if master == "cluster":
                clock = time.perf_counter()
                cluster = stack.enter_context(
                    LocalCluster(workers=2, cores=1, memory=args.worker_memory)
                )
                extra["cluster_start_seconds"] = round(time.perf_counter() - clock, 2)
                extra["cluster"] = f"2 workers x 1 core, {args.worker_memory} each"
                master = cluster.url
            results.append(extra | run_master(master, root, args.rows, str(k)))
            if label == "cluster":
                stack.close()  # stop the cluster before the next master runs

        reference = [
            duckdb_reference(root / "warm" / "bench" / "executions") for _ in range(args.repeats)
        ]
    duck_seconds = statistics.median(r[0] for r in reference)
    duck_cpu = float(str(reference[0][1][2]))
    for outcome in results:
        outcome["ratio_steady_state_to_duckdb"] = round(
            outcome["steady_state"]["seconds"] / duck_seconds, 2
        )
        outcome["cpu_seconds_match_duckdb"] = math.isclose(
            outcome.pop("cpu_seconds"), duck_cpu, rel_tol=1e-9
        )
    result = {
        "rows": args.rows,
        "files": args.files,
        "cores": os.cpu_count(),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "generate_seconds": round(generate_seconds, 2),
        "duckdb_direct_seconds_median": round(duck_seconds, 3),
        "duckdb_direct_rows_per_second": round(args.rows / duck_seconds),
        "masters": results,
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for key, value in result.items():
            print(f"{key}: {value}")


if __name__ == "__main__":
    main()
