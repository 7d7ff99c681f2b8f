"""Benchmark: Spark ingestion end to end vs the same aggregation in DuckDB over the Parquet.

Generates N execution rows (default 10 million) as Parquet in a temporary folder,
runs ``ingest_once`` (cold: including the Spark session start; warm: a second
landing folder with the session up) and, in the same run, DuckDB directly over
the same files (validation + operator_stats + node_busy with wall-clock
splitting). Prints JSON with rows/s, the ratio and where the Spark time goes.

    .venv/bin/python benchmarks/bench_ingest.py --json [--rows 1000000]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import tempfile
import time
from pathlib import Path

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3, help="DuckDB reference repeats")
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    from ingest.job import ingest_once
    from ingest.session import get_spark

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        clock = time.perf_counter()
        write_landing(root / "cold", "bench", args.rows, args.files, seed=1)
        write_landing(root / "warm", "bench", args.rows, args.files, seed=1)
        generate_seconds = time.perf_counter() - clock

        marks: dict[str, float] = {}

        def progress(files: int, rows: int, what: str) -> None:
            marks["spark_done"] = time.perf_counter()

        clock = time.perf_counter()
        spark = get_spark(args.master)
        session_seconds = time.perf_counter() - clock
        cold = ingest_once(root / "cold", root / "cold.duckdb", spark)
        cold_total = session_seconds + cold.seconds

        clock = time.perf_counter()
        warm = ingest_once(root / "warm", root / "warm.duckdb", spark, progress=progress)
        warm_seconds = time.perf_counter() - clock
        spark_seconds = marks["spark_done"] - clock
        spark.stop()

        reference = [
            duckdb_reference(root / "warm" / "bench" / "executions") for _ in range(args.repeats)
        ]
        duck_seconds = statistics.median(r[0] for r in reference)
        con = duckdb.connect(str(root / "warm.duckdb"), read_only=True)
        spark_cpu = con.execute("SELECT sum(cpu_seconds) FROM operator_stats").fetchall()[0][0]
        con.close()

    result = {
        "rows": args.rows,
        "files": args.files,
        "cores": os.cpu_count(),
        "generate_seconds": round(generate_seconds, 2),
        "spark_session_start_seconds": round(session_seconds, 2),
        "spark_cold_seconds_incl_session": round(cold_total, 2),
        "spark_warm_seconds": round(warm_seconds, 2),
        "spark_warm_rows_per_second": round(args.rows / warm_seconds),
        "where_time_goes": {
            "spark_jobs_and_collect": round(spark_seconds, 2),
            "duckdb_load_and_manifest": round(warm_seconds - spark_seconds, 2),
        },
        "duckdb_direct_seconds_median": round(duck_seconds, 3),
        "duckdb_direct_rows_per_second": round(args.rows / duck_seconds),
        "ratio_spark_warm_to_duckdb": round(warm_seconds / duck_seconds, 2),
        "ratio_spark_cold_to_duckdb": round(cold_total / duck_seconds, 2),
        "cpu_seconds_match": math.isclose(
            float(spark_cpu), float(str(reference[0][1][2])), rel_tol=1e-9
        ),
        "rows_kept": warm.rows_kept,
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for key, value in result.items():
            print(f"{key}: {value}")


if __name__ == "__main__":
    main()
