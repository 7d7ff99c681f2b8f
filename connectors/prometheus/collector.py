"""``mace collect prometheus``: a Flink job's counters in Prometheus -> a run folder.

The graph comes from Flink's REST API (``/jobs/<id>/plan``; a HistoryServer serves the
same paths for finished jobs) through :mod:`connectors.flink.graph`, or from a
topology file. The counters come from range queries (one query per window of at most
:data:`~connectors.prometheus.client.MAX_POINTS` steps, every metric name of both
generations in it; the first window has :data:`FIRST_WINDOW_STEPS` steps, the next
ones as many as :data:`POINT_BUDGET` allows for the series seen) and become
``samples/`` files with the REST collector's schema, each written under a hidden name
and renamed, named after the window it covers (running a window again replaces its
file instead of adding one).

- **history** (``--start``/``--end``): every window of the span, then stop;
- **follow**: every ``every`` seconds, the steps up to ``now - delay`` (Prometheus
  holds a value only after its next scrape), until stopped.

A failed query is retried (history) or retried at the next tick (follow); a window
that cannot be read stops history mode with one line saying what was written.
"""

from __future__ import annotations

import functools
import json
import math
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from connectors.errors import ConnectorError
from connectors.flink.collector import SAMPLE_SCHEMA, _write_atomically, read_graph, write_topology
from connectors.flink.graph import JobGraph, Member, Vertex, tm_node, topology_document
from connectors.flink.rest import FlinkRest
from connectors.prometheus.client import MAX_POINTS, PrometheusClient, PrometheusError
from connectors.prometheus.transform import (
    METRIC_NAMES,
    Target,
    TransformReport,
    answer_series,
    name_key,
    samples_from_answers,
)

DEFAULT_STEP = 1.0
DEFAULT_EVERY = 5.0
DEFAULT_DELAY = 5.0
DEFAULT_GIVE_UP = 120.0
RETRIES = 3
FIRST_WINDOW_STEPS = 600
POINT_BUDGET = 1_000_000
"""Points (series x steps) asked for in one range query after the first: bounds the
memory of one answer (about 30 MB of JSON) whatever the job's size."""
_JOB_ID = re.compile(r"^[0-9a-f]{32}$")
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h|d|w)?$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_SLUG = re.compile(r"[^A-Za-z0-9_.-]+")
_LABEL_FILTER = re.compile(r"[^A-Za-z0-9:_]")


def parse_duration(text: str) -> float:
    """``1s``, ``500ms``, ``2m``, ``1h``, ``7d`` or plain seconds -> seconds (> 0)."""
    match = _DURATION.match(text.strip())
    if not match or float(match.group(1)) <= 0:
        raise ConnectorError(f"{text!r} is not a duration (examples: 1s, 500ms, 5m, 2h, 7d)")
    return float(match.group(1)) * _UNITS[match.group(2) or "s"]


