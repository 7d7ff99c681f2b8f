"""Time every read the dashboard makes, and ``mace report``, against a store of many runs.

Fill the store first with :mod:`benchmarks.fill_store` (100 runs of 3600
subintervals). Each read is timed as the server runs it, on one run (default: the
last one, which ``mace report`` picks), on a connection opened once, as the
dashboard's :class:`dashboard.core.data.Database` does; ``load_run`` is what the first
view of a run costs (the pages then use the cached arrays), ``report`` is
``mace report``'s whole work without printing (open the file, choose the run, load
it, build the report) with Mace, ``report_auto`` the same with the default estimator
(``auto``: per-origin when it fits the budget). Medians of ``--repeat`` repetitions in
ms, each as wall clock and as this process's CPU time (the machine is shared), next to references
timed in the same run: a full scan of ``operator_stats``, and the previous way of
reading a run's operator rows (``ORDER BY`` in DuckDB, then ``.df()``).

``processes`` times whole commands in fresh interpreters, from process start
(``--processes`` runs each, interleaved): ``import`` is ``import mace.cli``,
``command`` is ``python -m mace report --db ... --run ... --json``, and
``in_process`` the report's work timed inside one interpreter (the ``report``
figure above, measured the same way in each tree); CPU is the children's user +
system time. With ``--reference-tree`` (a source tree of an earlier version, e.g.
``git archive main | tar -x -C /tmp/ref``) each is timed for that tree too.

    .venv/bin/python benchmarks/bench_store.py --db /tmp/history.duckdb --json \
        --reference-tree /tmp/ref
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dashboard.core.data import load_run
from dashboard.core.report import build_report
from mace.report_command import load_report, load_run_data
from storage import alerts, dashboard_reads, health, pending, placement_requests, reads, scenarios
from storage.db import connect

TARGET_MS = 200.0
TREE = Path(__file__).resolve().parents[1]

# The report's work timed inside one interpreter of a given tree (the same code in each).
IN_PROCESS = """
import json, statistics, sys, time
from pathlib import Path
from mace.report_command import load_report
db, run, repeat = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
load_report(db, run, 0.1, "mace")
wall, cpu = [], []
for _ in range(repeat):
    start, start_cpu = time.perf_counter(), time.process_time()
    load_report(db, run, 0.1, "mace")
    wall.append((time.perf_counter() - start) * 1000.0)
    cpu.append((time.process_time() - start_cpu) * 1000.0)
print(json.dumps({"wall_ms": round(statistics.median(wall), 2),
                  "cpu_ms": round(statistics.median(cpu), 2)}))
"""


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
            "training_window_of": median_ms(lambda: scenarios.training_window_of(con, rid), repeat),
            "list_alerts": median_ms(lambda: alerts.list_alerts(con, rid), repeat),
            "latest_request": median_ms(
                lambda: placement_requests.latest_request(con, rid), repeat
            ),
            "recent_batches": median_ms(lambda: health.recent_batches(con, limit=50), repeat),
            "quarantine_reasons": median_ms(lambda: health.quarantine_reasons(con, rid), repeat),
            "quarantined_rows": median_ms(lambda: health.quarantined_rows(con, rid), repeat),
            "pending_files": median_ms(lambda: pending.pending_files(con), repeat),
        }
        load_ms = median_ms(lambda: load_run(con, rid), repeat)
        reference_ms = median_ms(
            lambda: con.execute("SELECT sum(cpu_seconds) FROM operator_stats").fetchall(), repeat
        )
        key = reads.run_key(con, rid)
        old_read_ms = median_ms(  # operator_stats_frame as it was: ORDER BY, then .df()
            lambda: con.execute(
                "SELECT operator, port, interval, events_in, events_out, cpu_seconds"
                " FROM operator_stats WHERE run_key = ? AND interval >= ? AND interval < ?"
                " ORDER BY operator, port, interval",
                [key, 0, stop],
            ).df(),
            repeat,
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
        "report_auto": median_ms(lambda: load_report(db, rid, 0.1, "auto"), repeat),
        "report_load": median_ms(lambda: load_run_data(db, rid), repeat),
        "report_build": median_ms(lambda: build_report(run_data, goals, 0.1), repeat),
        "reference_full_scan": reference_ms,
        "reference_operator_stats_order_by_df": old_read_ms,
        "target_ms": TARGET_MS,
        "load_average": os.getloadavg()[0],
    }


def child_ms(argv: list[str], tree: Path) -> tuple[float, float, str]:
    """Wall clock and CPU time (user + system) in ms of one child process run in
    ``tree`` with it first on the path (``python -c``/``-m`` put the working folder
    first), and its standard output."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=tree, env=env, capture_output=True, text=True, check=True)
    wall = (time.perf_counter() - start) * 1000.0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000.0
    return wall, cpu, done.stdout


def process_timings(
    db: Path, run_id: str, trees: dict[str, Path], processes: int, repeat: int
) -> dict[str, Any]:
    """Per tree: ``import mace.cli``, the whole ``mace report`` command, and the report's
    work inside one interpreter; the trees take turns so that load hits them alike."""
    python, db = sys.executable, db.resolve()
    command = [python, "-m", "mace", "report", "--db", str(db), "--run", run_id, "--json"]
    runs: dict[str, dict[str, list[tuple[float, float]]]] = {
        name: {"import": [], "command": []} for name in trees
    }
    outputs: dict[str, str] = {}
    for _ in range(processes):
        for name, tree in trees.items():
            wall, cpu, _ = child_ms([python, "-c", "import mace.cli"], tree)
            runs[name]["import"].append((wall, cpu))
            wall, cpu, outputs[name] = child_ms(command, tree)
            runs[name]["command"].append((wall, cpu))
    result: dict[str, Any] = {}
    for name, tree in trees.items():
        inside = child_ms([python, "-c", IN_PROCESS, str(db), run_id, str(repeat)], tree)[2]
        result[name] = {
            "tree": str(tree),
            **{
                what: {
                    "wall_ms": round(statistics.median(w for w, _ in values), 1),
                    "cpu_ms": round(statistics.median(c for _, c in values), 1),
                }
                for what, values in runs[name].items()
            },
            "in_process": json.loads(inside),
        }
    result["same_report_json"] = len(set(outputs.values())) == 1
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, type=Path, help="store filled by fill_store.py")
    parser.add_argument("--run", dest="run_id", help="run id (default: the last run)")
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument(
        "--processes", type=int, default=9, help="fresh processes timed per tree (0: none)"
    )
    parser.add_argument(
        "--reference-tree", type=Path, help="source tree of an earlier version, timed alike"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    result = timings(args.db, args.run_id, args.repeat)
    if args.processes:
        trees = {"this": TREE}
        if args.reference_tree:
            trees["reference"] = args.reference_tree.resolve()
        result["processes"] = process_timings(
            args.db, result["run"], trees, args.processes, args.repeat
        )
    result["load_average_before_after"] = [load_before, os.getloadavg()[0]]
    if args.json:
        print(json.dumps(result))
        return
    for key, value in result.items():
        if key == "processes":
            print(f"{key:>28}: {json.dumps(value, indent=2)}")
        elif isinstance(value, dict) and "wall_ms" not in value:
            for name, ms in value.items():
                print(f"{name:>28}: {ms['wall_ms']:8.1f} ms wall {ms['cpu_ms']:8.1f} ms CPU")
        elif isinstance(value, dict):
            print(f"{key:>28}: {value['wall_ms']:8.1f} ms wall {value['cpu_ms']:8.1f} ms CPU")
        else:
            print(f"{key:>28}: {value}")


if __name__ == "__main__":
    main()
