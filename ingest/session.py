"""The local (or cluster) SparkSession used by ingestion, with quiet logging."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"

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


def get_spark(
    master: str = DEFAULT_MASTER, *, shuffle_partitions: int | None = None, quiet: bool = True
) -> SparkSession:
    """Get or create the SparkSession: UI off, few shuffle partitions, Arrow collection,
    Spark's own logging at ERROR (set ``quiet=False`` for Spark's defaults)."""
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
    if quiet:
        builder = builder.config(
            "spark.driver.extraJavaOptions",
            f"-Dlog4j2.configurationFile=file:{_quiet_log4j_file()}",
        )
    spark = builder.getOrCreate()
    if quiet:
        spark.sparkContext.setLogLevel("ERROR")
    return spark
