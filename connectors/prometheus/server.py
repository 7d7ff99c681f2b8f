"""A local Prometheus server (Debian's ``prometheus`` binary) for the demo and the tests.

It listens on a free loopback port, keeps its data and a generated configuration in a
folder of the caller's, and scrapes the given ``host:port`` targets every second.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from connectors.errors import ConnectorError
from connectors.flink.runtime import free_port

START_TIMEOUT = 60.0
SCRAPE_INTERVAL = "1s"


def prometheus_missing(tools: tuple[str, ...] = ("prometheus",)) -> str | None:
    """Why no Prometheus can run here, in one line (None: it can)."""
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if missing:
        return (
            f"{' and '.join(missing)} not installed (Debian package prometheus: make system-deps)"
        )
    return None


@contextmanager
def run_prometheus(
    workdir: Path,
    scrape: tuple[str, ...] = (),
    *,
    lookback: str = "5m",
    basic_auth: tuple[str, str] | None = None,
) -> Iterator[str]:
    """Start Prometheus on 127.0.0.1 with its data in ``workdir/tsdb`` (kept: backfilled
    blocks there are served), scraping ``scrape`` every second; yield its URL once it is
    ready, stop it on exit."""
    problem = prometheus_missing()
    if problem is not None:
        raise ConnectorError(problem)
    data = workdir / "tsdb"
    data.mkdir(parents=True, exist_ok=True)
    jobs: list[dict[str, object]] = [
        {"job_name": f"target{i}", "static_configs": [{"targets": [target]}]}
        for i, target in enumerate(scrape)
    ]
    if basic_auth is not None:
        for job in jobs:
            job["basic_auth"] = {"username": basic_auth[0], "password": basic_auth[1]}
    config = workdir / "prometheus.yml"
    config.write_text(
        json.dumps({"global": {"scrape_interval": SCRAPE_INTERVAL}, "scrape_configs": jobs})
    )
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log_path = workdir / "prometheus.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [
                "prometheus",
                f"--config.file={config}",
                f"--storage.tsdb.path={data}",
                "--storage.tsdb.retention.time=100y",
                f"--query.lookback-delta={lookback}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            _wait_ready(url, process, log_path)
            yield url
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=20)


def _wait_ready(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            tail = log.read_text(errors="replace").strip().splitlines()[-1:] or ["no output"]
            raise ConnectorError(f"prometheus did not start ({log}): {tail[0]}")
        time.sleep(0.2)