def parse_time(text: str, now: float) -> float:
    """Seconds since the epoch, an ISO 8601 time (UTC unless it says otherwise),
    ``now`` or ``now-<duration>``."""
    value = text.strip()
    if value == "now":
        return now
    if value.startswith("now-"):
        return now - parse_duration(value[4:])
    try:
        return float(value)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ConnectorError(
            f"{text!r} is not a time (epoch seconds, 2026-11-18T10:00:00Z, now or now-2h)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def job_selector(job: str) -> str:
    """The PromQL selector of the job's series: by ``job_id`` for a 32-hex id, else by
    ``job_name``, also in the forms the reporter's label filter leaves (Flink 2.3
    replaces characters outside ``[A-Za-z0-9:_]`` with ``_``; older releases drop them)."""
    names = "|".join(METRIC_NAMES)
    if _JOB_ID.match(job):
        return f'{{__name__=~"{names}",job_id={json.dumps(job)}}}'
    forms = (job, _LABEL_FILTER.sub("_", job), _LABEL_FILTER.sub("", job))
    return " or ".join(
        f'{{__name__=~"{names}",job_name={json.dumps(n)}}}' for n in dict.fromkeys(forms) if n
    )


def graph_targets(graph: JobGraph, mode: str) -> list[Target]:
    """The series targets of a job read from Flink's REST API: each vertex yields the
    sources and operators the REST collector writes rows for."""

    def node(vertex: Vertex) -> Callable[[Member, int, str], str]:
        last = vertex.parallelism - 1
        return lambda member, subtask, tm: graph.member_node(
            vertex, member, min(subtask, last), mode
        )

    return [
        Target(
            v.vertex_id,
            (v.name, graph.ids[v.vertex_id]),
            tuple(c.name for c in v.chain) or _chain_of(v.name),
            graph.members[v.vertex_id],
            node(v),
        )
        for v in graph.vertices
    ]


def _chain_of(name: str) -> tuple[str, ...]:
    """A vertex's operator names from its name (``Map -> Filter``) when the plan has none."""
    return tuple(part.strip() for part in name.split("->"))


def topology_targets(document: dict[str, Any]) -> list[Target]:
    """The series targets of a topology file: vertices are matched by name; an operator's
    samples go to its placed node, a source's to its TaskManager."""
    placement = dict(document.get("placement") or {})

    def node(member: Member, subtask: int, tm: str) -> str:
        if member.is_source:
            return tm_node(tm) if tm else "source"
        return str(placement.get(member.id, member.id))

    elements = [(str(s["id"]), True) for s in document.get("sources") or []]
    elements += [(str(o["id"]), False) for o in document.get("operators") or []]
    return [
        Target(None, (oid,), (oid,), (Member(oid, None, (), source, not source, oid),), node)
        for oid, source in elements
    ]


@dataclass
class PromStats:
    """What a collection did (for the terminal and the tests)."""

    run_dir: Path | None = None
    queries: int = 0
    failed_queries: int = 0
    rows: int = 0
    files: int = 0
    covered_until: float | None = None
    warnings: list[str] = field(default_factory=list)
    ended_because: str = ""
    report: TransformReport = field(default_factory=TransformReport)


class PrometheusCollector:
    """Reads one Flink job's counters from Prometheus into ``<out>/<run_id>/``."""

    def __init__(
        self,
        client: PrometheusClient,
        out: str | Path,
        job: str,
        *,
        run_id: str | None = None,
        rest: FlinkRest | None = None,
        topology: str | Path | None = None,
        step: float = DEFAULT_STEP,
        mode: str = "subtask",
        subinterval: float = 1.0,
        sleep: Callable[[float], None] = time.sleep,
    ):
        if (rest is None) == (topology is None):
            raise ConnectorError("give the job's graph with exactly one of --rest or --topology")
        if step <= 0:
            raise ConnectorError("--step must be positive")
        self.client = client
        self.job = job
        self.step = step
        self.sleep = sleep
        if rest is not None:
            graph = _graph_from_rest(rest, job)
            self.document = topology_document(graph, mode, subinterval)
            self.targets = graph_targets(graph, mode)
        else:
            self.document = _read_topology(Path(str(topology)))
            self.targets = topology_targets(self.document)
        self.run_id = run_id or f"prom-{_SLUG.sub('-', job).strip('-') or 'job'}"
        if "/" in self.run_id or self.run_id in ("", ".", ".."):
            raise ConnectorError(f"--run-id must be a plain folder name, got {self.run_id!r}")
        self.run_dir = Path(out) / self.run_id
        self.selector = job_selector(job)
        self.stats = PromStats(run_dir=self.run_dir)
        self._started = False

    def start(self) -> None:
        """Write the run's topology (validated first), once, before its first samples: a
        collection that reads nothing leaves no run folder behind."""
        if not self._started:
            write_topology(self.run_dir, self.document, "topology.yaml")
            self._started = True

    def window(self, start: float, end: float) -> int:
        """Read the steps of ``[start, end]`` and write them as one ``samples/`` file;
        returns the rows written (0: nothing was there)."""
        answer = self.client.query_range(self.selector, start, end, self.step)
        self.stats.queries += 1
        try:
            series = answer_series(answer)
        except ValueError as exc:
            raise PrometheusError(f"{self.client.url}: unexpected answer ({exc})") from None
        for warning in answer.get("warnings") or []:
            self.stats.warnings.append(f"Prometheus: {warning}")
        rows, report = samples_from_answers(series, self.targets, self.step)
        _add(self.stats.report, report, first=self.stats.queries == 1)
        self.stats.covered_until = end
        if not rows:
            return 0
        self.start()
        table = pa.Table.from_pylist(rows, schema=SAMPLE_SCHEMA)
        name = f"samples-prom-{start * 1000:.0f}-{end * 1000:.0f}.parquet"
        _write_atomically(self.run_dir / "samples", name, lambda p: pq.write_table(table, p))
        self.stats.files += 1
        self.stats.rows += len(rows)
        return len(rows)

    def history(self, start: float, end: float) -> PromStats:
        """Every window of ``[start, end]``; a window that fails after the retries stops
        with one line saying what was written."""
        if end <= start:
            raise ConnectorError(f"--end must be after --start ({_iso(start)} .. {_iso(end)})")
        steps = FIRST_WINDOW_STEPS
        cursor = _align(start, self.step)
        while cursor <= end:
            stop = min(end, cursor + self.step * (steps - 1))
            series_before = self.stats.report.series
            self._with_retries(functools.partial(self.window, cursor, stop))
            cursor = stop + self.step
            # size the next window so that one answer holds about POINT_BUDGET points
            series = max(1, self.stats.report.series - series_before)
            steps = max(1, min(MAX_POINTS, POINT_BUDGET // series))
        if self.stats.rows == 0:
            raise ConnectorError(
                f"Prometheus at {self.client.url} has no counters of job {self.job!r} between "
                f"{_iso(start)} and {_iso(end)} (is --job the job_name label? is the "
                "Prometheus reporter on?)"
            )
        self.stats.ended_because = "the window was read"
        return self.stats

    def follow(
        self,
        stop: threading.Event,
        *,
        every: float = DEFAULT_EVERY,
        delay: float = DEFAULT_DELAY,
        give_up: float = DEFAULT_GIVE_UP,
        duration: float | None = None,
        clock: Callable[[], float] = time.time,
    ) -> PromStats:
        """Keep up with the job: every ``every`` s, the steps up to ``now - delay``."""
        begin = clock()
        cursor = _align(begin - delay, self.step)
        last_answer = begin
        while True:
            tick = clock()
            end = math.floor((tick - delay) / self.step) * self.step
            if end >= cursor:
                try:
                    self.window(cursor, end)
                    cursor = end + self.step
                    last_answer = tick
                except PrometheusError as exc:
                    self.stats.failed_queries += 1
                    if tick - last_answer > give_up:
                        self.stats.ended_because = f"{exc} (for {give_up:g} s)"
                        break
            if duration is not None and tick - begin >= duration:
                self.stats.ended_because = f"{duration:g} s passed"
                break
            if stop.wait(max(0.0, every - (clock() - tick))):
                self.stats.ended_because = "stopped"
                break
        return self.stats

    def _with_retries(self, read: Callable[[], int]) -> int:
        for attempt in range(RETRIES + 1):
            try:
                return read()
            except PrometheusError as exc:
                self.stats.failed_queries += 1
                if attempt == RETRIES:
                    written = (
                        f"samples up to {_iso(self.stats.covered_until)} are written; rerun with "
                        f"--start {self.stats.covered_until + self.step:.0f} to continue"
                        if self.stats.covered_until is not None
                        else "nothing was written"
                    )
                    raise PrometheusError(f"{exc}; {written}") from None
                self.sleep(2.0**attempt)
        raise AssertionError("unreachable")


def _graph_from_rest(rest: FlinkRest, job: str) -> JobGraph:
    """The job's graph: the job with this id, else the newest job with this name."""
    jobs = rest.jobs()
    match = next((j for j in jobs if j.job_id == job), None) or next(
        (j for j in jobs if j.name == job or name_key(j.name) == name_key(job)), None
    )
    if match is None:
        known = ", ".join(f"{j.name} ({j.job_id})" for j in jobs) or "none"
        raise ConnectorError(f"--job {job!r}: no such job at {rest.url} (jobs: {known})")
    graph, _ = read_graph(rest, match.job_id)
    return graph


def _read_topology(path: Path) -> dict[str, Any]:
    from estimator.model import topology_from_dict

    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConnectorError(f"--topology {path}: cannot read it ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        raise ConnectorError(f"--topology {path}: not YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(document, dict):
        raise ConnectorError(f"--topology {path}: expected a mapping")
    topology_from_dict(document)  # one clear line on a bad topology
    return document


def _align(moment: float, step: float) -> float:
    return math.ceil(moment / step - 1e-9) * step


def _iso(moment: float | None) -> str:
    if moment is None:
        return "-"
    return datetime.fromtimestamp(moment, UTC).isoformat(timespec="seconds")


def _add(total: TransformReport, part: TransformReport, first: bool) -> None:
    """Fold one window's report into the run's; an operator is missing when no window
    had a series of it."""
    for name in ("rows", "series", "unmatched_series", "resets", "gaps", "merged", "bad_values"):
        setattr(total, name, getattr(total, name) + getattr(part, name))
    total.integrated_busy = max(total.integrated_busy, part.integrated_busy)
    total.missing = set(part.missing) if first else total.missing & part.missing
