"""Time every read the dashboard makes, and ``mace report``, against a store of many runs.

Fill the store first with :mod:`benchmarks.fill_store` (100 runs of 3600
subintervals). Each read is timed as the server runs it, on one run (default: the
last one, which ``mace report`` picks), on a connection opened once, as the
dashboard's :class:`dashboard.data.Database` does; ``load_run`` is what the first
view of a run costs (the pages then use the cached arrays), ``report`` is
``mace report``'s whole work without printing (open the file, choose the run, load
it, build the report). Medians of ``--repeat`` repetitions in ms, next to a
reference timed in the same run: a full scan of ``operator_stats``. Each time is
given as wall clock and as this process's CPU time (the machine is shared).

    .venv/bin/python benchmarks/bench_store.py --db /tmp/history.duckdb --json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dashboard.data import load_run
from dashboard.report import build_report
from mace.report_command import load_report, load_run_data
from storage import dashboard_reads, reads, scenarios
from storage.db import connect

TARGET_MS = 200.0


def median_ms(call: Callable[[], object], repeat: int) -> dict[str, float]:
    """Median wall-clock and CPU time (this process, all threads) of ``call`` in ms.

    The CPU time is reported because the machine is shared: under load the wall
    clock also counts the time other processes hold the cores."""
    call()  # warm: the first call reads the blocks from disk
    wall, cpu = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        call()
        wall.append((time.perf_counter() - start) * 1000.0)
        cpu.append((time.process_time() - start_cpu) * 1000.0)
    return {
        "wall_ms": round(statistics.median(wall), 2),
        "cpu_ms": round(statistics.median(cpu), 2),
    }


def timings(db: Path, run_id: str | None, repeat: int) -> dict[str, Any]:
    con = connect(db)
    try:
        runs = reads.list_runs(con)
        run = runs[-1] if run_id is None else reads.get_run(con, run_id)
        rid = run.run_id
        stop = 0 if run.last_interval is None else run.last_interval + 1
        if not scenarios.list_scenarios(con, rid):  # the What-if page lists and loads them
            scenarios.save_scenario(con, rid, "bench", {"placement": {}})
        scenario_id = scenarios.list_scenarios(con, rid)[0].scenario_id
        reads_ms = {
            "list_runs": median_ms(lambda: reads.list_runs(con), repeat),
            "get_run": median_ms(lambda: reads.get_run(con, rid), repeat),
            "data_version": median_ms(lambda: dashboard_reads.data_version(con, rid), repeat),
            "run_topology": median_ms(lambda: reads.run_topology(con, rid), repeat),
            "placement_versions": median_ms(lambda: reads.placement_versions(con, rid), repeat),
            "source_arrivals_frame": median_ms(
                lambda: reads.source_arrivals_frame(con, rid, 0, stop), repeat
            ),
            "operator_stats_frame": median_ms(
                lambda: reads.operator_stats_frame(con, rid, 0, stop), repeat
            ),
            "operator_cpu_frame": median_ms(
                lambda: reads.operator_cpu_frame(con, rid, 0, stop), repeat
            ),
            "node_busy_frame": median_ms(lambda: reads.node_busy_frame(con, rid, 0, stop), repeat),
            "latency_stats_frame": median_ms(
                lambda: reads.latency_stats_frame(con, rid, None, 0, stop), repeat
            ),
            "list_scenarios": median_ms(lambda: scenarios.list_scenarios(con, rid), repeat),
            "load_scenario": median_ms(lambda: scenarios.load_scenario(con, scenario_id), repeat),
            "objectives": median_ms(lambda: scenarios.objectives(con, rid), repeat),
        }
        load_ms = median_ms(lambda: load_run(con, rid), repeat)
        reference_ms = median_ms(
            lambda: con.execute("SELECT sum(cpu_seconds) FROM operator_stats").fetchall(), repeat
        )
        total_rows = int(con.execute("SELECT count(*) FROM operator_stats").fetchall()[0][0])
    finally:
        con.close()
    run_data, goals = load_run_data(db, rid)
    return {
        "db": str(db),
        "size_mb": round(db.stat().st_size / 1e6, 1),
        "runs": len(runs),
        "run": rid,
        "intervals": stop,
        "operator_stats_rows": total_rows,
        "repeat": repeat,
        "reads_ms": reads_ms,
        "load_run": load_ms,
        "report": median_ms(lambda: load_report(db, rid, 0.1, "mace"), repeat),
        "report_load": median_ms(lambda: load_run_data(db, rid), repeat),
        "report_build": median_ms(lambda: build_report(run_data, goals, 0.1), repeat),
        "reference_full_scan": reference_ms,
        "target_ms": TARGET_MS,
        "load_average": os.getloadavg()[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, type=Path, help="store filled by fill_store.py")
    parser.add_argument("--run", dest="run_id", help="run id (default: the last run)")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    result = timings(args.db, args.run_id, args.repeat)
    if args.json:
        print(json.dumps(result))
        return
    for key, value in result.items():
        if isinstance(value, dict) and "wall_ms" not in value:
            for name, ms in value.items():
                print(f"{name:>28}: {ms['wall_ms']:8.1f} ms wall {ms['cpu_ms']:8.1f} ms CPU")
        elif isinstance(value, dict):
            print(f"{key:>28}: {value['wall_ms']:8.1f} ms wall {value['cpu_ms']:8.1f} ms CPU")
        else:
            print(f"{key:>28}: {value}")


if __name__ == "__main__":
    main()
