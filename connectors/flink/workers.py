"""CPU time of PyFlink's Python workers, read from ``/proc`` beside the TaskManager.

A Python operator's Java thread hands its records to a Python worker process and waits
for each bundle to come back, so Flink's busy time of that thread is mostly waiting at
low load, not work (docs/flink.md, "Busy time is not work"). The worker's own CPU time
is the work. PyFlink starts one worker per slot, ``pyflink-udf-runner.sh --id=<id>``
and its ``python -m pyflink.fn_execution.beam.beam_boot --id=<id>``, as children of
the TaskManager's JVM; every Python operator of that slot runs in it. Flink's metrics
do not report the worker's CPU, so a collector on the TaskManager's host reads it from
``/proc`` (user + system time of each worker and its descendants); elsewhere there is
nothing to read and busy time stays the only reading.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

WORKER_MARK = "pyflink.fn_execution.beam.beam_boot"
"""The module every PyFlink Python worker process runs."""
TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat(proc: Path, pid: str) -> tuple[int, float] | None:
    """(parent pid, user + system CPU seconds) of one process, None if it is gone."""
    try:
        text = (proc / pid / "stat").read_text()
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()  # the name may hold spaces and ')'
    try:
        return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICKS
    except (IndexError, ValueError):
        return None


def _worker_id(proc: Path, pid: str) -> str | None:
    """The ``--id`` of a PyFlink worker process, None for any other process."""
    try:
        words = (proc / pid / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return None
    if WORKER_MARK.encode() not in words:
        return None
    for word in words:
        if word.startswith(b"--id="):
            return word[5:].decode(errors="replace")
    return pid


def python_worker_cpu(proc: Path = Path("/proc")) -> dict[str, float]:
    """Cumulative CPU seconds of each PyFlink Python worker on this host (its process
    and every descendant), keyed ``<id>@<pid>``: the pid tells a restarted worker, whose
    counter starts again from zero, from the one before. Empty where there is no
    ``/proc`` or no worker."""
    try:
        pids = [entry.name for entry in proc.iterdir() if entry.name.isdigit()]
    except OSError:
        return {}
    stats = {pid: s for pid in pids if (s := _stat(proc, pid)) is not None}
    workers = {pid: wid for pid in stats if (wid := _worker_id(proc, pid)) is not None}
    if not workers:
        return {}
    cpu = {f"{wid}@{pid}": 0.0 for pid, wid in workers.items()}
    for pid, (_, seconds) in stats.items():
        ancestor, seen = pid, 0
        while ancestor in stats and seen < 64:  # walk up to the worker that owns it
            if ancestor in workers:
                cpu[f"{workers[ancestor]}@{ancestor}"] += seconds
                break
            ancestor, seen = str(stats[ancestor][0]), seen + 1
    return cpu


class WorkAttribution:
    """Charges the Python workers' CPU to the threads they serve, sample by sample.

    Each sample, the CPU the workers used since the previous one is shared among the
    subtasks whose busy time grew, in proportion to that growth: a Python operator's
    thread is busy while its worker runs its bundle, so the threads that waited longest
    are those whose records took the worker's time. CPU used while no thread's busy time
    grew is kept for the next sample. A worker's first reading is its baseline (a worker
    that starts, or restarts under a new pid, brings no history). Each row gets the
    cumulative ``work_seconds`` of its subtask: NaN until a worker has been seen (a job
    without Python workers has no such reading).
    """

    def __init__(self) -> None:
        self._cpu: dict[str, float] = {}
        self._busy: dict[Key, float] = {}
        self._work: dict[Key, float] = {}
        self._unshared = 0.0

    @property
    def kept(self) -> float:
        """CPU seconds used while no thread's busy time grew, not charged yet."""
        return self._unshared

    def attribute(self, rows: list[dict[str, Any]], cpu: dict[str, float]) -> None:
        """Set ``work_seconds`` on each of one sample's ``rows`` from the workers'
        cumulative CPU seconds ``cpu`` read at the same time."""
        used = sum(max(0.0, s - self._cpu[w]) for w, s in cpu.items() if w in self._cpu)
        seen = bool(self._cpu or self._work)
        self._cpu = dict(cpu)
        grown: dict[Key, float] = {}
        for row in rows:
            busy, key = float(row["busy_seconds"]), _key(row)
            if math.isnan(busy):  # a source's busy time
                continue
            before = self._busy.get(key)
            if before is not None and busy > before:
                grown[key] = busy - before
            self._busy[key] = busy
        if seen:
            self._unshared += used
            total = sum(grown.values())
            for key, growth in grown.items():
                self._work[key] = self._work.get(key, 0.0) + self._unshared * growth / total
            if total > 0:
                self._unshared = 0.0
        for row in rows:
            key = _key(row)
            if seen or self._cpu:
                self._work.setdefault(key, 0.0)
            row["work_seconds"] = self._work.get(key, math.nan)


Key = tuple[str, int, int]


def _key(row: dict[str, Any]) -> Key:
    return str(row["operator"]), int(row["subtask"]), int(row["port"])
