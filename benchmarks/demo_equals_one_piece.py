"""A finished ``mace demo`` run (simulator engine) against the same run simulated in one piece.

Reads the run folder the demo wrote (``--workdir DIR``: ``DIR/landing/demo-...``), then
simulates the demo's workload with the same seed, origin and arrivals in one piece
(``simulator.engine.simulate``) and compares each record set, record for record and in
the order written, up to the newest record the demo wrote (the demo stopped there).
Prints one line per record set and exits 1 on a difference. No Spark.

    .venv/bin/python benchmarks/demo_equals_one_piece.py DIR/landing/demo-... [--seed SEED]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq

from estimator.loaders import load_topology
from mace.demo_command import demo_workload
from simulator.run import simulate
from simulator.telemetry import TIME_COLUMN


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path, help="the demo's run folder")
    parser.add_argument("--seed", type=int, default=0, help="the demo's --seed")
    args = parser.parse_args()
    topology, model = demo_workload(args.seed)
    origin = float(load_topology(args.run_dir / "topology.yaml").origin)
    live = {name: pq.read_table(args.run_dir / name) for name in TIME_COLUMN}
    end = max(float(pc.max(live[n][c]).as_py()) for n, c in TIME_COLUMN.items())
    arrivals = model.stream(np.random.default_rng([args.seed, 2]), origin).until(end + 60.0)
    whole = simulate(
        topology.with_changes(origin=origin), arrivals, rng=np.random.default_rng([args.seed, 3])
    ).telemetry
    same = True
    for name, column in TIME_COLUMN.items():
        due = whole.table(name).filter(pc.less_equal(whole.table(name)[column], end))
        equal = live[name] == due.cast(live[name].schema)
        same &= equal
        print(
            f"{name}: demo {live[name].num_rows} records, one piece {due.num_rows} "
            f"up to {end - origin:.1f} s: {'equal' if equal else 'DIFFERENT'}"
        )
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
