"""Extract: find new files in the landing folder and read them into the parsed contract.

The driver lists the folder and reads Parquet schemas through the local file system, so
LANDING is a folder path on the driver; Spark's executors open the same absolute paths
(``file:`` URIs) on their machines: on a cluster, a shared file system mounted at the same
path everywhere (docs/cluster.md).

Landing layout (docs/design.md, "Raw telemetry"): ``<landing>/<run_id>/topology.yaml``, optional
``topology-<epoch>.yaml`` placement versions, and the record sets
``arrivals/``, ``executions/``, ``outputs/`` holding Parquet or JSON Lines files.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from estimator.errors import ModelError
from estimator.loaders import load_topology, load_version
from estimator.model import Topology, validate_placement
from ingest.errors import IngestError
from ingest.transforms import (
    DOUBLE,
    LONG,
    MALFORMED,
    MAX_INTEGER,
    MISSING,
    OUT_OF_RANGE,
    RECORD_SETS,
    STRING,
    WRONG_TYPE,
    union_all,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

PARQUET_SUFFIXES = (".parquet", ".pq")
JSON_SUFFIXES = (".jsonl", ".json", ".ndjson")
HIDDEN_PREFIXES = (".", "_")
IN_PROGRESS_SUFFIXES = (".inprogress", ".tmp")
"""Names a writer uses while a file is not complete: never read (see :func:`is_data_file`)."""
FLINK_PART_FILE = re.compile(r"^part-[0-9a-f-]+$")
"""A file Flink's file sink committed without a suffix (``part-<uuid>-<subtask>-<n>``, as
the SQL filesystem connector names them): JSON Lines, or Parquet by its magic bytes."""
PARQUET_MAGIC = b"PAR1"
INCOMPLETE_LINE = "last line incomplete (still being written?)"
_VERSION_FILE = re.compile(r"^topology-(?P<epoch>[-+0-9.eE]+)\.ya?ml$")


@dataclass(frozen=True)
class LandingFile:
    """One data file; ``path`` is relative to the landing folder (the manifest key)."""

    path: str
    absolute: Path
    run_id: str
    record_set: str
    size_bytes: int
    modified_at: float

    @property
    def name(self) -> str:
        return self.absolute.name

    @property
    def uri(self) -> str:
        """The file as Spark reads it: a ``file:`` URI of its absolute path (symbolic links
        kept), which the executors of a cluster open on their own machines: the landing
        folder must be at the same path on the driver and every worker (docs/cluster.md).
        Explicit, so that a Hadoop ``fs.defaultFS`` does not redirect it."""
        return "file://" + self.absolute.absolute().as_posix()


@dataclass
class RunFolder:
    """A run folder: its topology (or why it is unusable), placement versions and files."""

    run_id: str
    topology: Topology | None
    error: str | None
    versions: list[tuple[float, dict[str, str], dict[str, float], float | None]] = field(
        default_factory=list
    )
    """Later placement versions: (valid_from, placement, node capacities, the time the
    job stopped before it or None)."""
    warnings: list[str] = field(default_factory=list)
    files: list[LandingFile] = field(default_factory=list)
    stamp: str = ""  # the topology files' names, sizes and modification times


def landing_folder(landing: str | Path) -> Path:
    """``landing`` as a folder on this machine, or :class:`IngestError` saying why not: a
    URI (``s3a://``, ``hdfs://``...) is refused, since the driver lists the folder
    itself; mount object storage at the same path on the driver and every worker."""
    text = str(landing)
    if "://" in text:
        raise IngestError(
            f"landing folder {text}: a URI is not supported; give a folder path, the same "
            "on the driver and every Spark worker (mount object storage there: docs/cluster.md)"
        )
    folder = Path(landing)
    if not folder.is_dir():
        raise IngestError(f"landing folder {folder} does not exist")
    return folder


def is_data_file(name: str) -> bool:
    """Whether a file in a record set folder is data: a Parquet or JSON Lines suffix or a
    part file Flink's file sink committed (:data:`FLINK_PART_FILE`), and not a name
    writers use for files in progress (starting with ``.`` or ``_``, as Spark, Hadoop and
    Flink's file sink do, or ending in ``.inprogress`` or ``.tmp``)."""
    lower = name.lower()
    return (
        (lower.endswith(PARQUET_SUFFIXES + JSON_SUFFIXES) or bool(FLINK_PART_FILE.match(lower)))
        and not lower.startswith(HIDDEN_PREFIXES)
        and not lower.endswith(IN_PROGRESS_SUFFIXES)
    )


def record_files(folder: Path) -> list[Path]:
    """The data files (:func:`is_data_file`) of a record set folder and of its bucket
    folders, sorted by path: Flink's file sink writes into bucket folders (hourly ones,
    ``2026-11-26--05``, by default; ``key=value`` ones for a partitioned SQL table).
    Hidden folders (starting with ``.`` or ``_``: staging, Spark's ``_temporary``) are
    not entered; a file or folder that vanishes while listed is left out."""
    found = []
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return []
    for entry in entries:
        if entry.name.startswith(HIDDEN_PREFIXES):
            continue
        if entry.is_dir() and not entry.is_symlink():
            found += record_files(entry)
        elif is_data_file(entry.name) and entry.is_file():
            found.append(entry)
    return sorted(found)


def is_json_file(path: Path) -> bool:
    """Whether a data file holds JSON Lines: by its suffix, or for a Flink part file
    without one, by not starting with Parquet's magic bytes."""
    if path.suffix.lower() in JSON_SUFFIXES:
        return True
    if not FLINK_PART_FILE.match(path.name.lower()):
        return False
    try:
        with path.open("rb") as handle:
            return handle.read(len(PARQUET_MAGIC)) != PARQUET_MAGIC
    except OSError:
        return True  # the read that follows names the problem


def topology_stamp(run_dir: Path) -> str:
    """Names, sizes and modification times of a run's topology files: equal stamps mean
    the files were not rewritten since they were last loaded."""
    parts = []
    for file in sorted(run_dir.glob("topology*.y*ml")):
        try:
            stat = file.stat()
        except OSError:
            continue
        parts.append(f"{file.name}:{stat.st_size}:{stat.st_mtime_ns}")
    return "|".join(parts)


def discover(
    landing: Path,
    already_ingested: set[str],
    loaded: Mapping[str, str] | None = None,
    given_up: Mapping[str, tuple[int, float]] | None = None,
) -> list[RunFolder]:
    """Every run folder with its new (not yet ingested) data files.

    ``loaded`` maps a run to the stamp of the topology files its stored topology came
    from: a run with the same stamp and no new data file is left out, unparsed (a large
    topology takes seconds to read). ``given_up`` maps ingested files that were
    quarantined whole to their (size, modification time) then: one that changed since
    counts as new."""
    runs = []
    for run_dir in sorted(p for p in landing.iterdir() if p.is_dir()):
        run_id = run_dir.name
        files = _new_files(landing, run_dir, already_ingested, given_up or {})
        stamp = topology_stamp(run_dir)
        if not files and loaded is not None and loaded.get(run_id) == stamp:
            continue
        try:
            topology: Topology | None = load_topology(run_dir / "topology.yaml")
            error = None
        except ModelError as exc:
            topology, error = None, str(exc)
        run = RunFolder(run_id, topology, error, files=files, stamp=stamp)
        if topology is not None:
            _read_versions(run_dir, topology, run)
        runs.append(run)
    return runs


def _new_files(
    landing: Path,
    run_dir: Path,
    already_ingested: set[str],
    given_up: Mapping[str, tuple[int, float]],
) -> list[LandingFile]:
    """The run's data files not in the manifest yet, or given up and changed since, in
    record-set and name order."""
    files = []
    run_id = run_dir.name
    for record_set in RECORD_SETS:
        folder = run_dir / record_set
        if not folder.is_dir():
            continue
        for file in record_files(folder):
            relative = file.relative_to(landing).as_posix()
            if relative in already_ingested and relative not in given_up:
                continue
            try:
                stat = file.stat()
            except OSError:  # gone since the listing: the next pass sees it if it is back
                continue
            if relative in already_ingested and given_up[relative] == (
                stat.st_size,
                stat.st_mtime,
            ):
                continue  # given up, and unchanged since
            files.append(
                LandingFile(relative, file, run_id, record_set, stat.st_size, stat.st_mtime)
            )
    return files


def _read_versions(run_dir: Path, topology: Topology, run: RunFolder) -> None:
    """The run's ``topology-<epoch>.yaml`` versions: each one's placement and the
    capacities of the run's nodes in it (a rescaled vertex's threads node has its new
    parallelism); a node the version does not list keeps its capacity of topology.yaml,
    a node topology.yaml does not list cannot be placed on; ``stopped`` is when the job
    stopped processing before the version (a rescale's restart)."""
    for file in sorted(run_dir.iterdir()):
        match = _VERSION_FILE.match(file.name)
        if not match:
            continue
        try:
            epoch = float(match["epoch"])
            version, stopped = load_version(file, epoch)
            placement = validate_placement(
                version.placement, topology.operator_ids, topology.node_ids
            )
        except (ValueError, ModelError) as exc:
            run.warnings.append(f"{file.name} ignored: {exc}")
            continue
        own = version.capacity_by_node
        capacities = {n.id: own.get(n.id, n.capacity) for n in topology.nodes}
        run.versions.append((epoch, placement, capacities, stopped))
    run.versions.sort(key=lambda pair: pair[0])


# ---------------------------------------------------------------------------
# Reading a record set into the parsed contract of ingest.transforms
# ---------------------------------------------------------------------------


def _last_line_incomplete(path: Path) -> bool:
    """Whether a non-empty text file does not end with a newline."""
    with path.open("rb") as handle:
        handle.seek(0, 2)
        if handle.tell() == 0:
            return False
        handle.seek(-1, 2)
        return handle.read(1) != b"\n"


def read_record_set(
    spark: SparkSession,
    files: list[LandingFile],
    record_set: str,
    *,
    settled: frozenset[str] = frozenset(),
) -> tuple[DataFrame | None, list[tuple[LandingFile, str]]]:
    """Read files into (file, block, mid, raw, <field>, <field>__problem) rows.

    Returns the frame (None if no file was readable) and the unreadable files with
    the reason. A JSON Lines file whose last line has no newline yet counts as
    unreadable (:data:`INCOMPLETE_LINE`) unless its path is in ``settled`` (unchanged
    for the grace period: its incomplete line is then a malformed row). Parquet
    files are grouped by schema so that a file whose column has the wrong type only
    spoils that column's rows.
    """
    fields = RECORD_SETS[record_set]
    frames: list[DataFrame] = []
    unreadable: list[tuple[LandingFile, str]] = []
    by_schema: dict[str, tuple[pa.Schema, list[LandingFile]]] = {}
    json_files = []
    for file in files:
        if is_json_file(file.absolute):
            try:
                incomplete = _last_line_incomplete(file.absolute)
            except OSError as exc:
                unreadable.append((file, f"unreadable file: {exc.strerror or exc}"))
                continue
            if incomplete and file.path not in settled:
                unreadable.append((file, INCOMPLETE_LINE))
                continue
            json_files.append(file)
            continue
        try:
            schema = pq.read_schema(file.absolute)
        except (OSError, pa.ArrowException) as exc:
            first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            unreadable.append((file, f"unreadable Parquet file: {first_line}"))
            continue
        by_schema.setdefault(schema.to_string(), (schema, []))[1].append(file)
    for schema, group in by_schema.values():
        frames.append(_read_parquet(spark, group, schema, fields))
    if json_files:
        frames.append(_read_json_lines(spark, json_files, fields))
    return (union_all(frames) if frames else None), unreadable


def read_failure(spark: SparkSession, file: LandingFile) -> str | None:
    """Why Spark cannot read every row of ``file`` (None if it can): the whole file is
    decoded and thrown away, to find the file that failed a batch's read."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    path = file.uri
    is_json = is_json_file(file.absolute)
    try:
        frame = spark.read.text(path) if is_json else spark.read.parquet(path)
        frame.write.format("noop").mode("overwrite").save()
    except (Py4JJavaError, PySparkException) as exc:
        return f"unreadable file: {spark_error_line(exc)}"
    return None


def spark_error_line(exc: Exception) -> str:
    """The first line naming Spark's error class (e.g. FAILED_READ_FILE), without the
    Java stack."""
    from py4j.protocol import Py4JJavaError

    text = str(exc.java_exception) if isinstance(exc, Py4JJavaError) else str(exc)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    named = [line for line in lines if "[" in line and "]" in line]
    line = (named or lines or [type(exc).__name__])[0]
    return line.removeprefix("org.apache.spark.SparkException: ")[:300]


def _numbered(frame: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    return frame.select(
        "*",
        F.col("_metadata.file_name").alias("file"),
        F.col("_metadata.file_block_start").alias("block"),
        F.monotonically_increasing_id().alias("mid"),
    )


def _typed_from_text(text: Column, name: str, kind: str) -> list[Column]:
    """Typed value and problem from a JSON value rendered as text."""
    from pyspark.sql import functions as F

    if kind == STRING:
        value = text
        wrong = F.lit(False)
    else:
        stripped = F.regexp_replace(text, '^"|"$', "")
        double = stripped.try_cast("double")
        if kind == DOUBLE:
            value, wrong = double, double.isNull()
        else:  # rint, not floor: floor returns a long, which overflows on 1e300
            integral = double.isNotNull() & (double == F.rint(double))
            wrong = ~integral
            out_of_range = integral & (F.abs(double) > F.lit(float(MAX_INTEGER)))
            value = F.when(integral & ~out_of_range, double.cast("long"))
    problem = F.when(text.isNull(), F.lit(MISSING)).when(wrong, F.lit(WRONG_TYPE))
    if kind == LONG:
        problem = problem.when(out_of_range, F.lit(OUT_OF_RANGE))
    return [F.when(problem.isNull(), value).alias(name), problem.alias(f"{name}__problem")]


def _read_json_lines(
    spark: SparkSession, files: list[LandingFile], fields: Mapping[str, str]
) -> DataFrame:
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    text = _numbered(spark.read.text([f.uri for f in files]))
    schema = StructType([StructField(name, StringType()) for name in fields])
    parsed = text.select(
        "file", "block", "mid", F.col("value").alias("raw"), F.from_json("value", schema).alias("p")
    )
    malformed = ~F.trim(F.col("raw")).rlike(r"^\{.*\}$")
    columns: list[Column] = []
    for name, kind in fields.items():
        value, problem = _typed_from_text(F.col(f"p.{name}"), name, kind)
        columns += [
            value,
            F.when(malformed, F.lit(MALFORMED)).otherwise(problem).alias(f"{name}__problem"),
        ]
    return parsed.select("file", "block", "mid", "raw", *columns)


def _read_parquet(
    spark: SparkSession, files: list[LandingFile], schema: pa.Schema, fields: Mapping[str, str]
) -> DataFrame:
    from pyspark.sql import functions as F

    frame = _numbered(spark.read.parquet(*[f.uri for f in files]))
    present = set(schema.names)
    columns: list[Column] = []
    for name, kind in fields.items():
        if name not in present:
            columns += [
                F.lit(None).cast(_spark_type(kind)).alias(name),
                F.lit(MISSING).alias(f"{name}__problem"),
            ]
            continue
        arrow_type = schema.field(name).type
        if pa.types.is_dictionary(arrow_type):
            arrow_type = arrow_type.value_type
        column = F.col(f"`{name}`")
        if _native(arrow_type, kind):
            problem = F.when(column.isNull(), F.lit(MISSING))
            if kind == LONG:  # an unsigned 64-bit value may not fit a long
                out_of_range = F.abs(column) > F.lit(MAX_INTEGER)
                problem = problem.when(out_of_range, F.lit(OUT_OF_RANGE))
                value = F.when(~out_of_range, column.cast("long"))
            else:
                value = column.cast(_spark_type(kind))
            columns += [value.alias(name), problem.alias(f"{name}__problem")]
        else:
            columns += _typed_from_text(column.cast("string"), name, kind)
    raw_columns = [F.col(f"`{n}`") for n in schema.names]
    raw = F.to_json(F.struct(*raw_columns)) if raw_columns else F.lit("{}")
    return frame.select("file", "block", "mid", raw.alias("raw"), *columns)


def _native(arrow_type: pa.DataType, kind: str) -> bool:
    """Whether a Parquet column type converts to the contract type without parsing."""
    if kind == STRING:
        return bool(pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type))
    if kind == DOUBLE:
        return bool(pa.types.is_floating(arrow_type) or pa.types.is_integer(arrow_type))
    return bool(pa.types.is_integer(arrow_type))


def _spark_type(kind: str) -> str:
    return {STRING: "string", DOUBLE: "double", LONG: "long"}[kind]
