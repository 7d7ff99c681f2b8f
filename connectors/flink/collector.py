"""``mace collect flink``: a running Flink job -> ``topology.yaml`` + ``samples/`` files.

The collector discovers the job (the named one, or the newest running one),
writes its topology (:mod:`connectors.flink.graph`) into ``<out>/<run_id>/``
and then, every ``every`` seconds, reads the cumulative counters
``numRecordsIn``, ``numRecordsOut`` and ``accumulateBusyTimeMs`` of every
subtask (one request per vertex) and keeps them as ``samples/`` rows (docs/design.md,
"Raw telemetry"). Beside a local cluster it also reads the Python workers' CPU time and
charges it to the threads they serve (``work_seconds``, :mod:`connectors.flink.workers`).
Every ``flush_every`` seconds the rows taken so far are appended as
one Parquet file, written under a hidden name and renamed.

Flink's REST API answers metrics from a cache: a request more than
``metrics.fetcher.update-interval`` after the last fetch starts a new fetch from the
TaskManagers and is answered, at once, with the old values. So a poll first asks (which
starts the fetch), waits until the answer shows new values (at most ``FETCH_WAIT``),
then reads every vertex (again, when a fetch the wait gave up on lands while it reads),
and stamps the sample with the time it asked. Read at once, a
sample would hold the values of the poll before, its vertices could come from two
fetches, and when the poll and the fetcher beat, one sample would repeat the last and
the next carry two polls' counts (docs/flink.md, "Counters come from Flink's metric
cache"). A fetcher slower than ``every`` sets the polling interval.

A file-fed source whose folder the collector can see (``offered``: source id -> folder)
counts the records offered to it, the lines of the files in the folder
(:mod:`connectors.flink.offered`), as its records out when they exceed what it read:
the files it has not read yet are a queue in front of the job that no counter of
Flink's file source shows.

It survives REST hiccups (a failed poll is retried at the next tick, and the
collector gives up only after ``give_up`` seconds without an answer) and job
restarts (counters that restart from zero are the ingestion's to detect). A
placement change (subtasks moved to other TaskManagers) or a rescale (a vertex with
another parallelism: its threads node's capacity) is written as a new topology
version ``topology-<epoch>.yaml``. The job is re-read every ``REDISCOVER_EVERY``
seconds, and at once when its answer shows a vertex at another parallelism; a rescaled
job's version is written once it runs again, valid from the time it did (Flink's
``RUNNING`` timestamp of the job, or the time its last subtask started running, which
is seconds later when the subtasks start Python workers), with the time it stopped
processing before it
(``stopped``, :meth:`FlinkCollector.stop_before`), so that the restart's downtime can
be modelled. It stops when the job ends, when
``stop`` is set (Ctrl-C, SIGTERM), or after ``duration`` seconds, and writes
every sample it took before returning.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from connectors.errors import ConnectorError
from connectors.flink.graph import JobGraph, job_graph, subtask_samples, topology_document
from connectors.flink.offered import OfferedFiles
from connectors.flink.rest import FlinkRest, FlinkRestError, JobNotFound
from connectors.flink.workers import PythonWorkers, WorkAttribution, WorkerTime
from estimator.model import topology_from_dict

TERMINAL_STATES = ("FINISHED", "CANCELED", "FAILED", "SUSPENDED")
RESTART_STATUSES = frozenset(
    {"CANCELING", "CANCELED", "CREATED", "SCHEDULED", "DEPLOYING", "INITIALIZING"}
)
"""A vertex's statuses while its job restarts (the adaptive scheduler's rescale keeps the
job ``RUNNING``)."""
DEFAULT_EVERY = 1.0
DEFAULT_FLUSH_EVERY = 5.0
DEFAULT_GIVE_UP = 60.0
REDISCOVER_EVERY = 30.0
FETCH_WAIT = 0.5
"""Seconds a poll waits at most for the metric fetch it started (one took 0.06-0.2 s
on a loaded 2-core machine)."""
FETCH_STEP = 0.02
READ_TRIES = 3
"""Reads of every vertex a poll makes at most while fetches land in the middle of them."""
SAMPLE_SCHEMA = pa.schema(
    [
        ("time", pa.float64()),
        ("node", pa.string()),
        ("operator", pa.string()),
        ("subtask", pa.int64()),
        ("port", pa.int64()),
        ("records_in", pa.float64()),
        ("records_out", pa.float64()),
        ("busy_seconds", pa.float64()),
        ("work_seconds", pa.float64()),
    ]
)
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


@dataclass
class CollectStats:
    """What a collection did (for the terminal and the tests)."""

    job_id: str = ""
    run_dir: Path | None = None
    polls: int = 0
    failed_polls: int = 0
    rows: int = 0
    python_workers: int = 0  # Python workers whose CPU the last sample read
    files: int = 0
    versions: int = 0
    failed_writes: int = 0  # samples files that could not be written (rows kept, retried)
    last_write_error: str = ""
    poll_seconds: list[float] = field(default_factory=list)
    ended_because: str = ""


def find_job(rest: FlinkRest, job_id: str | None) -> str:
    """The job to follow: ``job_id`` if known, else the newest running job."""
    jobs = rest.jobs()
    if job_id is not None:
        if not any(j.job_id == job_id for j in jobs):
            known = ", ".join(f"{j.job_id} ({j.name}, {j.state})" for j in jobs) or "none"
            raise ConnectorError(f"--job {job_id}: no such job at {rest.url} (jobs: {known})")
        return job_id
    running = [j for j in jobs if j.state in ("RUNNING", "CREATED", "INITIALIZING", "RESTARTING")]
    if not running:
        raise ConnectorError(f"no running job at {rest.url}; start one or name it with --job")
    return running[0].job_id


def read_graph(rest: FlinkRest, job_id: str) -> tuple[JobGraph, str]:
    """The job's graph and its state, from four kinds of REST answers; an answer of the
    wrong shape (missing keys, wrong types, an edge to a vertex that is not there) is a
    :class:`FlinkRestError`, retried like an unreachable endpoint."""
    job = rest.job(job_id)
    try:
        details = {v["id"]: rest.vertex(job_id, v["id"]) for v in job.get("vertices", [])}
        graph = job_graph(
            job, rest.plan(job_id), details, rest.taskmanagers(), rest.job_configuration(job_id)
        )
        topology_document(graph, "subtask", 1.0)  # every edge names a vertex of the job
    except FlinkRestError:
        raise
    except ConnectorError as exc:  # an inconsistent job (an edge to a missing vertex)
        raise FlinkRestError(f"job {job_id}: unexpected REST answer: {exc}") from None
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise FlinkRestError(f"job {job_id}: unexpected REST answer ({exc!r})") from None
    return graph, str(job.get("state", "UNKNOWN"))


def sample_rows(graph: JobGraph, counters: dict[str, list[dict[str, str]]], now: float,
                mode: str) -> list[dict[str, Any]]:  # fmt: skip
    """``samples/`` rows from the per-vertex counter answers (vertex id -> metrics): one
    row per subtask of each source and operator the vertex yields
    (:func:`~connectors.flink.graph.subtask_samples`)."""
    rows = []
    for vertex in graph.vertices:
        values: dict[int, dict[str, float]] = defaultdict(dict)
        for metric in counters.get(vertex.vertex_id, []):
            try:
                index, name = str(metric["id"]).split(".", 1)
                values[int(index)][name] = float(metric["value"])
            except (KeyError, TypeError, ValueError):
                continue
        for subtask in range(vertex.parallelism):
            for sample in subtask_samples(graph.members[vertex.vertex_id], values[subtask]):
                node = graph.member_node(vertex, sample.member, subtask, mode)
                rows.append(sample.row(now, node, subtask))
    return rows


def chained_metric_names(graph: JobGraph, vertex_id: str) -> tuple[str, ...]:
    """The chained operators' metric names the collector asks counters of on a vertex."""
    return tuple(m.metric for m in graph.members[vertex_id] if m.chained is not None)


