"""Raw telemetry (docs/design.md, "Raw telemetry"): frames from a trace and the
landing-folder writer.

Files are written under a hidden temporary name and renamed into place, so a
reader polling the landing folder never sees a half-written Parquet file.
String columns are held as Arrow dictionaries (integer codes plus the id
list) and written without the Arrow schema, so the Parquet files carry plain
dictionary-encoded UTF-8 columns that every reader (Spark, DuckDB, pandas)
reads as strings, without materializing millions of Python strings first.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from estimator.loaders import dump_topology
from estimator.model import Topology
from simulator.plan import Plan
from simulator.trace import Trace

RECORD_SETS = ("arrivals", "executions", "outputs")
TIME_COLUMN = {"arrivals": "stimulus_time", "executions": "start_time", "outputs": "egress_time"}


@dataclass(frozen=True)
class Telemetry:
    """The three record sets of a run as Arrow tables with the contract's columns and types."""

    arrivals: pa.Table
    executions: pa.Table
    outputs: pa.Table

    def table(self, record_set: str) -> pa.Table:
        return {"arrivals": self.arrivals, "executions": self.executions, "outputs": self.outputs}[
            record_set
        ]

    def frames(self) -> dict[str, pd.DataFrame]:
        """The record sets as pandas frames (str columns as Python strings)."""
        return {name: plain(self.table(name)).to_pandas() for name in RECORD_SETS}


def plain(table: pa.Table) -> pa.Table:
    """The table with dictionary columns decoded to their value type."""
    columns = [
        pa.chunked_array([c.dictionary_decode() for c in col.chunks], col.type.value_type)
        if pa.types.is_dictionary(col.type)
        else col
        for col in table.columns
    ]
    return pa.Table.from_arrays(columns, names=table.column_names)


def _names(ids: tuple[str, ...], codes: np.ndarray) -> pa.Array:
    """A string column from integer codes, as an Arrow dictionary array."""
    return pa.DictionaryArray.from_arrays(
        pa.array(codes, type=pa.int32()), pa.array(list(ids), type=pa.string())
    )


def build_telemetry(plan: Plan, source: np.ndarray, times: np.ndarray, trace: Trace) -> Telemetry:
    """Arrow tables of the record sets, with times shifted by nothing (they are absolute)."""
    arrivals = pa.table(
        {"source": _names(plan.source_ids, source), "stimulus_time": pa.array(times, pa.float64())}
    )
    executions = pa.table(
        {
            "node": _names(plan.node_ids, trace.exec_node),
            "operator": _names(plan.operator_ids, trace.exec_op),
            "port": pa.array(trace.exec_port, pa.int64()),
            "stimulus_time": pa.array(trace.exec_stimulus, pa.float64()),
            "start_time": pa.array(trace.exec_start, pa.float64()),
            "cpu_seconds": pa.array(trace.exec_cpu, pa.float64()),
            "outputs": pa.array(trace.exec_outputs, pa.int64()),
        }
    )
    outputs = pa.table(
        {
            "query": _names(plan.query_ids, plan.op_query[trace.out_op]),
            "operator": _names(plan.operator_ids, trace.out_op),
            "stimulus_time": pa.array(trace.out_stimulus, pa.float64()),
            "egress_time": pa.array(trace.out_egress, pa.float64()),
        }
    )
    return Telemetry(arrivals, executions, outputs)


def _write_atomically(folder: Path, name: str, write: Callable[[Path], object]) -> Path:
    """``write(path)`` to a hidden temporary name in ``folder``, then renamed to ``name``;
    a write that fails (a full disk) leaves no temporary file behind."""
    folder.mkdir(parents=True, exist_ok=True)
    final = folder / name
    temporary = folder / f".{name}.tmp"
    try:
        write(temporary)
        os.replace(temporary, final)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        if exc.filename:
            raise
        raise OSError(exc.errno, exc.strerror or str(exc), str(final)) from None
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return final


