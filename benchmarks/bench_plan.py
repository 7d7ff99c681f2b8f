"""Time of each ``mace plan`` command at scale (Fig. 6(b) random workload, 20X nodes, 200X
operators), end to end in-process (files read, search, JSON printed).

Per scale factor: ``select`` (three alternative plans of the whole workload as one query,
costs x0.8, x1, x1.2, each measured in the simulator on --sample-share of the arrivals),
``admit`` (a 10%-sized query reading the first source; with ``--replace`` every operator
is placed again), ``provision`` in nodes mode,
in capacity mode and ``--over-time`` (4 windows). The reference timed in the same run is
``mace estimate`` on the same files. Medians over --repeat runs.

    .venv/bin/python benchmarks/bench_plan.py --json [--scales 1,5] [--repeat 3]

``--timeline WORKLOAD`` adds hosts over time on a simulator workload: the arrivals
``mace simulate WORKLOAD --duration D --seed S`` would feed the engine (the same
sampling), counted per subinterval; per --window seconds, the fewest nodes by Mace
against FUGU's threshold count for each objective of --objectives, the machine-hours of
each, and the static answer (``mace plan provision`` over the whole run) for scale.

    .venv/bin/python benchmarks/bench_plan.py --json --scales "" --timeline clickstream-5q \
        --duration 3600 --window 300 --objectives 1,2,5
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from estimator.arrivals import Arrivals
from estimator.evaluator import estimate
from estimator.model import Topology
from estimator.placement.workload import WorkloadParameters, random_workload
from mace.cli import main as mace_main


def write_inputs(folder: Path, topology: Topology, arrivals: Arrivals) -> dict[str, Path]:
    """Topology, arrivals, three plan files and a query file for the commands."""
    document = topology.to_dict()
    paths = {"topology": folder / "topology.yaml", "arrivals": folder / "arrivals.csv"}
    paths["topology"].write_text(yaml.safe_dump(document), encoding="utf-8")
    rows = [
        f"{s},{p},{int(n)}"
        for k, s in enumerate(arrivals.sources)
        for p, n in enumerate(arrivals.counts[k])
    ]
    paths["arrivals"].write_text("source,interval,events\n" + "\n".join(rows), encoding="utf-8")
    for factor in (0.8, 1.0, 1.2):
        plan = {
            **document,
            "operators": [
                {**op, "query": "q", "cost": _scaled(op["cost"], factor)}
                for op in document["operators"]
            ],
        }
        path = folder / f"plan-x{factor:g}.yaml"
        path.write_text(yaml.safe_dump(plan), encoding="utf-8")
        paths[f"plan-x{factor:g}"] = path
    count = max(1, len(topology.operators) // 10)
    first = topology.source_ids[0]
    mean_cost = float(np.mean([op.cost[0] for op in topology.operators]))
    query = {
        "query": "added",
        "operators": [
            {"id": f"new{j}", "inputs": [first if j == 0 else f"new{j - 1}"], "cost": mean_cost}
            for j in range(count)
        ],
    }
    paths["query"] = folder / "query.yaml"
    paths["query"].write_text(yaml.safe_dump(query), encoding="utf-8")
    return paths


def _scaled(cost: Any, factor: float) -> Any:
    return [c * factor for c in cost] if isinstance(cost, list) else cost * factor


def timed(argv: list[str], repeat: int) -> tuple[float, dict[str, Any]]:
    """Median seconds of ``mace ARGV`` and its last JSON output."""
    seconds = []
    output = ""
    for _ in range(repeat):
        buffer = io.StringIO()
        started = time.perf_counter()
        with contextlib.redirect_stdout(buffer):
            status = mace_main(argv)
        seconds.append(time.perf_counter() - started)
        if status != 0:
            raise SystemExit(f"mace {' '.join(argv)}: exit {status}")
        output = buffer.getvalue()
    return statistics.median(seconds), json.loads(output)


def run_scale(
    scale: int, repeat: int, seed: int, budget: float, only: Sequence[str] = ()
) -> dict[str, Any]:
    topology, arrivals = random_workload(np.random.default_rng(seed), scale, WorkloadParameters())
    current = estimate(topology, arrivals).worst_case
    objective = 1.0
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_inputs(Path(tmp), topology, arrivals)
        files = [str(paths["topology"]), "--arrivals", str(paths["arrivals"])]
        search = ["--budget", f"{budget:g}", "--json"]
        plans = [str(paths[f"plan-x{f:g}"]) for f in (0.8, 1.0, 1.2)]
        max_nodes = str(4 * len(topology.nodes))
        commands = {
            "estimate (reference)": ["estimate", *files, "--json"],
            "plan select": [
                *("plan", "select", "--plans", *plans, "--arrivals", str(paths["arrivals"])),
                "--json",
            ],
            "plan admit": [
                *("plan", "admit", *files, "--add", str(paths["query"])),
                *("--objective", f"{objective:g}", *search),
            ],
            "plan admit --replace": [
                *("plan", "admit", *files, "--add", str(paths["query"])),
                *("--objective", f"{objective:g}", "--replace", *search),
            ],
            "plan provision nodes": [
                *("plan", "provision", *files, "--objective", f"{objective:g}"),
                *("--max-nodes", max_nodes, *search),
            ],
            "plan provision capacity": [
                *("plan", "provision", *files, "--objective", f"{objective:g}"),
                *("--mode", "capacity", "--json"),
            ],
            "plan provision --over-time": [
                *("plan", "provision", *files, "--objective", f"{objective:g}"),
                *("--max-nodes", max_nodes, "--over-time", "100", *search),
            ],
        }
        rows: dict[str, Any] = {}
        for name, argv in commands.items():
            if only and name != "estimate (reference)" and not any(o in name for o in only):
                continue
            print(f"x{scale} {name} ...", file=sys.stderr, flush=True)
            runs = 1 if "provision nodes" in name or "over-time" in name else repeat
            seconds, output = timed(argv, runs)
            rows[name] = {"seconds": seconds, "runs": runs, **_summary(name, output)}
    return {
        "scale": scale,
        "nodes": len(topology.nodes),
        "operators": len(topology.operators),
        "subintervals": arrivals.intervals,
        "current_mace_wc": current,
        "objective": objective,
        "budget": budget,
        "commands": rows,
    }


def _summary(name: str, output: dict[str, Any]) -> dict[str, Any]:
    """The figures of a command's JSON worth keeping beside its time."""
    if name == "plan select":
        return {"chosen": output["chosen"]}
    if name.startswith("plan admit"):
        after = max(row["after"] for row in output["per_query"].values())
        return {"admit": output["admit"], "worst_after": after}
    if name == "plan provision capacity":
        return {"added_capacity": output["added_capacity"], "feasible": output["feasible"]}
    if name.startswith("plan provision"):
        summary = {"nodes": output["nodes"], "feasible": output["feasible"]}
        if "timeline" in output:
            summary["mace_hosts"] = [r["mace_hosts"] for r in output["timeline"]]
            summary["fugu_hosts"] = [r["fugu_hosts"] for r in output["timeline"]]
            summary["fugu_mace_wc"] = [r["fugu_mace_wc"] for r in output["timeline"]]
        return summary
    return {"mace_wc": output["mace_wc"]}


