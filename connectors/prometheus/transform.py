"""Pure transform: Prometheus ``query_range`` answers of a Flink job -> ``samples/`` rows.

Flink's Prometheus reporter exports every counter as a gauge named after its scope
(``flink_taskmanager_job_task_numRecordsIn``) with the scope's variables as labels
(``job_name``, ``task_id``, ``task_name``, ``subtask_index``, ``tm_id``, ...). This
module matches each series to a vertex of the job and turns the answers into the
rows the REST collector writes (DESIGN section 5): one row per (source or operator,
subtask, evaluation time) with the cumulative ``records_in``, ``records_out`` and
``busy_seconds``. A vertex yields its sources and operators by the REST collector's
rule (:func:`~connectors.flink.graph.subtask_samples`): a chain ``Source: events ->
parse -> ...`` gives the source its records out as arrivals, each chained operator its
operator-scoped counts and the head the thread's busy time. Counter resets and gaps
are left to ingestion, which differences the counters (a value that goes backwards
is a restart; a missing time spreads the next delta over the gap); they are only
counted here, for the terminal.

Two generations of names are accepted:

- **task scope** (what the REST API reads, Flink 2.x and late 1.x):
  ``flink_taskmanager_job_task_numRecordsIn`` / ``...numRecordsOut`` and
  ``flink_taskmanager_job_task_accumulateBusyTimeMs``;
- **operator scope** (older dashboards and exporters):
  ``flink_taskmanager_job_task_operator_numRecordsIn`` / ``...Out``, one series per
  chained operator; a vertex's records in are its first operator's, its records out
  its last operator's (when the task scope is not exported). Where no
  ``accumulateBusyTimeMs`` exists (older releases), the busy time is the running sum
  of ``busyTimeMsPerSecond`` over the steps.

Series are matched to vertices by ``task_id`` (Flink's vertex id) when the graph
has the ids (``--rest``), else by the vertex name (``task_name`` as the REST
collector names vertices, compared without punctuation: the reporter's default
filter strips characters such as ``-``, ``>`` and spaces from label values).
Several series for one (vertex, subtask) at one time (a relabelled or doubly
scraped target, a restarted task on another TaskManager) are merged by taking the series
that began last (see :func:`_merge`).
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from connectors.flink.graph import COUNTERS, PENDING, Member, subtask_samples, vertex_slug

TASK_PREFIX = "flink_taskmanager_job_task_"
OPERATOR_PREFIX = "flink_taskmanager_job_task_operator_"
IN, OUT, BUSY = COUNTERS
BUSY_RATE = "busyTimeMsPerSecond"
METRIC_NAMES = (
    TASK_PREFIX + IN,
    TASK_PREFIX + OUT,
    TASK_PREFIX + BUSY,
    TASK_PREFIX + BUSY_RATE,
    OPERATOR_PREFIX + IN,
    OPERATOR_PREFIX + OUT,
    OPERATOR_PREFIX + PENDING,
)
"""Every metric name the collector asks for (both generations)."""
JOB_LABELS = ("job_name", "job_id")
SUBTASK_LABELS = ("subtask_index", "subtask")
_PUNCTUATION = re.compile(r"[^a-z0-9]+")


def name_key(name: str) -> str:
    """A vertex or operator name without case and punctuation (``Source: clicks`` and the
    reporter-filtered ``Source:clicks`` give the same key)."""
    return _PUNCTUATION.sub("", name.replace("<br/>", "").lower())


@dataclass(frozen=True)
class Target:
    """A vertex of the job: how its series are recognised and what rows they make.

    ``vertex_id`` is Flink's id (the ``task_id`` label) when known; ``names`` are the
    names a ``task_name`` label may give it; ``chain`` its operators' names, first to
    last (operator-scope series stand in for the task's records in and out where the
    task scope is not exported); ``members`` the sources and operators it yields, and
    ``node(member, subtask, TaskManager label or "")`` the node a row is charged to.
    """

    vertex_id: str | None
    names: tuple[str, ...]
    chain: tuple[str, ...]
    members: tuple[Member, ...]
    node: Callable[[Member, int, str], str]


@dataclass
class TransformReport:
    """What the transform met, for one warning line each (counts, not tracebacks)."""

    rows: int = 0
    series: int = 0
    unmatched_series: int = 0
    resets: int = 0
    gaps: int = 0
    merged: int = 0  # (vertex, subtask, time) cells fed by more than one series
    integrated_busy: int = 0  # subtasks whose busy time was summed from busyTimeMsPerSecond
    missing: set[str] = field(default_factory=set)  # operators without any series
    bad_values: int = 0

    def warnings(self) -> list[str]:
        """One line per kind of problem met (empty when there was none)."""
        lines = []
        if self.missing:
            lines.append(f"no series for {', '.join(sorted(self.missing))} (not sampled)")
        if self.unmatched_series:
            lines.append(f"{self.unmatched_series} series matched no vertex of the job (ignored)")
        if self.merged:
            lines.append(
                f"{self.merged} samples came from more than one series (restarted, "
                "relabelled or scraped twice): took the newest series"
            )
        if self.resets:
            lines.append(
                f"{self.resets} counter resets (job restarts): ingestion restarts the count"
            )
        if self.gaps:
            lines.append(f"{self.gaps} missing steps: the next delta is spread over each gap")
        if self.integrated_busy:
            lines.append(
                f"{self.integrated_busy} subtasks have no accumulateBusyTimeMs: busy time "
                "summed from busyTimeMsPerSecond"
            )
        if self.bad_values:
            lines.append(f"{self.bad_values} values were not numbers (ignored)")
        return lines


Series = Mapping[str, Any]  # one entry of ``data.result``: {"metric": {...}, "values": [[t, "v"]]}


def answer_series(answer: Mapping[str, Any]) -> list[Series]:
    """The series of a ``query_range`` answer; raises ``ValueError`` on another shape."""
    if answer.get("status") != "success":
        raise ValueError(str(answer.get("error") or "the answer's status is not success"))
    data = answer.get("data") or {}
    if data.get("resultType") != "matrix":
        raise ValueError(f"expected a matrix, got {data.get('resultType')!r}")
    result = data.get("result")
    if not isinstance(result, list):
        raise ValueError("the answer has no result list")
    return result


def _label(labels: Mapping[str, str], names: Iterable[str]) -> str | None:
    return next((str(labels[n]) for n in names if n in labels), None)


def _same(label: str, name: str) -> bool:
    """Whether a (possibly filtered) label value names the vertex or operator ``name``."""
    return name_key(name) in (name_key(label), name_key(vertex_slug(label)))


def _match(labels: Mapping[str, str], targets: list[Target]) -> Target | None:
    task_id = labels.get("task_id")
    if task_id is not None:
        for target in targets:
            if target.vertex_id == task_id:
                return target
    task_name = labels.get("task_name")
    if task_name is not None:
        for target in targets:
            if any(_same(task_name, name) for name in target.names):
                return target
    return None


def _values(series: Series, report: TransformReport) -> list[tuple[float, float]]:
    points = []
    for pair in series.get("values") or []:
        try:
            time, value = float(pair[0]), float(pair[1])
        except (TypeError, ValueError, IndexError):
            report.bad_values += 1
            continue
        points.append((time, value))
    return points


Cell = tuple[int, int]  # (target index, subtask)


def samples_from_answers(
    series: Iterable[Series], targets: list[Target], step: float
) -> tuple[list[dict[str, Any]], TransformReport]:
    """``samples/`` rows (sorted by time, operator, subtask) from every series of the job.

    Rows are written for a (vertex, subtask, time) that has both the task's records in
    and out; a busy time is NaN when unknown (as Flink reports it for sources).
    """
    report = TransformReport()
    # (counter key as in the REST API, cell) -> the points of every series feeding it
    fed: dict[tuple[str, Cell], list[list[tuple[float, float]]]] = defaultdict(list)
    task_scope: set[tuple[str, Cell]] = set()  # task records in/out seen at task scope
    stand_ins: list[tuple[str, Cell, list[tuple[float, float]]]] = []
    taskmanager: dict[Cell, str] = {}
    index = {id(t): k for k, t in enumerate(targets)}
    for entry in series:
        report.series += 1
        labels = entry.get("metric") or {}
        target = _match(labels, targets)
        subtask_text = _label(labels, SUBTASK_LABELS)
        name = str(labels.get("__name__", ""))
        if target is None or subtask_text is None or not subtask_text.isdigit():
            report.unmatched_series += 1
            continue
        cell = (index[id(target)], int(subtask_text))
        points = _values(entry, report)
        if points:
            taskmanager[cell] = str(labels.get("tm_id", taskmanager.get(cell, "")))
        if name.startswith(OPERATOR_PREFIX):
            counter, operator = name[len(OPERATOR_PREFIX) :], str(labels.get("operator_name", ""))
            keys = [f"{m.metric}.{counter}" for m in target.members if _same(operator, m.metric)]
            for key in keys:
                fed[(key, cell)].append(points)
            if (counter == IN and _same(operator, target.chain[0])) or (
                counter == OUT and _same(operator, target.chain[-1])
            ):
                stand_ins.append((counter, cell, points))
            elif not keys:
                report.unmatched_series += 1
            continue
        kind = name[len(TASK_PREFIX) :]
        if kind not in (IN, OUT, BUSY, BUSY_RATE):
            report.unmatched_series += 1
            continue
        if kind in (IN, OUT):
            task_scope.add((kind, cell))
        fed[(kind, cell)].append(points)
    for kind, cell, points in stand_ins:
        if (kind, cell) not in task_scope:
            fed[(kind, cell)].append(points)
    table: dict[Cell, dict[str, dict[float, float]]] = defaultdict(dict)
    for (key, cell), feeds in fed.items():
        table[cell][key], merged = _merge(feeds)
        report.merged += merged

    rows: list[dict[str, Any]] = []
    for cell in sorted(table):
        counters = table[cell]
        target, subtask = targets[cell[0]], cell[1]
        if BUSY not in counters and BUSY_RATE in counters:
            counters[BUSY] = _integrate(counters.pop(BUSY_RATE), step)
            report.integrated_busy += 1
        records_in, records_out = counters.get(IN, {}), counters.get(OUT, {})
        times = sorted(set(records_in) & set(records_out))
        report.resets += _resets(records_in, times) + _resets(records_out, times)
        report.gaps += sum(max(0, round((b - a) / step) - 1) for a, b in pairwise(times))
        tm = taskmanager.get(cell, "")
        for time in times:
            values = {key: points[time] for key, points in counters.items() if time in points}
            for sample in subtask_samples(target.members, values):
                node = target.node(sample.member, subtask, tm)
                rows.append(sample.row(time, node, subtask))
    present = {row["operator"] for row in rows}
    report.missing = {m.id for t in targets for m in t.members} - present
    rows.sort(key=lambda r: (r["time"], r["operator"], r["subtask"]))
    report.rows = len(rows)
    return rows, report


def _merge(feeds: list[list[tuple[float, float]]]) -> tuple[dict[float, float], int]:
    """One value per time from the series of one cell, and how many times had several.

    At each time the series that began last wins: after a restart or a relabelling the
    new series is the live one, while Prometheus still returns the old one's last value
    for its lookback (five minutes by default); doubly scraped series agree anyway.
    """
    values: dict[float, float] = {}
    ordered = sorted((f for f in feeds if f), key=lambda f: min(t for t, _ in f))
    seen: Counter[float] = Counter()
    for points in ordered:  # later-starting series overwrite earlier ones
        for time, value in points:
            if math.isnan(value) and time in values:
                continue
            seen[time] += 1
            values[time] = value
    return values, sum(1 for count in seen.values() if count > 1)


def _integrate(rates: dict[float, float], step: float) -> dict[float, float]:
    """A cumulative busy time (ms) from per-second busy rates sampled every ``step``."""
    total, out = 0.0, {}
    for time in sorted(rates):
        rate = rates[time]
        if not math.isnan(rate):
            total += rate * step
        out[time] = total
    return out


def _resets(values: dict[float, float], times: list[float]) -> int:
    return sum(1 for a, b in pairwise(times) if values[b] < values[a])
