"""The local (or cluster) SparkSession used by ingestion, with quiet logging.

On a cluster master (``spark://HOST:PORT``, ``yarn``, ``k8s://...``) a session is only
handed out once it can run jobs (:func:`ready_spark`): the standalone master answers and
at least one executor is registered; a job that would otherwise wait forever for
executors is cancelled once none is left for :data:`EXECUTORS_LOST_AFTER` seconds
(:func:`watch_executors`). Both end in :class:`ingest.errors.SparkUnavailable`.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ingest.errors import SparkUnavailable

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"
SPARK_NICE = 10
"""How much lower the local Spark JVM's CPU priority is (``MACE_SPARK_NICE`` overrides;
0 keeps it equal): ingestion yields the CPU to the dashboard pages served beside it."""
LOOPBACK = "127.0.0.1"
LOOPBACK_NAMES = (LOOPBACK, "localhost")
EXECUTORS_WAIT = 60.0
"""Seconds a new cluster session waits for its first executor before giving up."""
EXECUTORS_LOST_AFTER = 30.0
"""Seconds a cluster job may go on with no executor at all before it is cancelled."""
MASTER_PROBE_TIMEOUT = 3.0
HOST_VARIABLE = "MACE_SPARK_DRIVER_HOST"
"""Set it to bind a local Spark driver elsewhere than loopback (e.g. to reach its UI)."""

_QUIET_LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


def _quiet_log4j_file() -> Path:
    path = Path(tempfile.gettempdir()) / "mace-spark-log4j2.properties"
    if not path.is_file() or path.read_text() != _QUIET_LOG4J:
        path.write_text(_QUIET_LOG4J)
    return path


def is_local(master: str) -> bool:
    """Whether ``master`` runs executors inside the driver (``local``, ``local[N]``...)."""
    return master.startswith("local")


def standalone_masters(master: str) -> list[tuple[str, int]]:
    """The (host, port) of each master of a standalone URL (``spark://h1:7077,h2:7077``);
    empty for any other kind of master."""
    if not master.startswith("spark://"):
        return []
    endpoints = []
    for part in master.removeprefix("spark://").split(","):
        address = urlsplit(f"spark://{part}")
        try:
            port = address.port or 7077
        except ValueError:
            continue
        if address.hostname:
            endpoints.append((address.hostname, port))
    return endpoints


def on_loopback(master: str) -> bool:
    """Whether the driver's executors all run on this machine: a local master, or a
    standalone master on loopback (its workers connect from the same machine)."""
    masters = standalone_masters(master)
    return is_local(master) or (bool(masters) and all(h in LOOPBACK_NAMES for h, _ in masters))


def spark_bind_settings(master: str, environ: Mapping[str, str]) -> dict[str, str]:
    """Where the driver and its block manager listen.

    A local master (``local``, ``local[N]``...) or a standalone master on loopback binds
    both to loopback: Spark's RPC has no authentication by default, and nothing outside
    the machine needs to reach it. :data:`HOST_VARIABLE` chooses another address;
    ``SPARK_LOCAL_IP`` (Spark's own setting), ``--conf spark.driver.host=...`` in
    ``PYSPARK_SUBMIT_ARGS`` or a remote cluster master leave Spark's choice alone (the
    executors on other machines must reach the driver)."""
    chosen = environ.get(HOST_VARIABLE, "").strip()
    if chosen:
        return {"spark.driver.host": chosen, "spark.driver.bindAddress": chosen}
    submit_args = environ.get("PYSPARK_SUBMIT_ARGS", "")
    if (
        not on_loopback(master)
        or environ.get("SPARK_LOCAL_IP")
        or "spark.driver.host" in submit_args
        or "spark.driver.bindAddress" in submit_args
    ):
        return {}
    return {"spark.driver.host": LOOPBACK, "spark.driver.bindAddress": LOOPBACK}


def get_spark(
    master: str = DEFAULT_MASTER, *, shuffle_partitions: int | None = None, quiet: bool = True
) -> SparkSession:
    """Get or create the SparkSession: UI off, few shuffle partitions, Arrow collection,
    Spark's own logging at ERROR (set ``quiet=False`` for Spark's defaults), a local
    driver listening on loopback only (:func:`spark_bind_settings`)."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    # Python UDFs (the histogram bucket) run in workers: locally, the driver's interpreter
    # and packages; on a cluster, set PYSPARK_PYTHON to the workers' environment.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    partitions = shuffle_partitions or max(2, 2 * (os.cpu_count() or 1))
    builder = (
        SparkSession.builder.master(master)
        .appName("mace-ingest")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(partitions))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.driver.memory", os.environ.get("MACE_SPARK_DRIVER_MEMORY", "2g"))
    )
    for key, value in spark_bind_settings(master, os.environ).items():
        builder = builder.config(key, value)
    if quiet:
        builder = builder.config(
            "spark.driver.extraJavaOptions",
            f"-Dlog4j2.configurationFile=file:{_quiet_log4j_file()}",
        )
    fresh = SparkContext._active_spark_context is None  # a JVM is started below
    spark = builder.getOrCreate()
    if quiet:
        spark.sparkContext.setLogLevel("ERROR")
    gateway = getattr(spark.sparkContext, "_gateway", None)
    process = getattr(gateway, "proc", None)
    if fresh and process is not None and master.startswith("local"):
        lower_priority(process.pid, int(os.environ.get("MACE_SPARK_NICE", SPARK_NICE)))
    return spark


