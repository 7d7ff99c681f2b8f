"""Benchmark the Flink collector: time per poll against vertices and subtasks.

A local HTTP server answers like Flink's REST API for a synthetic chain job of
``V`` vertices of parallelism ``P`` (one counter request per vertex, as against a
real JobManager); the collector polls it and the median time per poll is
reported per (V, P). For reference, the same run times one bare HTTP request
per vertex to the same server (what a poll cannot go below).

    python benchmarks/bench_collector.py --vertices 4 16 64 --parallelism 1 4 --json
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any
from urllib.parse import parse_qs, urlparse

from connectors.flink.collector import FlinkCollector
from connectors.flink.rest import FlinkRest

JOB = "a" * 32


def synthetic_job(vertices: int, parallelism: int) -> dict[str, Any]:
    """REST answers of a chain job ``src -> op1 -> ... -> op{V-1}``."""
    ids = [f"{k:032x}" for k in range(vertices)]
    names = ["Source: src", *[f"op{k}" for k in range(1, vertices)]]
    return {
        "overview": {"jobs": [{"jid": JOB, "name": "bench", "state": "RUNNING", "start-time": 0}]},
        "job": {
            "jid": JOB,
            "name": "bench",
            "state": "RUNNING",
            "start-time": 0,
            "vertices": [
                {"id": i, "name": n, "parallelism": parallelism}
                for i, n in zip(ids, names, strict=True)
            ],
        },
        "plan": {
            "plan": {
                "nodes": [
                    {"id": i, "inputs": [] if k == 0 else [{"id": ids[k - 1], "num": 0}]}
                    for k, i in enumerate(ids)
                ]
            }
        },
        "vertex": {
            "subtasks": [{"subtask": s, "taskmanager-id": "tm-1"} for s in range(parallelism)]
        },
        "taskmanagers": {"taskmanagers": [{"id": "tm-1", "hardware": {"cpuCores": 2}}]},
    }


@contextmanager
def serve(answers: dict[str, Any]) -> Iterator[str]:
    counter = {"n": 0}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            url = urlparse(self.path)
            parts = url.path.strip("/").split("/")
            if parts == ["jobs", "overview"]:
                body: Any = answers["overview"]
            elif parts == ["taskmanagers"]:
                body = answers["taskmanagers"]
            elif parts[-1] == "plan":
                body = answers["plan"]
            elif parts[-1] == "metrics":
                counter["n"] += 1
                names = parse_qs(url.query).get("get", [""])[0].split(",")
                body = [{"id": n, "value": str(counter["n"])} for n in names]
            elif len(parts) == 4:
                body = answers["vertex"]
            else:
                body = answers["job"]
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def measure(vertices: int, parallelism: int, polls: int) -> dict[str, float]:
    answers = synthetic_job(vertices, parallelism)
    with serve(answers) as url, TemporaryDirectory() as out:
        collector = FlinkCollector(FlinkRest(url), Path(out), run_id="bench")
        poll_times = []
        for _ in range(polls):
            start = time.perf_counter()
            collector.poll()
            poll_times.append(time.perf_counter() - start)
        bare = []
        for _ in range(polls):
            start = time.perf_counter()
            for _ in range(vertices):
                with urllib.request.urlopen(f"{url}/taskmanagers") as response:
                    response.read()
            bare.append(time.perf_counter() - start)
    return {
        "vertices": vertices,
        "parallelism": parallelism,
        "poll_ms_median": 1000 * statistics.median(poll_times),
        "bare_requests_ms_median": 1000 * statistics.median(bare),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vertices", type=int, nargs="+", default=[4, 16, 64])
    parser.add_argument("--parallelism", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--polls", type=int, default=20)
    parser.add_argument("--json", action="store_true", help="one JSON object")
    args = parser.parse_args()
    rows = [measure(v, p, args.polls) for v in args.vertices for p in args.parallelism]
    if args.json:
        print(json.dumps({"collector": rows}))
    else:
        for row in rows:
            print(row)


if __name__ == "__main__":
    main()
