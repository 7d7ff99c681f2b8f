"""Benchmark ``mace whatif`` (a parallelism edit) and ``mace plan parallelism``.

Workload: one run of ``clickstream-5q`` on 13 nodes (70 operators, 5 sources, 5
queries) over an hour (3600 subintervals of 1 s), written to a fresh DuckDB store by
``benchmarks/fill_store.py``. Each command runs in-process through ``mace.cli.main``
(stdout captured), end to end: open the store, load the run, fit the model on it,
predict. Reported as medians of ``--repeat`` runs next to a reference measured in the
same process: ``mace report --json`` on the same run (load and two analyses). The
estimator's part alone (resolve the edits, expand, Mace, figures on a run already
loaded and fitted) is timed too.

    flock /tmp/heavy.lock .venv/bin/python -m benchmarks.bench_whatif_parallelism --json

The edit doubles the parallelism of the operator on the run's bottleneck node; the
plan's objective is the run's predicted worst case over ``--objective-divisor`` (20:
several greedy steps). With ``--restart SECONDS`` the run restarts once, halfway, for
that long (a placement version with its stop), so both commands also predict the
restart of reaching their deployments (``restart`` in their JSON).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.fill_store import fill
from dashboard.core.deployment import figures
from mace.cli import main as mace
from mace.whatif_command import load_fitted_run

WHATIF_TARGET_S = 0.3
PLAN_TARGET_S = 10.0


def timed(argv: Sequence[str], repeat: int) -> tuple[float, dict[str, Any]]:
    """Median seconds of ``mace argv`` over ``repeat`` runs, and its last JSON answer."""
    seconds = []
    out = ""
    for _ in range(repeat):
        buffer = io.StringIO()
        started = time.perf_counter()
        with contextlib.redirect_stdout(buffer):
            status = mace(list(argv))
        seconds.append(time.perf_counter() - started)
        if status != 0:
            raise SystemExit(f"mace {' '.join(argv)} exited {status}")
        out = buffer.getvalue()
    return statistics.median(seconds), json.loads(out)


def filled_units(db: Path) -> list[str]:
    """The units of the stored run (its nodes that carry operators)."""
    from estimator.parallelism import shape_of

    return [u.node for u in shape_of(load_fitted_run(db, None).topology).units]


def predict_only(db: Path, edit: str, repeat: int) -> float:
    """Median seconds of the estimator's part of ``mace whatif`` (edits resolved,
    resources expanded, Mace, figures) on a run already loaded and fitted."""
    from dashboard.core.deployment import parse_edits
    from estimator.parallelism import predict, resolve, shape_of

    fitted = load_fitted_run(db, None)
    seconds = []
    for _ in range(repeat):
        started = time.perf_counter()
        shape = shape_of(fitted.topology)
        deployment = resolve(shape, parse_edits([edit], fitted.topology, shape))
        figures(fitted.finish(predict(fitted.topology, shape, deployment, fitted.operator_dlts)))
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds)


def restart_halfway(db: Path, seconds: float) -> None:
    """Give the filled run a restart of ``seconds`` halfway: a placement version with the
    same placement that began with a stop (what ``mace collect flink`` records)."""
    from storage import reads
    from storage.db import connect, transaction
    from storage.writes import Version, write_run

    con = connect(db)
    try:
        (info,) = reads.list_runs(con)
        topology = reads.run_topology(con, info.run_id)
        _, stop = reads.interval_range(con, info.run_id) or (0, 0)
        resumed = topology.origin + topology.subinterval * (stop // 2)
        version: Version = (resumed, dict(topology.placement), {}, resumed - seconds)
        with transaction(con, "a restart halfway"):
            write_run(con, info.run_id, topology, [version])
    finally:
        con.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--intervals", type=int, default=3600)
    parser.add_argument("--nodes", type=int, default=13)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--plan-repeat", type=int, default=3)
    parser.add_argument(
        "--objective-divisor",
        type=float,
        default=20.0,
        help="the plan's objective is the run's predicted worst case over this (default 20)",
    )
    parser.add_argument(
        "--restart",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="the run restarts once, halfway, for this long (default 0: never)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "bench.duckdb"
        now = datetime.now(UTC).replace(tzinfo=None)
        filled = fill(db, 1, args.intervals, args.nodes, 0, now=now)
        if args.restart > 0:
            restart_halfway(db, args.restart)
        base = ["--db", str(db)]
        timed(["report", *base, "--json"], 1)  # warm the imports and the numba kernels
        report_s, _ = timed(["report", *base, "--json"], args.repeat)
        recorded = figures(load_fitted_run(db, None).current)
        bottleneck = recorded["bottleneck"] or next(iter(filled_units(db)))
        edit = f"{bottleneck}.parallelism=2"
        whatif_s, answer = timed(["whatif", *base, "--set", edit, "--json"], args.repeat)
        predict_s = predict_only(db, edit, args.repeat)
        objective = max(recorded["system"]["wc"] / args.objective_divisor, 0.01)
        plan_s, plan = timed(
            ["plan", "parallelism", *base, "--objective", f"{objective:.6f}", "--json"],
            args.plan_repeat,
        )
    result = {
        "workload": {k: filled[k] for k in ("intervals", "operators", "nodes", "queries")},
        "edit": edit,
        "recorded_wc": recorded["system"]["wc"],
        "changed_wc": answer["changed"]["system"]["wc"],
        "whatif_median_s": round(whatif_s, 4),
        "whatif_target_s": WHATIF_TARGET_S,
        "predict_only_median_s": round(predict_s, 4),
        "reference_report_median_s": round(report_s, 4),
        "plan_objective_s": round(objective, 4),
        "plan_median_s": round(plan_s, 3),
        "plan_target_s": PLAN_TARGET_S,
        "plan_subtasks": plan["recommended"]["deployment"]["subtasks"],
        "plan_wc": plan["recommended"]["system"]["wc"],
        "plan_feasible": plan["recommended"]["feasible"],
        "plan_evaluations": plan["evaluations"],
        "rule_subtasks": plan["utilization_rule"]["deployment"]["subtasks"],
        "rule_wc": plan["utilization_rule"]["system"]["wc"],
        "restart_s": args.restart,
        "plan_restart_wc": (plan["recommended"]["restart"] or {}).get("system", {}).get("wc"),
        "repeat": args.repeat,
        "plan_repeat": args.plan_repeat,
    }
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:>28}: {value}")


if __name__ == "__main__":
    main()
