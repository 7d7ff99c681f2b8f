"""Accuracy on a real Flink run (docs/flink.md): estimate and prediction vs the sinks.

Reads a run ingested from ``mace demo --engine flink`` (or any counter-measured
run) and prints one JSON object:

- ``measured_wc``: the worst latency measured at the sinks (probe rows);
- ``estimated_wc``: Mace from the work offered to each operator (measured arrivals
  x cost fitted on the run), what the product shows for counter-measured runs;
- ``busy_time_wc``: Mace from the measured busy time per wall-clock subinterval, for
  comparison (it cannot see a backlog: a saturated thread is busy 100% of a second);
- ``predicted_wc``: from a model fitted on the first ``--training-share`` of the run
  and the measured source arrivals;
- ``fitted_cost_ms``: each operator's fitted cost per record, against
  ``configured_cost_ms`` (the CPU the demo job burns per record, where it sets one);
- each estimate's relative error against ``measured_wc``.

    python benchmarks/flink_study.py --db /tmp/fd/mace.duckdb --training-share 0.2

With ``--grid`` it runs the test jobs of ``benchmarks/flink_jobs`` instead: for each
job x load level x seed, the job on a local MiniCluster (``.venv-flink``), its outside
On-Off producer(s), the collector (in this process), ``--duration`` seconds of events,
a drain, a clean stop; then one ``mace ingest`` of every run into ``<workdir>/mace.duckdb``
and ``mace report --json`` per run (so model changes show up here unchanged). It prints
one JSON object (``runs`` and a ``summary``); progress goes to stderr. Each run, and the
ingestion, holds ``--lock`` (default /tmp/heavy.lock) while it runs.

    python -m benchmarks.flink_study --grid --workdir /tmp/fgrid --duration 90
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from benchmarks import flink_grid as grid
from dashboard.data import Database, load_run
from dashboard.report import analyses
from estimator.fitting import fit_operator_stats, training_window
from estimator.runs import analyse, measured_node_dlts
from storage import reads

CONFIGURED_COST_MS = {"parse": 0.2, "enrich": 6.0}  # connectors/flink/demo_job.py, demo


def study(db: Path, run_id: str | None, share: float) -> dict[str, Any]:
    database = Database(db)
    try:
        with database.cursor() as cur:
            runs = reads.list_runs(cur)
            chosen = run_id or runs[-1].run_id
            run = load_run(cur, chosen)
            cpu = reads.operator_cpu_frame(cur, chosen, 0, run.intervals)
    finally:
        database.close()
    placements = [v.placement for v in run.versions]
    computed = analyses(run, share)
    busy = measured_node_dlts(run.topology, cpu, placements, run.version_starts, run.intervals)
    by_busy = analyse(run.topology, busy, placements, run.version_starts)
    measured = float(run.measured_system().lat_max[run.measured_system().outputs > 0].max())
    fitted = fit_operator_stats(
        run.topology, run.operator_stats, training_window(run.intervals, share)
    ).topology
    figures = {
        "estimated_wc": float(computed.estimated.estimate.max()),
        "busy_time_wc": float(by_busy.estimate.max()),
        "predicted_wc": float(computed.predicted.estimate.max()),
    }
    return {
        "run": chosen,
        "intervals": run.intervals,
        "subinterval": run.subinterval,
        "training_share": share,
        "measured_wc": measured,
        **figures,
        **{f"{k[:-3]}_error": (v - measured) / measured for k, v in figures.items()},
        "fitted_cost_ms": {o.id: 1000 * o.cost[0] for o in fitted.operators},
        "configured_cost_ms": CONFIGURED_COST_MS,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, help="single-run mode: the DuckDB file")
    parser.add_argument("--run", dest="run_id")
    parser.add_argument("--training-share", type=float, default=0.2)
    grid.add_arguments(parser)
    args = parser.parse_args()
    if args.grid:
        print(json.dumps(grid.run_grid(args), indent=1))
    elif args.db is None:
        parser.error("--db is needed (or --grid)")
    else:
        print(json.dumps(study(args.db, args.run_id, args.training_share), indent=1))


if __name__ == "__main__":
    main()
