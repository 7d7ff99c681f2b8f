"""A finished ``mace demo`` run (simulator engine) against the same run simulated in one piece.

The demo deletes its landing files once ingested, so the comparison is made in the
store: this simulates the demo's workload with the same seed, origin and arrivals in
one piece (``simulator.run.simulate``), keeps the records due by the newest one the demo
wrote (the demo stopped there; its last files are still in the landing folder), writes
them into a landing folder of their own under the demo's run id, ingests them with
``mace ingest`` into a new DuckDB file and compares the two stores' per-subinterval
tables: arrivals, operator counts and CPU, and each query's outputs, latency sum and
maximum. Prints one line per table and exits 1 on a difference. Starts Spark.

    .venv/bin/python benchmarks/demo_equals_one_piece.py DIR [--seed SEED]

where DIR is the demo's ``--workdir``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import duckdb
import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq

from estimator.loaders import load_topology
from mace.cli import main as mace
from mace.demo_command import demo_workload
from simulator.run import simulate
from simulator.telemetry import TIME_COLUMN, Telemetry, write_run

TABLES = {
    "source_arrivals": (["source", "interval"], ["events"]),
    "operator_stats": (
        ["operator", "port", "interval"],
        ["events_in", "events_out", "cpu_seconds"],
    ),
    "latency_stats": (["query", "interval"], ["outputs", "lat_sum", "lat_max"]),
}


def stored(db: Path, table: str, run_id: str) -> dict[tuple, tuple]:
    keys, values = TABLES[table]
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute(
            f"SELECT {', '.join(keys + values)} FROM {table} WHERE run_id = ?", [run_id]
        ).fetchall()
    finally:
        con.close()
    return {tuple(r[: len(keys)]): tuple(r[len(keys) :]) for r in rows}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workdir", type=Path, help="the demo's --workdir")
    parser.add_argument("--seed", type=int, default=0, help="the demo's --seed")
    args = parser.parse_args()
    (run_dir,) = sorted((args.workdir / "landing").glob("demo-*"))
    topology, model = demo_workload(args.seed)
    written = load_topology(run_dir / "topology.yaml")  # the demo's, with its origin
    origin = float(written.origin)
    # the newest record the demo wrote: its last files are not deleted yet
    end = max(float(pc.max(pq.read_table(run_dir / n)[c]).as_py()) for n, c in TIME_COLUMN.items())
    arrivals = model.stream(np.random.default_rng([args.seed, 2]), origin).until(end + 60.0)
    whole = simulate(
        topology.with_changes(origin=origin), arrivals, rng=np.random.default_rng([args.seed, 3])
    ).telemetry
    due = Telemetry(
        **{
            n: whole.table(n).filter(pc.less_equal(whole.table(n)[c], end))
            for n, c in TIME_COLUMN.items()
        }
    )
    landing = args.workdir / "one-piece" / "landing"
    db = args.workdir / "one-piece" / "mace.duckdb"
    write_run(due, written, landing, run_dir.name, files=8)
    if mace(["ingest", str(landing), "--db", str(db)]) != 0:
        return 2
    same = True
    for table, (_, values) in TABLES.items():
        demo = stored(args.workdir / "mace.duckdb", table, run_dir.name)
        piece = stored(db, table, run_dir.name)
        differ = [
            k
            for k in demo.keys() | piece.keys()
            if k not in demo
            or k not in piece
            or not np.allclose(demo[k], piece[k], rtol=1e-9, atol=1e-9)
        ]
        same &= not differ
        print(
            f"{table}: demo {len(demo)} rows, one piece {len(piece)} rows ({', '.join(values)}): "
            + ("equal" if not differ else f"{len(differ)} differ, e.g. {sorted(differ)[:3]}")
        )
    print(f"records due by {end - origin:.1f} s into the run")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