def workload_timeline(
    name: str, duration: float, window: float, objectives: list[float], seed: int, budget: float
) -> dict[str, Any]:
    """Hosts over time, Mace against FUGU, on a workload's arrivals (see the module doc)."""
    from estimator.placement.planning import fewest_nodes, hosts_over_time
    from simulator.workloads import workload

    topology, times = workload(name, duration=duration, seed=seed)
    w = topology.subinterval
    intervals = int(np.ceil(duration / w))
    counts = np.zeros((len(topology.source_ids), intervals))
    for k, source in enumerate(topology.source_ids):
        slots = np.floor((times.pop(source) - topology.origin) / w).astype(np.int64)
        counts[k] = np.bincount(slots[slots < intervals], minlength=intervals)
    arrivals = Arrivals(topology.source_ids, counts)
    capacity = max(n.capacity for n in topology.nodes)
    rows = []
    for objective in objectives:
        print(f"{name} timeline, objective {objective:g} s ...", file=sys.stderr, flush=True)
        started = time.perf_counter()
        timeline = hosts_over_time(
            topology,
            arrivals,
            objective,
            max(1, round(window / w)),
            capacity,
            budget=budget,
            rng=np.random.default_rng(seed),
        )
        seconds = time.perf_counter() - started
        peak = fugu_windows(topology, arrivals, timeline, [0.85], objective, "peak")
        tuned = fugu_windows(topology, arrivals, timeline, THRESHOLDS, objective, "mean")
        static = fewest_nodes(
            topology,
            arrivals,
            objective,
            node_capacity=capacity,
            budget=budget,
            rng=np.random.default_rng(seed),
        )
        static_hosts = len(set(static.topology.placement.values()))
        mace_hours, fugu_hours = timeline.machine_hours()
        hours = timeline.window_length * w / 3600.0
        rows.append(
            {
                "objective": objective,
                "seconds": seconds,
                "mace_hosts": timeline.mace_hosts.tolist(),
                "mace_feasible": timeline.mace_feasible.tolist(),
                "fugu_hosts": timeline.fugu_hosts.tolist(),
                "fugu_windows_over_objective": int((timeline.fugu_mace_wc > objective).sum()),
                "fugu_worst_mace_wc": float(timeline.fugu_mace_wc.max()),
                "fugu_peak_hosts": [t["hosts"] for t in peak],
                "fugu_peak_windows_over_objective": sum(not t["meets"] for t in peak),
                "fugu_tuned_hosts": [t["hosts"] for t in tuned],
                "fugu_tuned_thresholds": [t["threshold"] for t in tuned],
                "fugu_tuned_windows_over_objective": sum(not t["meets"] for t in tuned),
                "static_hosts": static_hosts,
                "static_feasible": static.feasible,
                "machine_hours": {
                    "mace": mace_hours,
                    "fugu": fugu_hours,
                    "fugu_peak": _hours(peak, hours),
                    "fugu_tuned": _hours(tuned, hours),
                    "static_mace": static_hosts * intervals * w / 3600.0,
                },
            }
        )
    return {
        "workload": name,
        "duration": duration,
        "window": window,
        "operators": len(topology.operators),
        "events": int(counts.sum()),
        "node_capacity": capacity,
        "fugu_threshold": timeline.fugu_threshold,
        "budget": budget,
        "objectives": rows,
    }


