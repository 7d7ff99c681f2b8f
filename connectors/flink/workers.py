"""CPU time of PyFlink's Python workers, read from ``/proc`` beside the TaskManager.

A Python operator's Java thread hands its records to a Python worker and waits for each
bundle to come back, so Flink's busy time of that thread is mostly waiting at low load,
not work (docs/flink.md, "Busy time is not work"). The worker's CPU time is the work, and
Flink's metrics have no figure for it. PyFlink starts one worker per slot,
``pyflink-udf-runner.sh --id=<id>`` and its ``python -m
pyflink.fn_execution.beam.beam_boot --id=<id>``, children of the TaskManager's JVM;
every Python operator of that slot runs in it, so a collector on the TaskManager's host
reads its user + system time (with its descendants') from ``/proc``. On a local
deployment (a MiniCluster started by the PyFlink program itself) the program starts a
*loopback* server and ``beam_boot`` only asks it to run the worker: the work is then done
in the program's own process, the one listening on the address ``beam_boot`` has in
``PYTHON_LOOPBACK_SERVER_ADDRESS``, and that process's own CPU is read instead.
Elsewhere there is nothing to read and busy time stays the only reading.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

WORKER_MARK = b"pyflink.fn_execution.beam.beam_boot"
"""The module every PyFlink Python worker process runs."""
LOOPBACK = b"PYTHON_LOOPBACK_SERVER_ADDRESS="
"""The variable that puts a worker in loopback mode, with the server's host:port."""
TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
LISTEN = "0A"
"""A listening socket's state in ``/proc/net/tcp``."""


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


