"""A throwaway Spark standalone cluster on 127.0.0.1, for tests and benchmarks.

It runs the master and worker classes of the installed pyspark (``<pyspark>/jars``; the
pip package ships no ``start-master.sh``) as plain ``java`` processes, each in its own
process group, on free loopback ports, so that :meth:`LocalCluster.stop` can kill them
and the executors they started by process group id. A real deployment starts its
cluster with Spark's own scripts; ingestion only needs the master URL.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from ingest.errors import IngestError
from ingest.session import LOOPBACK

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
DAEMON_HEAP = "256m"
"""Heap of the master and worker daemons themselves (executors are separate JVMs)."""


def pyspark_home() -> Path:
    """The pyspark installation: its ``jars/`` folder is Spark."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def scala_version(home: Path) -> str:
    """Spark's Scala version, from its core jar (``spark-core_2.13-...jar``): the workers'
    launcher needs it to find the jars of the executors it starts."""
    for jar in (home / "jars").glob("spark-core_*.jar"):
        return jar.name.removeprefix("spark-core_").split("-")[0]
    raise IngestError(f"no spark-core jar in {home / 'jars'}: is pyspark installed whole?")


def free_port() -> int:
    """A TCP port free on loopback right now."""
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


@dataclass
class LocalCluster:
    """A master and ``workers`` workers, each with ``cores`` cores and ``memory``.

    ``start()`` returns once every worker is registered and alive in the master's JSON
    status; ``stop()`` kills every process group it started (idempotent). Use it as a
    context manager so that a failure in between leaks no JVM."""

    workers: int = 2
    cores: int = 1
    memory: str = "1g"
    port: int = 0
    env: dict[str, str] | None = None
    root: Path | None = None
    _processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    _owned_root: bool = False
    webui_port: int = 0

    @property
    def url(self) -> str:
        return f"spark://{LOOPBACK}:{self.port}"

    def __enter__(self) -> LocalCluster:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self, timeout: float = 90.0) -> None:
        """Start the master, then the workers, and wait for them to register."""
        if self.root is None:
            self.root = Path(tempfile.mkdtemp(prefix="mace-spark-cluster-"))
            self._owned_root = True
        self.root.mkdir(parents=True, exist_ok=True)
        self.port = self.port or free_port()
        self.webui_port = free_port()
        self._spawn(
            "master",
            [
                MASTER_CLASS,
                "--host",
                LOOPBACK,
                "--port",
                str(self.port),
                "--webui-port",
                str(self.webui_port),
            ],
        )
        self.wait_for_workers(0, timeout)
        for k in range(self.workers):
            work = self.root / f"worker-{k}"
            work.mkdir(parents=True, exist_ok=True)
            self._spawn(
                f"worker-{k}",
                [
                    WORKER_CLASS,
                    self.url,
                    "--host",
                    LOOPBACK,
                    "--port",
                    str(free_port()),
                    "--webui-port",
                    str(free_port()),
                    "--cores",
                    str(self.cores),
                    "--memory",
                    self.memory,
                    "--work-dir",
                    str(work),
                ],
            )
        self.wait_for_workers(self.workers, timeout)

    def _spawn(self, name: str, arguments: list[str]) -> None:
        java = shutil.which("java")
        if java is None:
            raise IngestError("java is not on PATH: a Spark cluster needs Java 17 or 21")
        home = pyspark_home()
        assert self.root is not None
        env = dict(os.environ if self.env is None else self.env)
        env.setdefault("SPARK_HOME", str(home))
        env.setdefault("SPARK_SCALA_VERSION", scala_version(home))  # for executor commands
        env["SPARK_LOCAL_IP"] = LOOPBACK
        env["SPARK_LOG_DIR"] = str(self.root)
        env["SPARK_WORKER_DIR"] = str(self.root)
        log = (self.root / f"{name}.log").open("ab")
        try:
            self._processes.append(
                subprocess.Popen(
                    [java, f"-Xmx{DAEMON_HEAP}", "-cp", f"{home / 'jars'}/*", *arguments],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    start_new_session=True,  # its own process group, with its executors
                )
            )
        finally:
            log.close()

    def status(self) -> dict[str, object]:
        """The master's JSON status (``/json`` of its web UI)."""
        with urllib.request.urlopen(f"http://{LOOPBACK}:{self.webui_port}/json", timeout=5) as r:
            return dict(json.load(r))

    def alive_workers(self) -> int:
        workers = self.status().get("workers", [])
        assert isinstance(workers, list)
        return sum(1 for w in workers if w.get("state") == "ALIVE")

    def wait_for_workers(self, count: int, timeout: float) -> None:
        """Until the master answers and ``count`` workers are alive in it."""
        deadline = time.monotonic() + timeout
        last = "no answer"
        while time.monotonic() < deadline:
            for process in self._processes:
                if process.poll() is not None:
                    raise IngestError(
                        f"a Spark daemon exited with status {process.returncode}; "
                        f"see the logs in {self.root}"
                    )
            try:
                alive = self.alive_workers()
                if alive >= count:
                    return
                last = f"{alive} of {count} workers alive"
            except (OSError, ValueError) as exc:  # not listening, or HTML while it starts
                last = str(exc)
            time.sleep(0.5)
        raise IngestError(f"the Spark cluster did not come up in {timeout:g} s ({last})")

    def stop(self) -> None:
        """Kill every process group started (SIGTERM, then SIGKILL after 10 s)."""
        for process in self._processes:
            _signal_group(process, signal.SIGTERM)
        deadline = time.monotonic() + 10
        for process in self._processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            _signal_group(process, signal.SIGKILL)  # stragglers: executors of the group
            process.wait()
        self._processes.clear()
        if self._owned_root and self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None
            self._owned_root = False


def _signal_group(process: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)
