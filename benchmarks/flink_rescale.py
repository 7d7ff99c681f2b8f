"""A real Flink job rescaled while mace follows it: each change verified (docs/flink.md).

The job (a test job of ``benchmarks/flink_jobs``, ``--adaptive``: Flink's adaptive
scheduler, checkpoints every second) starts at parallelism 1 on a local MiniCluster with
its On-Off producer, and ``mace collect flink``'s collector follows it from this process.
At each ``--step SECONDS:PARALLELISM`` (seconds after the producer's start) this script
sends the adaptive scheduler's ``PUT /jobs/<id>/resource-requirements`` (the call the
What-if page's Apply sends) setting every vertex but the source's to that parallelism;
the scheduler rescales the job at its next checkpoint, and the collector writes a
topology version. After the producer ends and the job drains, the landing folder is
ingested and ``mace report --json``'s ``changes`` printed: per change, the worst case
the model fitted before it predicts for the new parallelism on the arrivals measured
after it, against the worst case measured after it. The run holds ``--lock``.

    python -m benchmarks.flink_rescale --workdir /tmp/rescale --job chain \
        --duration 150 --step 50:2 --step 100:1
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import yaml

from benchmarks import flink_grid as grid


def rescale(url: str, job_id: str, parallelism: int) -> dict[str, Any]:
    """Send the resource requirements that put every non-source vertex at
    ``parallelism``; the body sent."""
    from dashboard.whatif.flink_rest import get_json, put_json

    base = f"{url}/jobs/{job_id}"
    current = get_json(f"{base}/resource-requirements")
    vertices = get_json(base)["vertices"]
    body = {str(k): dict(v) for k, v in current.items()}
    for vertex in vertices:
        if not str(vertex["name"]).startswith("Source:"):
            bounds = {"lowerBound": parallelism, "upperBound": parallelism}
            body[str(vertex["id"])] = {"parallelism": bounds}
    put_json(f"{base}/resource-requirements", body)
    return body


def restart(path: Path) -> dict[str, Any]:
    """A version file's name, the time the job stopped before it and how long it was
    stopped (the version is valid from the epoch in its name)."""
    stopped = yaml.safe_load(path.read_text(encoding="utf-8")).get("stopped")
    valid_from = float(path.stem.removeprefix("topology-"))
    downtime = None if stopped is None else round(valid_from - float(stopped), 3)
    return {"file": path.name, "stopped": stopped, "downtime": downtime}


def run(args: argparse.Namespace) -> dict[str, Any]:
    from connectors.flink.collector import FlinkCollector
    from connectors.flink.rest import FlinkRest
    from connectors.flink.runtime import stop_process

    spec = grid.JOBS[args.job]
    run_id = f"{args.job}-rescaled-s{args.seed}"
    run_dir, landing = args.workdir / "runs" / run_id, args.workdir / "landing"
    inputs = [run_dir / f"input-{i}" for i in range(spec.inputs)]
    for folder in inputs:
        folder.mkdir(parents=True, exist_ok=True)
    low, high = grid.rates(args.job, args.load)
    load_before = os.getloadavg()
    process, url = grid.start_job(
        spec, inputs, landing, run_id, run_dir, args.job, chaining=True, extra=("--adaptive",)
    )
    producers: list[subprocess.Popen[str]] = []
    stop = threading.Event()
    try:  # the job and the producers never outlive a failure
        rest = FlinkRest(url)
        collector = FlinkCollector(rest, landing, run_id=run_id, flush_every=2.0)
        grid.progress(f"{run_id}: job {collector.job_id} running at {url}")
        failures: list[str] = []

        def collect() -> None:
            try:
                collector.run(stop)
            except Exception as exc:  # recorded with the run: the collector refused the job
                failures.append(f"{type(exc).__name__}: {exc}")

        collecting = threading.Thread(target=collect, daemon=True)
        collecting.start()
        start = time.time() + 1.0
        producers = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "benchmarks.flink_jobs.producer",
                    "--out",
                    str(folder),
                    "--seed",
                    str(args.seed + 1000 * i),
                    "--low-rate",
                    str(low),
                    "--high-rate",
                    str(high),
                    "--duration",
                    str(args.duration),
                    "--start",
                    str(start),
                ],
                cwd=grid.REPO,
                stdout=subprocess.PIPE,
                text=True,
            )
            for i, folder in enumerate(inputs)
        ]
        steps = []
        for at, parallelism in sorted(args.step):
            time.sleep(max(0.0, start + at - time.time()))
            rescale(url, collector.job_id, parallelism)
            steps.append({"at": round(time.time() - start, 1), "parallelism": parallelism})
            grid.progress(f"{run_id}: asked for parallelism {parallelism}")
        while any(p.poll() is None for p in producers):
            time.sleep(0.5)
        drained = grid.wait_for_drain(collector, time.time() + grid.DRAIN)
        time.sleep(grid.SETTLE)
        stop.set()
        collecting.join(timeout=30)
        timestamps = rest.job(collector.job_id).get("timestamps", {})
    finally:
        stop.set()
        for producer in producers:
            producer.terminate()
        stop_process(process)
    versions = [restart(p) for p in sorted((landing / run_id).glob("topology-*.yaml"))]
    grid.progress(f"{run_id}: stopped, drained={drained}, versions {versions}")
    report = grid.ingest_and_report([{"run": run_id}], landing, args.workdir / "mace.duckdb", None)
    raw = json.loads(
        grid.mace("report", "--json", "--db", str(args.workdir / "mace.duckdb"), "--run", run_id)
    )
    return {
        "run": run_id,
        "job": args.job,
        "rates": {"low": low, "high": high},
        "steps": steps,
        "versions": versions,
        "restarting_at": timestamps.get("RESTARTING"),
        "collector": {
            "versions": collector.stats.versions,
            "polls": collector.stats.polls,
            "failed_polls": collector.stats.failed_polls,
            "error": failures[0] if failures else None,
        },
        "drained": drained,
        "loadavg_before": load_before[0],
        "loadavg_after": os.getloadavg()[0],
        "system": report[0].get("system"),
        "changes": [
            {
                **c,
                "predicted_error": grid.relative(c["predicted_wc_after"], c["measured_wc_after"]),
            }
            for c in raw["changes"]
        ],
    }


def step(text: str) -> tuple[float, int]:
    at, _, parallelism = text.partition(":")
    return float(at), int(parallelism)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--job", choices=sorted(j for j in grid.JOBS if not grid.JOBS[j].sql),
                        default="chain")  # fmt: skip
    parser.add_argument("--load", choices=list(grid.LEVELS), default="5w")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--duration", type=float, default=150.0)
    parser.add_argument("--step", type=step, action="append", required=True,
                        metavar="SECONDS:PARALLELISM")  # fmt: skip
    parser.add_argument("--lock", type=Path, default=grid.DEFAULT_LOCK)
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    with grid.locked(args.lock):
        result = run(args)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