def _worker(proc: Path, pid: str) -> tuple[str, str | None] | None:
    """(``--id``, loopback server address or None) of a PyFlink worker process, None for
    any other process."""
    try:
        words = (proc / pid / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return None
    if WORKER_MARK not in words:
        return None
    worker_id = next((w[5:].decode(errors="replace") for w in words if w.startswith(b"--id=")), pid)
    try:
        environ = (proc / pid / "environ").read_bytes().split(b"\0")
    except OSError:
        environ = []
    address = next((v[len(LOOPBACK) :].decode() for v in environ if v.startswith(LOOPBACK)), None)
    return worker_id, address


def _listening_socket(proc: Path, port: int) -> str | None:
    """The inode of the socket listening on TCP ``port`` (IPv4 or IPv6), if any."""
    for table in ("tcp", "tcp6"):
        try:
            lines = (proc / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and fields[3] == LISTEN and fields[1].endswith(f":{port:04X}"):
                return fields[9]
    return None


def _socket_owner(proc: Path, pids: list[str], inode: str) -> str | None:
    """The process holding socket ``inode`` open."""
    target = f"socket:[{inode}]"
    for pid in pids:
        try:
            for fd in (proc / pid / "fd").iterdir():
                if os.readlink(fd) == target:
                    return pid
        except OSError:
            continue
    return None


WorkerTime = tuple[float, float]
"""A worker's cumulative CPU seconds and seconds of waiting for a core."""
WORKING = 0.1
"""A thread whose CPU time grew by at least this share of its worker's in a sample is
one doing the work; the others (gRPC pollers, timers) wake often and briefly, and their
waits for a core say nothing of the work's."""


def _threads(proc: Path, pid: str) -> dict[str, tuple[int, int]]:
    """Each live thread's nanoseconds on a core and waiting on a run queue, ready but
    without a core (``/proc/<pid>/task/*/schedstat``; empty where the kernel keeps none)."""
    try:
        tasks = list((proc / pid / "task").iterdir())
    except OSError:
        return {}
    threads = {}
    for task in tasks:
        try:
            run, wait = (task / "schedstat").read_text().split()[:2]
            threads[f"{pid}/{task.name}"] = (int(run), int(wait))
        except (OSError, ValueError):
            continue
    return threads


class PythonWorkers:
    """Reads every PyFlink Python worker on this host: its cumulative CPU seconds, and
    the seconds its work waited for a core. A process-mode worker counts with its
    descendants, keyed ``<id>@<pid>``; the process serving loopback workers counts once,
    keyed ``loopback <address>@<pid>`` (a pid tells a restarted worker, whose counters
    start again from zero, from the one before). Empty where there is no ``/proc`` or
    no worker.

    The wait is counted from one reading to the next: the CPU the worker used times the
    wait per second on a core of the threads that did the work (:data:`WORKING`). On a
    machine shared with other work, a record's work takes both."""

    def __init__(self, proc: Path = Path("/proc")) -> None:
        self.proc = proc
        self._owners: dict[str, str] = {}  # loopback address -> the pid serving it
        self._last: dict[str, tuple[float, float, dict[str, tuple[int, int]]]] = {}

    def __call__(self) -> dict[str, WorkerTime]:
        try:
            pids = [entry.name for entry in self.proc.iterdir() if entry.name.isdigit()]
        except OSError:
            return {}
        stats = {pid: s for pid in pids if (s := _stat(self.proc, pid)) is not None}
        workers = {pid: w for pid in stats if (w := _worker(self.proc, pid)) is not None}
        members: dict[str, list[str]] = {}  # worker key -> the processes doing its work
        for pid, (worker_id, address) in workers.items():
            if address is None:
                members[f"{worker_id}@{pid}"] = []
                continue
            owner = self._owner(address, list(stats))
            if owner is not None and owner in stats:  # its own time: its child is the JVM
                members[f"loopback {address}@{owner}"] = [owner]
        process_mode = {pid: wid for pid, (wid, address) in workers.items() if address is None}
        for pid in stats:
            ancestor, depth = pid, 0
            while ancestor in stats and depth < 64:  # up to the worker that owns it
                if ancestor in process_mode:
                    members[f"{process_mode[ancestor]}@{ancestor}"].append(pid)
                    break
                ancestor, depth = str(stats[ancestor][0]), depth + 1
        times = {}
        for key, processes in members.items():
            cpu = sum(stats[pid][1] for pid in processes)
            threads = {t: v for pid in processes for t, v in _threads(self.proc, pid).items()}
            times[key] = (cpu, self._waited(key, cpu, threads))
        self._last = {k: v for k, v in self._last.items() if k in times}
        return times

    def _waited(self, key: str, cpu: float, threads: dict[str, tuple[int, int]]) -> float:
        """The worker's cumulative wait for a core, grown by this reading's CPU times the
        wait per second on a core of its working threads."""
        last_cpu, waited, last_threads = self._last.get(key, (cpu, 0.0, threads))
        grown = {
            t: (run - last_threads[t][0], wait - last_threads[t][1])
            for t, (run, wait) in threads.items()
            if t in last_threads
        }
        total = sum(max(0, run) for run, _ in grown.values())
        working = [
            (run, wait) for run, wait in grown.values() if total > 0 and run >= WORKING * total
        ]
        on_core = sum(run for run, _ in working)
        if on_core > 0:
            waited += max(0.0, cpu - last_cpu) * max(0, sum(w for _, w in working)) / on_core
        self._last[key] = (cpu, waited, threads)
        return waited

    def _owner(self, address: str, pids: list[str]) -> str | None:
        known = self._owners.get(address)
        if known is not None and (self.proc / known).exists():
            return known
        try:
            port = int(address.rsplit(":", 1)[1])
        except (IndexError, ValueError):
            return None
        inode = _listening_socket(self.proc, port)
        owner = None if inode is None else _socket_owner(self.proc, pids, inode)
        if owner is not None:
            self._owners[address] = owner
        return owner


class WorkAttribution:
    """Charges the Python workers' CPU to the threads they serve, sample by sample.

    Each sample, the time the workers spent since the previous one (CPU, and waiting for
    a core: on a machine shared with other work a record's work takes both) is shared
    among the subtasks whose busy time grew, in proportion to that growth: a Python operator's
    thread is busy while its worker runs its bundle, so the threads that waited longest
    are those whose records took the worker's time. Time used while no thread's busy
    time grew is no record's work (the worker's start, its pollers and timers between
    bundles) and is charged to no thread (:attr:`idle`): kept for the next busy sample,
    it put a worker's start-up and a calm second's overhead on a few records. A
    worker's first reading is its baseline (a worker
    that starts, or restarts under a new pid, brings no history). Each row gets the
    cumulative ``work_seconds`` of its subtask: NaN until a worker has been seen (a job
    without Python workers has no such reading).

    ``python`` names the operators known to run Python code (the Table planner's
    ``PythonCalc``, ``PythonGroupAggregate``, ...: :meth:`JobGraph.python_heads`). When
    the job has any, only their threads are charged: a Java operator's busy time grows
    with its own work, not the worker's. One of them chained behind a legacy source has
    no busy time at all (Flink measures none for that thread), so while such a thread
    takes records the sample's time is shared by the records each Python thread took.
    """

    def __init__(self, python: frozenset[str] = frozenset()) -> None:
        self.python = python
        self._times: dict[str, WorkerTime] = {}
        self._busy: dict[Key, float] = {}
        self._records: dict[Key, float] = {}
        self._work: dict[Key, float] = {}
        self._idle = 0.0

    @property
    def idle(self) -> float:
        """Worker seconds spent while no thread's busy time grew, charged to none."""
        return self._idle

    def attribute(self, rows: list[dict[str, Any]], times: dict[str, WorkerTime]) -> None:
        """Set ``work_seconds`` on each of one sample's ``rows`` from the workers'
        cumulative times read at the same time (:class:`PythonWorkers`). Each counter
        counts only its growth: a thread that ends takes its waiting time with it."""
        used = sum(
            max(0.0, cpu - self._times[w][0]) + max(0.0, ready - self._times[w][1])
            for w, (cpu, ready) in times.items()
            if w in self._times
        )
        seen = bool(self._times or self._work)
        self._times = dict(times)
        shares = self._shares(rows)
        if seen:
            total = sum(shares.values())
            for key, share in shares.items():
                self._work[key] = self._work.get(key, 0.0) + used * share / total
            if total <= 0:
                self._idle += used
        for row in rows:
            key = _key(row)
            if seen or self._times:
                self._work.setdefault(key, 0.0)
            row["work_seconds"] = self._work.get(key, math.nan)

    def _shares(self, rows: list[dict[str, Any]]) -> dict[Key, float]:
        """What each thread gets of this sample's time in proportion to: its busy time's
        growth; with Python operators known, theirs only, or the records they took
        where one of them that took records has no busy time."""
        grown: dict[Key, float] = {}
        took: dict[Key, float] = {}
        blind = False
        for row in rows:
            key = _key(row)
            busy = float(row["busy_seconds"])
            records = float(row.get("records_in", math.nan))
            before = self._records.get(key)
            if not math.isnan(records):
                if before is not None and records > before:
                    took[key] = records - before
                self._records[key] = records
            if math.isnan(busy):  # a source's, or a thread behind a legacy source
                blind |= key[0] in self.python and key in took
                continue
            before = self._busy.get(key)
            if before is not None and busy > before:
                grown[key] = busy - before
            self._busy[key] = busy
        if not self.python:
            return grown
        chosen = took if blind else grown
        return {key: share for key, share in chosen.items() if key[0] in self.python}


Key = tuple[str, int, int]


def _key(row: dict[str, Any]) -> Key:
    return str(row["operator"]), int(row["subtask"]), int(row["port"])
