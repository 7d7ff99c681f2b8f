"""Arrival series: events per source and subinterval (docs/design.md, "Domain model and units")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from estimator.errors import ModelError
from estimator.model import MAX_MAGNITUDE, Topology

REQUIRED_COLUMNS = ("source", "interval", "events")


@dataclass(frozen=True)
class Arrivals:
    """A (sources x subintervals) matrix of event counts, rows in ``sources`` order."""

    sources: tuple[str, ...]
    counts: np.ndarray

    @property
    def intervals(self) -> int:
        return int(self.counts.shape[1])

    def for_topology(self, topology: Topology) -> np.ndarray:
        """Rows reordered to the topology's sources; sources without data are zero."""
        index = {s: k for k, s in enumerate(self.sources)}
        out = np.zeros((len(topology.sources), self.intervals))
        for row, source in enumerate(topology.source_ids):
            if source in index:
                out[row] = self.counts[index[source]]
        return out

    def scaled(self, factor: float | Mapping[str, float]) -> Arrivals:
        """Arrival rates multiplied by one factor, or by a factor per source."""
        if isinstance(factor, Mapping):
            for source in factor:
                if source not in self.sources:
                    raise ModelError(f"rate scale: unknown source '{source}'")
            scale = np.array([float(factor.get(s, 1.0)) for s in self.sources])
        else:
            scale = np.full(len(self.sources), float(factor))
        if not np.all(np.isfinite(scale)) or np.any(scale < 0):
            raise ModelError("rate scale: factors must be finite and not negative")
        return Arrivals(self.sources, self.counts * scale[:, None])

    def coarsened(self, factor: int) -> Arrivals:
        """Arrivals for a subinterval ``factor`` times wider (sums of consecutive intervals)."""
        if factor < 1:
            raise ModelError(f"subinterval factor must be a positive integer, got {factor}")
        width = -(-self.intervals // factor) * factor
        padded = np.zeros((len(self.sources), width))
        padded[:, : self.intervals] = self.counts
        return Arrivals(self.sources, padded.reshape(len(self.sources), -1, factor).sum(axis=2))

    def window(self, start: int, stop: int) -> Arrivals:
        """Intervals [start, stop)."""
        return Arrivals(self.sources, self.counts[:, start:stop])


MAX_INTERVALS = 1_000_000
"""Default largest number of subintervals an arrival series may span (interval numbers
0 .. MAX_INTERVALS - 1): about 11.6 days of 1 s subintervals. The estimator holds
several arrays per source, operator and node of this length, so a larger series is
refused before allocating; ``mace estimate`` and ``mace place`` raise it with
``--max-intervals``."""


def _size(nbytes: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if nbytes < 1024 or unit == "PiB":
            return f"{nbytes:.1f} {unit}"
        nbytes /= 1024
    raise AssertionError("unreachable")


def _check_span(intervals: int, rows: int, max_intervals: int) -> None:
    """Refuse a series longer than ``max_intervals``, naming the memory it would need."""
    if intervals <= max_intervals:
        return
    need = _size(8.0 * intervals * rows)
    raise ModelError(
        f"arrivals: interval numbers up to {intervals - 1:,} make a series of "
        f"{intervals:,} intervals, more than the limit of {max_intervals:,}; it would need "
        f"at least {need} for the arrival matrix alone (and several times that to "
        "estimate). Check the interval numbers, or raise the limit with --max-intervals"
    )


def arrivals_from_frame(
    frame: pd.DataFrame, topology: Topology | None = None, *, max_intervals: int = MAX_INTERVALS
) -> Arrivals:
    """Build arrivals from a long frame (source, interval, events), validating every row.

    A series spanning more than ``max_intervals`` intervals is refused before allocating."""
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise ModelError(f"arrivals: missing column(s) {', '.join(missing)}")
    if frame.empty:
        raise ModelError("arrivals: no rows")
    sources = frame["source"]
    if sources.isna().any():
        row = int(np.flatnonzero(sources.isna().to_numpy())[0])
        raise ModelError(f"arrivals row {row + 1}: missing source")
    intervals = pd.to_numeric(frame["interval"], errors="coerce")
    events = pd.to_numeric(frame["events"], errors="coerce")
    for name, column in (("interval", intervals), ("events", events)):
        bad = column.isna() | ~np.isfinite(column.astype(float))
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise ModelError(
                f"arrivals row {row + 1}: '{name}' is not a finite number "
                f"({frame[name].iloc[row]!r})"
            )
    interval_values = intervals.to_numpy(dtype=float)
    bad_interval = (interval_values < 0) | (interval_values != np.floor(interval_values))
    if bad_interval.any():
        row = int(np.flatnonzero(bad_interval)[0])
        raise ModelError(
            f"arrivals row {row + 1}: interval must be a non-negative integer, "
            f"got {interval_values[row]!r}"
        )
    event_values = events.to_numpy(dtype=float)
    rules = (
        (event_values < 0, "must not be negative"),
        (event_values > MAX_MAGNITUDE, f"must be at most {MAX_MAGNITUDE:g}"),
    )
    for broken, rule in rules:
        if broken.any():
            row = int(np.flatnonzero(broken)[0])
            raise ModelError(f"arrivals row {row + 1}: events {rule}, got {event_values[row]!r}")
    names = sources.astype(str).to_numpy()
    if topology is not None:
        known = set(topology.source_ids)
        unknown = sorted(set(names) - known)
        if unknown:
            raise ModelError(
                f"arrivals: unknown source '{unknown[0]}' (not in topology '{topology.name}')"
            )
        ordered = list(topology.source_ids)
    else:
        ordered = list(dict.fromkeys(names))
    _check_span(int(interval_values.max()) + 1, len(ordered), max_intervals)
    index = {s: k for k, s in enumerate(ordered)}
    rows = np.array([index[s] for s in names])
    cols = interval_values.astype(np.int64)
    counts = np.zeros((len(ordered), int(cols.max()) + 1))
    np.add.at(counts, (rows, cols), event_values)
    return Arrivals(tuple(ordered), counts)


def arrivals_window(sources: Sequence[str], frame: pd.DataFrame, start: int, stop: int) -> Arrivals:
    """Events per source (rows in ``sources`` order) for intervals ``start .. stop-1``
    from stored (source, interval, events) rows: column k is interval ``start + k``,
    cells without rows are 0, rows of other sources or intervals are left out."""
    counts = np.zeros((len(sources), max(0, stop - start)))
    index = {s: k for k, s in enumerate(sources)}
    rows = frame["source"].map(index)
    cols = frame["interval"].to_numpy(dtype=np.int64) - start
    keep = (rows.notna() & (cols >= 0) & (cols < counts.shape[1])).to_numpy()
    np.add.at(
        counts,
        (rows.to_numpy()[keep].astype(np.int64), cols[keep]),
        frame["events"].to_numpy(dtype=float)[keep],
    )
    return Arrivals(tuple(sources), counts)


def arrivals_from_matrix(sources: list[str] | tuple[str, ...], counts: np.ndarray) -> Arrivals:
    """Arrivals from an in-memory matrix (rows in ``sources`` order)."""
    matrix = np.asarray(counts, dtype=float)
    if matrix.ndim != 2 or matrix.shape[0] != len(sources):
        raise ModelError("arrivals: matrix must be (sources x intervals)")
    if not np.all(np.isfinite(matrix)) or np.any(matrix < 0):
        raise ModelError("arrivals: counts must be finite and not negative")
    return Arrivals(tuple(sources), matrix)