THRESHOLDS = tuple(round(0.05 * k, 2) for k in range(20, 0, -1))


def fugu_windows(
    topology: Topology,
    arrivals: Arrivals,
    timeline: Any,
    thresholds: Sequence[float],
    objective: float,
    statistic: str,
) -> list[dict[str, Any]]:
    """Per window of ``timeline``, FUGU with the first of ``thresholds`` whose placement
    meets the objective (the last one tried when none does): with the thresholds
    1.0, 0.95, .. 0.05, FUGU tuned with hindsight to the same objective as Mace."""
    from estimator.placement import PlacementProblem
    from estimator.placement.fugu import fugu
    from estimator.placement.planning import cluster

    pool = cluster(topology, 64, timeline.node_capacity)
    out = []
    for start, length in zip(timeline.window_start, timeline.window_length, strict=True):
        problem = PlacementProblem.from_arrivals(pool, arrivals.window(start, start + length))
        for threshold in thresholds:
            result = fugu(
                problem,
                budget=1.0,
                rng=np.random.default_rng(0),
                threshold=threshold,
                statistic=statistic,
            )
            if result.mace_wc <= objective:
                break
        out.append(
            {
                "threshold": threshold,
                "hosts": int(result.details["nodes_needed"]),
                "meets": result.mace_wc <= objective,
            }
        )
    return out


def _hours(rows: list[dict[str, Any]], hours: np.ndarray) -> float:
    return float(sum(r["hosts"] * h for r, h in zip(rows, hours, strict=True)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--scales", default="1,5", help="comma-separated scale factors")
    parser.add_argument("--repeat", type=int, default=3, help="runs per command (median)")
    parser.add_argument("--budget", type=float, default=1.0, help="search budget per search")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--only", default="", help="comma-separated parts of command names to time (default all)"
    )
    parser.add_argument("--timeline", metavar="WORKLOAD", help="hosts over time on a workload")
    parser.add_argument("--duration", type=float, default=3600.0, help="timeline: seconds")
    parser.add_argument("--window", type=float, default=300.0, help="timeline: window seconds")
    parser.add_argument("--objectives", default="1,2,5", help="timeline: objectives (s)")
    args = parser.parse_args()
    results = [
        run_scale(
            int(s), args.repeat, args.seed, args.budget, [o for o in args.only.split(",") if o]
        )
        for s in args.scales.split(",")
        if s.strip()
    ]
    document: dict[str, Any] = {"benchmark": "plan", "results": results}
    if args.timeline:
        document["timeline"] = workload_timeline(
            args.timeline,
            args.duration,
            args.window,
            [float(v) for v in args.objectives.split(",")],
            args.seed,
            args.budget,
        )
    if args.json:
        print(json.dumps(document, indent=2))
    else:
        for result in results:
            print(f"x{result['scale']}: {result['nodes']} nodes, {result['operators']} operators")
            for name, row in result["commands"].items():
                print(f"  {name:<28}{row['seconds']:8.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
