"""The local (or cluster) SparkSession used by ingestion, with quiet logging."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"
SPARK_NICE = 10
"""How much lower the local Spark JVM's CPU priority is (``MACE_SPARK_NICE`` overrides;
0 keeps it equal): ingestion yields the CPU to the dashboard pages served beside it."""
LOOPBACK = "127.0.0.1"
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


def spark_bind_settings(master: str, environ: Mapping[str, str]) -> dict[str, str]:
    """Where the driver and its block manager listen.

    A local master (``local``, ``local[N]``...) binds both to loopback: Spark's RPC has
    no authentication by default, and nothing outside the machine needs to reach it.
    :data:`HOST_VARIABLE` chooses another address; ``SPARK_LOCAL_IP`` (Spark's own
    setting), ``--conf spark.driver.host=...`` in ``PYSPARK_SUBMIT_ARGS`` or a cluster
    master leave Spark's choice alone."""
    chosen = environ.get(HOST_VARIABLE, "").strip()
    if chosen:
        return {"spark.driver.host": chosen, "spark.driver.bindAddress": chosen}
    submit_args = environ.get("PYSPARK_SUBMIT_ARGS", "")
    if (
        not master.startswith("local")
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