def source_metric_names(graph: JobGraph, vertex_id: str) -> tuple[str, ...]:
    """The sources' metric names the collector asks ``pendingRecords`` of on a vertex."""
    return tuple(m.metric for m in graph.members[vertex_id] if m.is_source)


def _write_atomically(folder: Path, name: str, write: Callable[[Path], object]) -> Path:
    """Write under a hidden name, then rename; a failed write (a full disk) leaves no
    hidden file behind and raises OSError."""
    folder.mkdir(parents=True, exist_ok=True)
    final = folder / name
    hidden = folder / f".{name}.inprogress"
    try:
        write(hidden)
        os.replace(hidden, final)
    except BaseException:
        hidden.unlink(missing_ok=True)
        raise
    return final


def write_topology(run_dir: Path, document: dict[str, object], name: str) -> Path:
    topology_from_dict(document)  # validate before anything is written
    text = yaml.safe_dump(document, sort_keys=False)
    return _write_atomically(run_dir, name, lambda p: p.write_text(text, encoding="utf-8"))


class FlinkCollector:
    """Follows one Flink job and appends its counters to a run folder."""

    def __init__(
        self,
        rest: FlinkRest,
        out: str | Path,
        *,
        run_id: str | None = None,
        job_id: str | None = None,
        every: float = DEFAULT_EVERY,
        flush_every: float = DEFAULT_FLUSH_EVERY,
        give_up: float = DEFAULT_GIVE_UP,
        mode: str = "subtask",
        subinterval: float = 1.0,
        clock: Callable[[], float] = time.time,
        on_poll: Callable[[CollectStats], None] | None = None,
        workers: Callable[[], dict[str, WorkerTime]] | None = None,
        offered: dict[str, Path] | None = None,
    ):
        """``workers`` reads the Python workers' cumulative times; by default
        :class:`~connectors.flink.workers.PythonWorkers` when the REST endpoint is on
        this host (a local cluster), nothing otherwise. ``offered`` maps a source's id
        to the folder it reads."""
        if every <= 0 or flush_every <= 0 or give_up <= 0:
            raise ConnectorError("--every, --flush-every and --give-up must be positive")
        self.rest = rest
        self.out = Path(out)
        self.every = every
        self.flush_every = flush_every
        self.give_up = give_up
        self.mode = mode
        self.subinterval = subinterval
        self.clock = clock
        self.on_poll = on_poll
        self.job_id = find_job(rest, job_id)
        self.fetcher_interval = rest.fetcher_interval()
        """Flink's metric fetcher interval in seconds (None: not known)."""
        if self.fetcher_interval is not None and self.fetcher_interval > every:
            self.every = self.fetcher_interval  # polling faster reads one fetch twice
        self.graph, self.state = read_graph(rest, self.job_id)
        self.run_id = run_id or f"flink-{self.graph.name}-{self.job_id[:8]}"
        if "/" in self.run_id or self.run_id in ("", ".", ".."):
            raise ConnectorError(f"--run-id must be a plain folder name, got {self.run_id!r}")
        self.run_dir = self.out / self.run_id
        self.stats = CollectStats(job_id=self.job_id, run_dir=self.run_dir)
        self._document = topology_document(self.graph, mode, subinterval)
        self._pending: list[dict[str, Any]] = []
        sources = {str(s["id"]) for s in self._document["sources"]}
        for source in offered or {}:
            if source not in sources:
                known = ", ".join(sorted(sources))
                raise ConnectorError(f"--offered: no source {source!r} (sources: {known})")
        self.offered = {k: OfferedFiles(v) for k, v in (offered or {}).items()}
        self._attribution = WorkAttribution(self.graph.python_heads())
        if workers is None and urlsplit(rest.url).hostname in LOCAL_HOSTS:
            workers = PythonWorkers()
        self.workers = workers
        self._latest: dict[str, tuple[float, float]] = {}
        self._rescaled = False  # the job's answer shows another parallelism than the graph
        self._running_since: float | None = None  # the job's last switch to RUNNING
        self._stopped_since: float | None = None  # when it last stopped running, if since
        self._seen_running = self.graph.start_time  # the last poll that saw it running
        self._last_version = self.graph.start_time  # valid_from of the newest version

    def topology_document(self) -> dict[str, Any]:
        """The topology the collector writes (its current version)."""
        return self._document

    @property
    def pending_rows(self) -> int:
        """Rows taken but not written yet."""
        return len(self._pending)

    def start(self) -> None:
        """Write the run's topology (the first version); done once before polling."""
        write_topology(self.run_dir, self._document, "topology.yaml")

    def poll(self) -> int:
        """Take one sample of every subtask and keep it; returns the number of rows taken."""
        started = time.perf_counter()
        times = self.workers() if self.workers is not None else {}  # read as the fetch starts
        rows = self.sample()
        self._pending += rows
        self._attribution.attribute(rows, times)
        self.stats.python_workers = len(times)
        self.stats.polls += 1
        self.stats.rows += len(rows)
        self.stats.poll_seconds.append(time.perf_counter() - started)
        return len(rows)

    def sample(self) -> list[dict[str, Any]]:
        """One sample of every subtask, not kept (:meth:`poll` keeps it), stamped with the
        time it asked Flink for fresh values (:meth:`fresh_values`); :meth:`drained`
        answers from the newest sample."""
        asked, fetched = self.fresh_values()
        for _ in range(READ_TRIES):
            read_at = self.clock()
            counters = {
                v.vertex_id: self.rest.counters(
                    self.job_id,
                    v.vertex_id,
                    v.parallelism,
                    chained_metric_names(self.graph, v.vertex_id),
                    source_metric_names(self.graph, v.vertex_id),
                )
                for v in self.graph.vertices
            }
            landed = self.rest.task_time(self.job_id, self.graph.vertices[0].vertex_id)
            if landed == fetched:
                break
            # a fetch landed while the vertices were read (one asked for after the wait
            # gave up): read them all again from it, stamped when this read began
            asked, fetched = read_at, landed
        rows = sample_rows(self.graph, counters, asked, self.mode)
        for source, files in self.offered.items():
            reading = [r for r in rows if r["operator"] == source]
            if reading:
                unread = files.total(asked) - sum(float(r["records_out"]) for r in reading)
                reading[0]["records_out"] = float(reading[0]["records_out"]) + max(0.0, unread)
        latest: dict[str, tuple[float, float]] = {}
        for row in rows:
            op, records_in, records_out = row["operator"], row["records_in"], row["records_out"]
            before = latest.get(str(op), (0.0, 0.0))
            latest[str(op)] = (before[0] + float(records_in), before[1] + float(records_out))
        self._latest = latest
        return rows

    def fresh_values(self) -> tuple[float, list[dict[str, str]]]:
        """Start a fetch of Flink's metric cache and wait until its values are in (the
        first vertex's task time changed) or ``min(FETCH_WAIT, every / 2)`` passed;
        return the time of the request that started it and the task time last seen."""
        vertex = self.graph.vertices[0].vertex_id
        asked = self.clock()
        seen = self.rest.task_time(self.job_id, vertex)
        before = seen
        deadline = time.monotonic() + min(FETCH_WAIT, self.every / 2)
        while time.monotonic() < deadline and seen == before:
            time.sleep(FETCH_STEP)
            seen = self.rest.task_time(self.job_id, vertex)
        return asked, seen

    def drained(self) -> bool:
        """Whether, at the last sample, every operator had read all its inputs had sent
        (nothing queued inside the job)."""
        latest = self._latest
        if not latest:
            return False
        for operator in self._document["operators"]:
            sent = sum(latest.get(u, (0.0, 0.0))[1] for u in operator["inputs"])
            if latest.get(operator["id"], (0.0, 0.0))[0] < sent:
                return False
        return True

    def flush(self) -> Path | None:
        """Append the pending rows as one ``samples/`` Parquet file. If it cannot be
        written (a full disk: OSError), the rows stay pending for the next flush."""
        if not self._pending:
            return None
        table = pa.Table.from_pylist(self._pending, schema=SAMPLE_SCHEMA)
        name = f"samples-{self.job_id[:8]}-{self.stats.files + 1:06d}.parquet"
        written = _write_atomically(
            self.run_dir / "samples", name, lambda p: pq.write_table(table, p)
        )
        self._pending = []
        self.stats.files += 1
        return written

    def _flush_or_keep(self) -> None:
        """:meth:`flush`, counting a failed write instead of ending the collection."""
        try:
            self.flush()
        except OSError as exc:
            self.stats.failed_writes += 1
            self.stats.last_write_error = exc.strerror or str(exc)

    def rediscover(self) -> None:
        """Re-read the job; a placement change or a rescale becomes a new topology
        version, once the job runs (a restarting job's subtasks have no TaskManager)."""
        graph, self.state = read_graph(self.rest, self.job_id)
        if graph.ids != self.graph.ids:
            raise ConnectorError(f"job {self.job_id}: its graph changed; start a new run")
        if self.state != "RUNNING":
            return
        document = topology_document(graph, self.mode, self.subinterval)
        changed = (document["placement"], document["nodes"]) != (
            self._document["placement"],
            self._document["nodes"],
        )
        resumed = self._subtasks_running_since() if changed else None
        if changed and resumed is None:
            return  # a subtask still starts (a Python worker takes seconds): not yet
        self.graph = graph
        self._rescaled = False
        if changed:
            self._document = {**document, "origin": self._document["origin"]}
            self.stats.versions += 1
            now = self.clock()
            since = max(self._running_since or 0.0, resumed or 0.0)
            valid_from = since if self._last_version < since <= now else now
            stopped = self.stop_before(valid_from)
            document = dict(self._document)
            if stopped is not None:
                document["stopped"] = round(stopped, 3)
            self._last_version = valid_from
            self._stopped_since = None
            write_topology(self.run_dir, document, f"topology-{valid_from:.3f}.yaml")

    def _subtasks_running_since(self) -> float | None:
        """When the job's last subtask started running (seconds; 0 when Flink does not
        say), or None while a subtask does not run yet. A rescaled job is ``RUNNING``
        before its subtasks are deployed and initialized, which takes seconds."""
        try:
            job = self.rest.job(self.job_id)
            latest = 0.0
            for vertex in job.get("vertices", []):
                for subtask in self.rest.vertex(self.job_id, vertex["id"]).get("subtasks", []):
                    if subtask.get("status") not in ("RUNNING", "FINISHED"):
                        return None
                    running = (subtask.get("status-duration") or {}).get("RUNNING")
                    start, lasted = subtask.get("start-time"), subtask.get("duration")
                    if running is not None and start and lasted is not None:
                        latest = max(latest, (float(start) + float(lasted) - running) / 1000)
            return latest
        except FlinkRestError:
            return None
        except (KeyError, TypeError, ValueError, AttributeError):
            return 0.0  # an answer of the wrong shape: the job's RUNNING time is used

    def stop_before(self, valid_from: float) -> float | None:
        """When the job stopped processing before it ran again at ``valid_from``: the
        completion of the checkpoint it restored from (the adaptive scheduler rescales
        when a checkpoint completes, and what was processed after it is processed again),
        else Flink's ``RESTARTING`` time or the first poll that saw the job or a vertex
        stop; None when none lies between the previous version and ``valid_from``."""
        for candidate in (self._restored_checkpoint(), self._stopped_since):
            if candidate is not None and self._last_version < candidate <= valid_from:
                return candidate
        return None

    def _restored_checkpoint(self) -> float | None:
        """The completion time of the checkpoint the job last restored from, if the
        checkpoint statistics still hold it."""
        try:
            answer = self.rest.checkpoints(self.job_id)
            latest = answer.get("latest") or {}
            restored = latest.get("restored") or {}
            if "id" not in restored:
                return None
            for entry in (latest.get("completed") or {}, *(answer.get("history") or [])):
                if entry.get("id") == restored["id"] and entry.get("latest_ack_timestamp"):
                    return float(entry["latest_ack_timestamp"]) / 1000.0
        except FlinkRestError:
            return None
        except (TypeError, ValueError, AttributeError):
            return None  # an answer of the wrong shape: the polls' stop is used
        return None

    def run(self, stop: threading.Event, duration: float | None = None) -> CollectStats:
        """Poll until the job ends, ``stop`` is set or ``duration`` has passed."""
        self.start()
        begin = self.clock()
        last_answer = last_flush = last_discovery = begin
        try:
            while True:
                tick = self.clock()
                try:
                    if self._rescaled or tick - last_discovery >= REDISCOVER_EVERY:
                        self.rediscover()
                        last_discovery = tick
                    self.poll()
                    last_answer = tick
                except JobNotFound:
                    self.stats.ended_because = "the job is gone from the endpoint"
                    break
                except FlinkRestError:
                    self.stats.failed_polls += 1
                    if tick - last_answer > self.give_up:
                        self.stats.ended_because = (
                            f"no answer from {self.rest.url} for {self.give_up:g} s"
                        )
                        break
                if self.on_poll is not None:
                    self.on_poll(self.stats)
                if tick - last_flush >= self.flush_every:
                    self._flush_or_keep()
                    last_flush = tick
                if self.state in TERMINAL_STATES:
                    self.stats.ended_because = f"the job is {self.state}"
                    break
                if duration is not None and tick - begin >= duration:
                    self.stats.ended_because = f"{duration:g} s passed"
                    break
                if stop.wait(max(0.0, self.every - (self.clock() - tick))):
                    self.stats.ended_because = "stopped"
                    break
                if self._job_ended():
                    self.stats.ended_because = f"the job is {self.state}"
                    self.poll_quietly()
                    break
        finally:
            self.flush()
        return self.stats

    def _job_ended(self) -> bool:
        """Read the job's state (and whether a vertex's parallelism changed, and since
        when it runs); whether it ended."""
        try:
            job = self.rest.job(self.job_id)
        except JobNotFound:
            self.state = "GONE"
            return True
        except FlinkRestError:
            return False
        self.state = str(job.get("state", "UNKNOWN"))
        known = {v.vertex_id: v.parallelism for v in self.graph.vertices}
        try:
            now = {str(v["id"]): int(v["parallelism"]) for v in job.get("vertices", [])}
            stamps = job.get("timestamps", {})
            running = stamps.get("RUNNING")
            self._running_since = float(running) / 1000.0 if running else None
            restarting = stamps.get("RESTARTING")
            restarting_since = float(restarting) / 1000.0 if restarting else None
            restarting_vertices = any(
                str(v.get("status")) in RESTART_STATUSES for v in job.get("vertices", [])
            )
        except (KeyError, TypeError, ValueError, AttributeError):
            return False  # an answer of the wrong shape: the next rediscovery says why
        self._rescaled = self._rescaled or any(known.get(v, p) != p for v, p in now.items())
        seen = self.clock()
        stopped = self.state != "RUNNING" or restarting_vertices
        if not stopped and not self._rescaled:
            self._stopped_since = None  # a restart without a new version models nothing
            self._seen_running = seen
        elif stopped and self._stopped_since is None:
            # The answer that says RESTARTING dates this restart; a job the adaptive
            # scheduler keeps RUNNING may carry an earlier restart's time, taken only
            # when no poll saw it running since.
            this_restart = self.state == "RESTARTING" or self._seen_running <= (
                restarting_since or 0.0
            )
            self._stopped_since = (
                restarting_since
                if restarting_since is not None and this_restart and restarting_since <= seen
                else seen
            )
        return self.state in TERMINAL_STATES

    def poll_quietly(self) -> None:
        """One last sample after the job ended, if the endpoint still answers."""
        with contextlib.suppress(FlinkRestError):
            self.poll()