def write_table(table: pa.Table, folder: Path, name: str) -> Path:
    """Write one Parquet file atomically (hidden temp name, then rename)."""
    strings = [f.name for f in table.schema if pa.types.is_dictionary(f.type)]
    return _write_atomically(
        folder,
        name,
        lambda path: pq.write_table(
            table, path, compression="snappy", store_schema=False, use_dictionary=strings
        ),
    )


def write_topology(topology: Topology, run_dir: Path, name: str = "topology.yaml") -> Path:
    """The run's topology (with its origin) as YAML, written atomically."""
    text = dump_topology(topology)
    return _write_atomically(run_dir, name, lambda path: path.write_text(text, encoding="utf-8"))


def version_name(time: float) -> str:
    """The file name of the placement version valid from ``time`` (docs/design.md, "Raw telemetry"):
    ``topology-<epoch>.yaml`` with the time written so that it reads back exactly."""
    return f"topology-{float(time)!r}.yaml"


def write_version(
    topology: Topology, run_dir: Path, time: float, placement: Mapping[str, str]
) -> Path:
    """Record a placement change: the run's topology with ``placement``, valid from ``time``."""
    return write_topology(topology.with_placement(placement), run_dir, version_name(time))


def split_by_time(table: pa.Table, column: str, edges: np.ndarray) -> list[pa.Table]:
    """Slices of a table by ``column`` in [edges[i], edges[i+1]); rows keep their order."""
    values = table.column(column).to_numpy()
    if np.all(values[1:] >= values[:-1]):  # the usual case: records come in time order
        cuts = np.searchsorted(values, edges[1:-1], side="left")
        bounds = np.concatenate([[0], cuts, [values.size]])
        return [table.slice(int(a), int(b - a)) for a, b in itertools.pairwise(bounds)]
    slot = np.searchsorted(edges, values, side="right") - 1
    slot = np.clip(slot, 0, len(edges) - 2)
    order = np.argsort(slot, kind="stable")
    bounds = np.searchsorted(slot[order], np.arange(len(edges)))
    sorted_table = table.take(pa.array(order))
    return [
        sorted_table.slice(int(bounds[i]), int(bounds[i + 1] - bounds[i]))
        for i in range(len(edges) - 1)
    ]


def write_run(
    telemetry: Telemetry,
    topology: Topology,
    landing: str | Path,
    run_id: str,
    *,
    files: int = 4,
    extra: Mapping[str, object] | None = None,
    progress: bool = False,
    versions: Sequence[tuple[float, Mapping[str, str]]] = (),
) -> Path:
    """Write a finished run: ``topology.yaml``, a ``topology-<epoch>.yaml`` per placement
    change in ``versions`` ((time, placement) pairs, e.g. :attr:`Result.versions`) and
    ``files`` Parquet parts per record set, split by each record set's time column so parts
    follow time like an appending EPS."""
    run_dir = Path(landing) / run_id
    if extra:
        topology = topology.with_changes(**dict(extra))
    write_topology(topology, run_dir)
    for time, placement in versions:
        write_version(topology, run_dir, time, placement)
    starts = [telemetry.table(n).column(TIME_COLUMN[n]).to_numpy() for n in RECORD_SETS]
    low = min((float(s.min()) for s in starts if s.size), default=0.0)
    high = max((float(s.max()) for s in starts if s.size), default=0.0)
    edges = np.linspace(low, np.nextafter(high, np.inf), max(files, 1) + 1)
    rows = sum(telemetry.table(name).num_rows for name in RECORD_SETS)
    # disable=None: a bar only on a terminal
    with tqdm(total=rows, unit="rows", disable=None if progress else True, desc="writing") as bar:
        for name in RECORD_SETS:
            parts = split_by_time(telemetry.table(name), TIME_COLUMN[name], edges)
            for k, part in enumerate(parts):
                write_table(part, run_dir / name, f"part-{k:05d}.parquet")
                bar.update(part.num_rows)
    return run_dir
