"""Benchmark: dashboard response times with and without a scheduled ingestion batch.

Builds a store with one simulated run (the pages' data), then serves it twice with
``mace serve`` on 127.0.0.1: once idle, once while ``--landing`` ingests a large
synthetic batch in the same process. Each phase sends the same bounded load: the
Overview, Nodes and Reports callbacks, exactly as the browser posts them, from
``--concurrency`` threads, ``--requests`` in all, every request with a timeout.
Prints JSON: median and p95 per phase, their ratio, failures, and whether the batch
was still running when the loaded phase ended (else the comparison is void).

    .venv/bin/python benchmarks/bench_load.py --json [--requests 200] [--concurrency 20]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks.bench_ingest import write_landing
from dashboard.nodes import ids as nodes_ids
from dashboard.overview import ids as overview_ids
from dashboard.reports import ids as reports_ids
from dashboard.shell import ids as shell_ids

MACE = [sys.executable, "-m", "mace.cli"]
PAGE_CALLBACKS = {  # the main callback of each page, named by its first output
    "overview": f"{overview_ids.OV_LATENCY}.figure",
    "nodes": f"{nodes_ids.ND_HEATMAP}.figure",
    "reports": f"{reports_ids.RP_TABLE}.data",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def build_store(work: Path, seconds: int, seed: int) -> tuple[Path, str]:
    """A store holding one simulated clickstream run (what the pages show)."""
    landing, db = work / "pages-landing", work / "store.duckdb"
    subprocess.run(
        [
            *MACE,
            "simulate",
            "clickstream-5q",
            "--duration",
            str(seconds),
            "--seed",
            str(seed),
            "--out",
            str(landing),
            "--run-id",
            "pages",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    subprocess.run(
        [*MACE, "ingest", str(landing), "--db", str(db)],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return db, "pages"


@contextmanager
def serving(db: Path, port: int, landing: Path | None, log: Path, nice: int = 10) -> Iterator[None]:
    argv = [*MACE, "serve", "--db", str(db), "--port", str(port)]
    if landing is not None:
        argv += ["--landing", str(landing), "--every", "1"]
    with log.open("w") as out:
        env = {**os.environ, "MACE_SPARK_NICE": str(nice)}
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
        try:
            deadline = time.monotonic() + 120
            while True:
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5).close()
                    break
                except OSError as exc:
                    if process.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(f"mace serve did not start: {log.read_text()}") from exc
                    time.sleep(0.5)
            yield
        finally:
            process.terminate()
            process.wait(timeout=60)


def callback_bodies(port: int, run_id: str) -> dict[str, bytes]:
    """The POST bodies of each page's main callback, built from /_dash-dependencies."""
    base = f"http://127.0.0.1:{port}"
    urllib.request.urlopen(f"{base}/", timeout=30).close()
    with urllib.request.urlopen(f"{base}/_dash-dependencies", timeout=30) as response:
        dependencies = json.load(response)
    values: dict[tuple[str, str], Any] = {
        (shell_ids.RUN, "value"): run_id,
        (shell_ids.ESTIMATOR, "value"): "mace",
        (shell_ids.TIME_RANGE, "data"): {"preset": "all"},
        (shell_ids.CLOCK, "value"): "wall",
    }
    bodies = {}
    for page, first_output in PAGE_CALLBACKS.items():
        spec = next(d for d in dependencies if d["output"].lstrip(".").startswith(first_output))
        outputs = [
            {"id": part.rsplit(".", 1)[0], "property": part.rsplit(".", 1)[1]}
            for part in spec["output"].strip(".").split("...")
        ]

        def fill(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return [{**e, "value": values.get((e["id"], e["property"]))} for e in entries]

        body = {
            "output": spec["output"],
            "outputs": outputs,
            "inputs": fill(spec["inputs"]),
            "state": fill(spec["state"]),
            "changedPropIds": [f"{shell_ids.RUN}.value"],
        }
        bodies[page] = json.dumps(body).encode()
    return bodies


def load(port: int, bodies: dict[str, bytes], requests: int, concurrency: int) -> dict[str, Any]:
    """``requests`` callback posts (pages in turn) from ``concurrency`` threads."""
    url = f"http://127.0.0.1:{port}/_dash-update-component"
    order = [list(bodies)[i % len(bodies)] for i in range(requests)]

    def one(page: str) -> float | None:
        request = urllib.request.Request(
            url, data=bodies[page], headers={"Content-Type": "application/json"}
        )
        start = time.perf_counter()
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                response.read()
        except (urllib.error.URLError, OSError):
            return None
        return time.perf_counter() - start

    start = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        times = list(pool.map(one, order))
    elapsed = time.perf_counter() - start
    ok = sorted(t for t in times if t is not None)
    return {
        "requests": requests,
        "failures": len(times) - len(ok),
        "median_s": statistics.median(ok) if ok else None,
        "p95_s": ok[int(0.95 * (len(ok) - 1))] if ok else None,
        "elapsed_s": elapsed,
    }


def batch_running(log: Path) -> bool:
    """True until the serve log reports the first ingest batch done."""
    return "ingest: batch" not in log.read_text()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--rows", type=int, default=6_000_000, help="rows in the ingest batch")
    parser.add_argument("--seconds", type=int, default=600, help="length of the pages' run")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument(
        "--nice",
        type=int,
        nargs="+",
        default=[0, 10],
        help="MACE_SPARK_NICE values to compare (one ingesting phase each; 0 = no change)",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if not (0 < args.requests <= 2000 and 0 < args.concurrency <= 64):
        parser.error("--requests must be in 1..2000 and --concurrency in 1..64")

    with tempfile.TemporaryDirectory(prefix="mace-bench-load-") as tmp:
        work = Path(tmp)
        db, run_id = build_store(work, args.seconds, args.seed)
        big = work / "batch-landing"
        write_landing(big, "batch", args.rows, files=16, seed=args.seed)
        result: dict[str, Any] = {"cpus": os.cpu_count(), "rows_in_batch": args.rows}

        port = free_port()
        with serving(db, port, None, work / "idle.log"):
            bodies = callback_bodies(port, run_id)
            load(port, bodies, len(bodies) * 2, 1)  # warm the run cache
            result["idle"] = load(port, bodies, args.requests, args.concurrency)

        for nice in args.nice:
            port = free_port()
            log = work / f"busy-nice{nice}.log"
            fresh = work / f"store-nice{nice}.duckdb"  # its manifest has not seen the batch
            shutil.copyfile(db, fresh)
            with serving(fresh, port, big, log, nice):
                bodies = callback_bodies(port, run_id)
                load(port, bodies, len(bodies) * 2, 1)
                time.sleep(3)  # the batch starts at the first tick; let Spark get going
                started_busy = batch_running(log)
                busy = load(port, bodies, args.requests, args.concurrency)
                busy["batch_covered_the_load"] = started_busy and batch_running(log)
                deadline = time.monotonic() + 900
                while batch_running(log) and time.monotonic() < deadline:
                    time.sleep(1)
                busy["batch"] = next(
                    (line for line in log.read_text().splitlines() if "ingest: batch" in line),
                    None,
                )
            idle = result["idle"]
            if idle["p95_s"] and busy["p95_s"]:
                busy["p95_ratio"] = busy["p95_s"] / idle["p95_s"]
                busy["median_ratio"] = busy["median_s"] / idle["median_s"]
            result[f"ingesting_spark_nice_{nice}"] = busy
    print(json.dumps(result, indent=None if args.json else 2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
