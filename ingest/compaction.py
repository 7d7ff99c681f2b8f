"""Deleting or compacting landing files once they are safely in the store (``mace landing``).

Raw telemetry grows by about a row per operator execution; once a file's statistics
are committed with its manifest row, the file is only an archive. Never the default:
a user's landing files are the user's.

* **delete** removes each ingested file and marks it ``deleted`` in the manifest.
* **compact** merges, per run and record set, the ingested Parquet files with one
  schema into one Parquet file (zstd), and the ingested JSON Lines files into one
  JSON Lines file (lines kept verbatim, so they parse as before), then removes the
  originals. The new file is recorded in ``landing_compactions`` in the same
  transaction that marks the originals ``compacted`` into it, *before* it gets its
  visible name (it is written under a hidden ``.name.tmp`` first): ingestion never
  reads it, so re-ingesting changes no total, while a fresh store built from the
  compacted folder gets the same statistics.

Only files :func:`storage.landing.removable_files` lists are touched (ingested
clean, nothing quarantined, not pending), and only if the file on disk is a data
file (not hidden, not in progress) unchanged since ingestion (same size and
modification time): anything else is left alone and reported.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from ingest.errors import IngestError
from ingest.extract import is_data_file, is_json_file
from storage.landing import IngestedFile, mark_deleted, record_compaction, removable_files

Progress = Callable[[str], None]


@dataclass
class LandingResult:
    """What a delete or compact pass did (or would do, for a dry run)."""

    files: int = 0  # originals deleted or compacted
    bytes_before: int = 0
    bytes_after: int = 0  # of the compacted files written
    written: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)

    def describe(self, action: str, dry_run: bool) -> str:
        verb = {"delete": "deleted", "compact": "compacted"}[action]
        if dry_run:
            head = f"would {action} {self.files} file(s) ({self.bytes_before / 1e6:.1f} MB)"
        else:
            head = f"{verb} {self.files} file(s) ({self.bytes_before / 1e6:.1f} MB)"
            if action == "compact":
                head += f" into {len(self.written)} file(s) ({self.bytes_after / 1e6:.1f} MB)"
        lines = [head]
        lines += [f"left {path}: {why}" for path, why in sorted(self.skipped.items())]
        return "\n".join(lines)


def _in_place(
    landing: Path, files: list[IngestedFile], result: LandingResult
) -> list[IngestedFile]:
    """The files still on disk as they were ingested; the others go to ``skipped``."""
    kept = []
    for file in files:
        absolute = landing / file.path
        if not is_data_file(absolute.name):
            result.skipped[file.path] = "hidden or in-progress name"
            continue
        try:
            stat = absolute.stat()
        except FileNotFoundError:
            continue  # gone already: nothing to do
        if (stat.st_size, stat.st_mtime) != (file.size_bytes, file.modified_at):
            result.skipped[file.path] = "changed since it was ingested"
            continue
        kept.append(file)
    return kept


def delete_ingested(
    con: duckdb.DuckDBPyConnection, landing: Path, run_id: str | None = None, *, dry_run: bool
) -> LandingResult:
    """Delete the ingested landing files (of one run, or all) and mark them deleted."""
    result = LandingResult()
    files = _in_place(landing, removable_files(con, run_id), result)
    result.files = len(files)
    result.bytes_before = sum(f.size_bytes for f in files)
    if dry_run:
        return result
    for file in files:
        (landing / file.path).unlink(missing_ok=True)
    mark_deleted(con, [f.path for f in files])
    return result


def compact_ingested(
    con: duckdb.DuckDBPyConnection,
    landing: Path,
    run_id: str | None = None,
    *,
    dry_run: bool,
    progress: Progress | None = None,
) -> LandingResult:
    """Merge the ingested files of each run and record set into one file per format
    (per schema for Parquet); a group of one file is left as it is."""
    result = LandingResult()
    files = _in_place(landing, removable_files(con, run_id), result)
    groups: dict[tuple[str, str, str], list[IngestedFile]] = {}
    for file in files:
        groups.setdefault(_group_key(landing, file, result), []).append(file)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    for number, ((run, record_set, kind), group) in enumerate(sorted(groups.items())):
        if kind == "unreadable" or len(group) < 2:
            continue
        result.files += len(group)
        result.bytes_before += sum(f.size_bytes for f in group)
        if dry_run:
            continue
        suffix = ".jsonl" if kind == "json" else ".parquet"
        relative = f"{run}/{record_set}/compacted-{stamp}-{number}{suffix}"
        final = landing / relative
        hidden = final.with_name(f".{final.name}.tmp")
        write = _write_json if kind == "json" else _write_parquet
        try:
            rows = write(landing, group, hidden)
        except OSError as exc:  # a full disk: no half-written file stays behind
            hidden.unlink(missing_ok=True)
            raise IngestError(
                f"cannot write {relative}: {exc.strerror or exc}; nothing was changed for its files"
            ) from None
        stat = hidden.stat()
        record_compaction(
            con, relative, group, rows=rows, size_bytes=stat.st_size, modified_at=stat.st_mtime
        )
        os.replace(hidden, final)  # same folder: atomic, and keeps the recorded mtime
        for file in group:
            (landing / file.path).unlink(missing_ok=True)
        result.written.append(relative)
        result.bytes_after += stat.st_size
        if progress is not None:
            progress(relative)
    return result


def _group_key(landing: Path, file: IngestedFile, result: LandingResult) -> tuple[str, str, str]:
    """(run, record set, format): JSON Lines, or the Parquet schema's text."""
    if is_json_file(landing / file.path):
        return file.run_id, file.record_set, "json"
    try:
        schema = pq.read_schema(landing / file.path)
    except (OSError, pa.ArrowException) as exc:
        result.skipped[file.path] = f"cannot read its Parquet schema: {exc}"
        return file.run_id, file.record_set, "unreadable"
    return file.run_id, file.record_set, schema.remove_metadata().to_string()


def _write_parquet(landing: Path, group: list[IngestedFile], target: Path) -> int:
    """Stream the files' row groups into one Parquet file; the number of rows."""
    rows = 0
    schema = pq.read_schema(landing / group[0].path).remove_metadata()
    with pq.ParquetWriter(target, schema, compression="zstd") as writer:
        for file in group:
            source = pq.ParquetFile(landing / file.path)
            for batch in source.iter_batches():
                writer.write_table(pa.Table.from_batches([batch]).cast(schema))
                rows += batch.num_rows
    return rows


def _write_json(landing: Path, group: list[IngestedFile], target: Path) -> int:
    """Concatenate the files' lines (each file ending with a newline); the number of lines."""
    rows = 0
    with target.open("wb") as out:
        for file in group:
            data = (landing / file.path).read_bytes()
            if data and not data.endswith(b"\n"):
                data += b"\n"
            rows += data.count(b"\n")
            out.write(data)
    return rows