def lower_priority(pid: int, increment: int) -> None:
    """Raise the nice value of every thread of process ``pid`` by ``increment``.

    The local Spark JVM does batch work; the process that started it may serve pages.
    On Linux the nice value is per thread, so each existing thread is reniced, and the
    threads they start later inherit it. Without ``/proc`` (or the right) it is a no-op."""
    if increment <= 0:
        return
    try:
        threads = [int(tid) for tid in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        threads = [pid]
    for tid in threads:
        # a thread that ended meanwhile (or no permission) keeps its priority
        with contextlib.suppress(OSError):
            nice = os.getpriority(os.PRIO_PROCESS, tid)
            os.setpriority(os.PRIO_PROCESS, tid, min(19, nice + increment))


def is_stopped(context: SparkContext) -> bool:
    """Whether the SparkContext was stopped (by us, or by Spark when the cluster manager
    gave up on the application)."""
    jsc = context._jsc
    return jsc is None or bool(jsc.sc().isStopped())


def executor_count(context: SparkContext) -> int:
    """Executors registered with the driver now (the driver itself not counted); a local
    master's driver runs the tasks, counted as one."""
    if is_local(context.master or ""):
        return 1
    assert context._jsc is not None
    return max(0, len(context._jsc.sc().statusTracker().getExecutorInfos()) - 1)


def check_master(master: str, timeout: float = MASTER_PROBE_TIMEOUT) -> None:
    """Raise :class:`SparkUnavailable` if no master of a standalone URL accepts a TCP
    connection (a quick probe: Spark itself would retry registering for a minute)."""
    reasons = []
    for host, port in standalone_masters(master):
        try:
            socket.create_connection((host, port), timeout=timeout).close()
            return
        except OSError as exc:
            reasons.append(f"{host}:{port} {exc.strerror or exc}")
    if reasons:
        raise SparkUnavailable(f"Spark master {master} is unreachable ({'; '.join(reasons)})")


def spark_problem(context: SparkContext | None = None) -> str | None:
    """Why the SparkContext (default: the process's, if any) cannot run jobs now; None
    if it can, or if there is none."""
    from pyspark import SparkContext

    context = context or SparkContext._active_spark_context
    if context is None:
        return None
    if is_stopped(context):
        return "the Spark session was stopped (the cluster gave up on the application?)"
    if executor_count(context) == 0:
        return f"no Spark executor is registered with {context.master}"
    return None


def ready_spark(
    master: str = DEFAULT_MASTER,
    spark: SparkSession | None = None,
    *,
    wait: float = EXECUTORS_WAIT,
) -> SparkSession:
    """A session that can run jobs now: ``spark``, else the active session or a new one
    (:func:`get_spark`). On a cluster, a standalone master must answer and an executor be
    registered within ``wait`` seconds; otherwise :class:`SparkUnavailable`."""
    if spark is not None and is_stopped(spark.sparkContext):
        raise SparkUnavailable(spark_problem(spark.sparkContext) or "the session was stopped")
    if spark is None:
        check_master(master)
        spark = get_spark(master)
        if is_stopped(spark.sparkContext):  # getOrCreate handed back a session Spark ended
            spark.stop()
            spark = get_spark(master)
    context = spark.sparkContext
    deadline = time.monotonic() + wait
    while not is_stopped(context):
        if executor_count(context) > 0:
            return spark
        if time.monotonic() >= deadline:
            break
        time.sleep(0.5)
    problem = spark_problem(context) or "no Spark executor is registered"
    if not is_stopped(context):
        problem += f" after {wait:g} s (are workers up, with free cores and memory?)"
    raise SparkUnavailable(problem)


def stop_spark(spark: SparkSession | None = None) -> None:
    """Stop ``spark`` (or the process's SparkContext, whichever thread made it), so that
    the next :func:`ready_spark` registers a new application with the cluster there then."""
    from pyspark import SparkContext

    if spark is not None:
        spark.stop()
    elif SparkContext._active_spark_context is not None:
        SparkContext._active_spark_context.stop()


@contextmanager
def watch_executors(
    spark: SparkSession, lost_after: float = EXECUTORS_LOST_AFTER, poll: float = 1.0
) -> Iterator[None]:
    """Within the block, cancel the session's jobs once a cluster session has had no
    executor for ``lost_after`` seconds: Spark would wait for executors forever, and the
    cancelled job ends in an error that :func:`spark_problem` explains."""
    context = spark.sparkContext
    if is_local(context.master or ""):
        yield
        return
    done = threading.Event()

    def watch() -> None:
        missing_since: float | None = None
        while not done.wait(poll):
            try:
                if is_stopped(context):
                    return
                if executor_count(context) > 0:
                    missing_since = None
                    continue
            except Exception:  # the gateway is going away with the driver
                return
            now = time.monotonic()
            missing_since = missing_since if missing_since is not None else now
            if now - missing_since >= lost_after:
                context.cancelAllJobs()
                missing_since = None

    thread = threading.Thread(target=watch, name="mace-spark-executors", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(timeout=poll + 5)
