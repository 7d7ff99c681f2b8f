"""Running the demo's Flink job: its virtual environment, its process, its REST endpoint.

``apache-flink`` pins older numpy, pandas and pyarrow than the product, so PyFlink
lives in its own virtual environment, ``.venv-flink`` beside the product's
(``MACE_FLINK_VENV`` overrides the place). The product only talks to the job over
REST and reads the files it writes.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from connectors.errors import ConnectorError
from connectors.flink.rest import FlinkRest, FlinkRestError

REPO = Path(__file__).resolve().parents[2]
FLINK_REQUIREMENT = "apache-flink>=2.3,<2.4"
START_TIMEOUT = 240.0


def flink_venv() -> Path:
    return Path(os.environ.get("MACE_FLINK_VENV", REPO / ".venv-flink"))


def flink_python(create: bool = True) -> Path:
    """The Flink environment's interpreter, creating the environment if needed (~1 min)."""
    venv = flink_venv()
    python = venv / "bin" / "python"
    ready = venv / ".installed"
    if ready.is_file():
        return python
    if not create:
        raise ConnectorError(f"no Flink environment at {venv}; run `make flink-env`")
    print(f"flink: creating {venv} ({FLINK_REQUIREMENT}, about 850 MB)", flush=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", FLINK_REQUIREMENT], check=True
        )
    except (subprocess.CalledProcessError, OSError) as exc:
        raise ConnectorError(f"cannot create the Flink environment at {venv}: {exc}") from None
    ready.touch()
    return python


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_demo_job(
    input_dir: Path, landing: Path, run_id: str, log: Path, *, enrich_cost: float, job_name: str
) -> tuple[subprocess.Popen[bytes], str]:
    """Start the PyFlink demo job on a local MiniCluster; return the process and its REST
    URL once the job is running (raises if it does not come up in ``START_TIMEOUT``)."""
    port = free_port()
    arguments = [
        "connectors.flink.demo_job", "--input", str(input_dir), "--landing", str(landing),
        "--run-id", run_id, "--rest-port", str(port), "--enrich-cost", str(enrich_cost),
        "--job-name", job_name,
    ]  # fmt: skip
    return start_job(arguments, port, log)


def start_sql_demo_job(
    input_dir: Path, categories: Path, outputs: Path, log: Path, *, hash_repeat: int,
    job_name: str, prometheus_port: int,
) -> tuple[subprocess.Popen[bytes], str]:  # fmt: skip
    """Start the SQL demo job (:mod:`connectors.flink.sql_demo_job`) with its Prometheus
    reporter on ``prometheus_port``; as :func:`start_demo_job`."""
    port = free_port()
    arguments = [
        "connectors.flink.sql_demo_job", "--input", str(input_dir), "--categories",
        str(categories), "--outputs", str(outputs), "--rest-port", str(port),
        "--prometheus-port", str(prometheus_port), "--hash-repeat", str(hash_repeat),
        "--job-name", job_name,
    ]  # fmt: skip
    return start_job(arguments, port, log)


def start_job(arguments: list[str], port: int, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Run ``python -m <arguments>`` in the Flink environment (a job whose MiniCluster's
    REST API is on ``port``); return the process and the REST URL once a job runs."""
    python = flink_python()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with log.open("ab") as out:
        process = subprocess.Popen(
            [str(python), "-m", *arguments],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    rest = FlinkRest(url, timeout=2.0)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ConnectorError(
                f"the Flink job exited with status {process.returncode}; see {log}"
            )
        try:
            if any(j.state == "RUNNING" for j in rest.jobs()):
                return process, url
        except FlinkRestError:
            pass
        time.sleep(1.0)
    stop_process(process)
    raise ConnectorError(f"the Flink job did not start within {START_TIMEOUT:g} s; see {log}")


def stop_process(process: subprocess.Popen[bytes], grace: float = 15.0) -> None:
    """SIGTERM the job's process group, then SIGKILL it after ``grace`` seconds."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=grace)
