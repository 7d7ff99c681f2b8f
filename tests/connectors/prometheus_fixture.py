"""A real Prometheus server holding a deterministic Flink job's counters (backfilled).

The job is the recorded clickstream job (tests/connectors/fixtures/flink): its vertices,
ids and TaskManager. :func:`openmetrics` writes the counters its Prometheus reporter
would have exported, in either name generation, optionally with a restart (every
counter starts again from zero, under a new ``tm_id``) and a scrape gap; :func:`serve`
backfills them with ``promtool tsdb create-blocks-from openmetrics`` and runs Debian's
``prometheus`` on a free loopback port.

``python -m tests.connectors.prometheus_fixture`` records the answers the transform tests
read (tests/connectors/fixtures/prometheus/*.json) from such a server.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from connectors.prometheus import server
from tests.connectors.flink_fixture import recorded

FIXTURES = Path(__file__).parent / "fixtures" / "prometheus"
SELECTIVITY = {"filter": 0.7}
COST_MS = {"parse": 2.0, "filter": 1.0, "enrich": 9.0, "count": 5.0}


@dataclass(frozen=True)
class Scenario:
    """What the backfilled history looks like."""

    start: float  # epoch seconds of the first sample
    seconds: int  # samples at start, start + 1, ..., start + seconds - 1
    generation: int = 2  # 2: task-scope names; 1: operator-scope names and busy rates
    restart_at: int | None = None  # offset at which every counter restarts on a new TM
    gap: tuple[str, int, int] | None = None  # (vertex name, first, last offset) not scraped


def source_rate(offset: int) -> int:
    """Events the source emits in second ``offset``: bursts of 40/s every other 5 s."""
    return 10 if (offset // 5) % 2 == 0 else 40


def vertices() -> list[tuple[str, str, str]]:
    """(vertex id, name, TaskManager id) of the recorded job, in chain order."""
    details = recorded("vertices")
    return [
        (v["id"], v["name"], str(details[v["id"]]["subtasks"][0]["taskmanager-id"]))
        for v in recorded("job")["vertices"]
    ]


def cumulative(scenario: Scenario) -> dict[str, list[tuple[float, float, float]]]:
    """Per vertex id: (records in, records out, busy ms) at each offset, from job start
    (before any restart)."""
    emitted = [0.0]
    for offset in range(1, scenario.seconds):
        emitted.append(emitted[-1] + source_rate(offset))
    values: dict[str, list[tuple[float, float, float]]] = {}
    upstream = emitted
    for vid, name, _ in vertices():
        if name.startswith("Source"):
            values[vid] = [(0.0, c, math.nan) for c in emitted]
            continue
        out = [float(math.floor(c * SELECTIVITY.get(name, 1.0))) for c in upstream]
        cost = COST_MS.get(name, 0.5)
        values[vid] = [(i, o, i * cost) for i, o in zip(upstream, out, strict=True)]
        upstream = out
    return values


def openmetrics(scenario: Scenario, job_name: str = "clickstream") -> str:
    """The exposition text promtool backfills (one family after the other, # EOF)."""
    table = cumulative(scenario)
    families: dict[str, list[str]] = {}
    for vid, name, tm in vertices():
        for offset in range(scenario.seconds):
            if (
                scenario.gap
                and scenario.gap[0] == name
                and scenario.gap[1] <= offset <= scenario.gap[2]
            ):
                continue
            restarted = scenario.restart_at is not None and offset >= scenario.restart_at
            base = table[vid][scenario.restart_at] if restarted and scenario.restart_at else None
            records_in, records_out, busy = table[vid][offset]
            if base is not None:
                records_in, records_out = records_in - base[0], records_out - base[1]
                busy = busy - base[2]
            tm_id = f"{tm}-r" if restarted else tm
            moment = scenario.start + offset
            for metric, value, labels in _series(
                scenario.generation,
                vid,
                name,
                tm_id,
                job_name,
                records_in,
                records_out,
                busy,
                table,
                offset,
            ):
                families.setdefault(metric, []).append(
                    f"{metric}{{{labels}}} {_number(value)} {moment:.3f}"
                )
    lines = []
    for metric, samples in families.items():
        lines.append(f"# TYPE {metric} gauge")
        lines += samples
    return "\n".join([*lines, "# EOF", ""])


def _series(generation: int, vid: str, name: str, tm_id: str, job_name: str,
            records_in: float, records_out: float, busy: float,
            table: dict[str, list[tuple[float, float, float]]], offset: int
            ) -> list[tuple[str, float, str]]:  # fmt: skip
    if generation == 2:
        labels = (
            f'job_name="{job_name}",job_id="{recorded("job")["jid"]}",task_id="{vid}",'
            f'task_name="{name}",subtask_index="0",tm_id="{tm_id}",host="localhost"'
        )
        prefix = "flink_taskmanager_job_task_"
        return [
            (prefix + "numRecordsIn", records_in, labels),
            (prefix + "numRecordsOut", records_out, labels),
            (prefix + "accumulateBusyTimeMs", busy, labels),
        ]
    # the reporter's default label filter keeps only [A-Za-z0-9:_]
    filtered = "".join(c for c in name if c.isalnum() or c in ":_")
    labels = (
        f'job_name="{job_name}",task_id="{vid}",task_name="{filtered}",subtask_index="0",'
        f'tm_id="{tm_id}"'
    )
    previous = table[vid][offset - 1][2] if offset > 0 else 0.0
    rate = busy - previous if not math.isnan(busy) else math.nan  # ms busy in the last second
    prefix = "flink_taskmanager_job_task_operator_"
    operator = f'{labels},operator_name="{filtered}"'
    return [
        (prefix + "numRecordsIn", records_in, operator),
        (prefix + "numRecordsOut", records_out, operator),
        ("flink_taskmanager_job_task_busyTimeMsPerSecond", rate, labels),
    ]


CHAINED_START, CHAINED_SECONDS = 1_795_307_400.0, 10
"""The chained job's backfilled history: CHAINED_SECONDS samples from CHAINED_START."""
_LABEL_FILTER = re.compile(r"[^A-Za-z0-9:_]")


def chained_counters(offset: int) -> dict[str, list[dict[str, str]]]:
    """The REST counter answers of the recorded chained job (tests/connectors/fixtures/
    flink-chained) at ``offset``: every recorded count scaled by (offset + 1) / seconds."""
    share = (offset + 1) / CHAINED_SECONDS
    return {
        vid: [{"id": m["id"], "value": f"{math.floor(float(m['value']) * share)}"} for m in metrics]
        for vid, metrics in recorded("counters", "flink-chained").items()
    }


def chained_openmetrics(job_name: str = "clickstream") -> str:
    """What Flink 2.3's reporter exports of the chained job over its history: task scope
    and, per chained operator, operator scope, with the reporter's label filter (characters
    outside ``[A-Za-z0-9:_]`` become ``_``)."""
    from connectors.flink.graph import parse_chain

    job = recorded("job", "flink-chained")
    descriptions = {
        n["id"]: n["description"] for n in recorded("plan", "flink-chained")["plan"]["nodes"]
    }
    details = recorded("vertices", "flink-chained")
    families: dict[str, list[str]] = {}
    for offset in range(CHAINED_SECONDS):
        moment = CHAINED_START + offset
        for vertex in job["vertices"]:
            vid = vertex["id"]
            tm = details[vid]["subtasks"][0]["taskmanager-id"]
            values = {m["id"]: m["value"] for m in chained_counters(offset)[vid]}
            task = (
                f'job_name="{job_name}",job_id="{job["jid"]}",task_id="{vid}",'
                f'task_name="{_LABEL_FILTER.sub("_", vertex["name"])}",subtask_index="0",'
                f'tm_id="{_LABEL_FILTER.sub("_", tm)}",host="localhost"'
            )
            for counter in ("numRecordsIn", "numRecordsOut", "accumulateBusyTimeMs"):
                metric = f"flink_taskmanager_job_task_{counter}"
                families.setdefault(metric, []).append(
                    f"{metric}{{{task}}} {values[f'0.{counter}']} {moment:.3f}"
                )
            for chained in parse_chain(descriptions[vid]):
                labels = f'{task},operator_name="{_LABEL_FILTER.sub("_", chained.name)}"'
                for counter in ("numRecordsIn", "numRecordsOut"):
                    value = values.get(f"0.{chained.metric_name}.{counter}")
                    if value is None:
                        continue
                    metric = f"flink_taskmanager_job_task_operator_{counter}"
                    families.setdefault(metric, []).append(
                        f"{metric}{{{labels}}} {value} {moment:.3f}"
                    )
    lines = []
    for metric, samples in families.items():
        lines.append(f"# TYPE {metric} gauge")
        lines += samples
    return "\n".join([*lines, "# EOF", ""])


def _number(value: float) -> str:
    return "NaN" if math.isnan(value) else f"{value:g}"


def prometheus_missing() -> str | None:
    """Why no real Prometheus (with ``promtool`` for backfills) can run here."""
    return server.prometheus_missing(("prometheus", "promtool"))


@contextmanager
def serve(
    text: str | None,
    workdir: Path,
    scrape: tuple[str, ...] = (),
    lookback: str = "5m",
    basic_auth: tuple[str, str] | None = None,
) -> Iterator[str]:
    """Backfill ``text`` (if any), start Prometheus on 127.0.0.1 (scraping ``scrape``
    host:port targets every second), wait until it is ready; yield its URL."""
    if text is not None:
        data = workdir / "tsdb"
        data.mkdir(parents=True, exist_ok=True)
        source = workdir / "history.om"
        source.write_text(text, encoding="utf-8")
        subprocess.run(
            ["promtool", "tsdb", "create-blocks-from", "openmetrics", str(source), str(data)],
            check=True,
            capture_output=True,
            timeout=120,
        )
    with server.run_prometheus(workdir, scrape, lookback=lookback, basic_auth=basic_auth) as url:
        yield url


FIXTURE_SCENARIOS = {
    # task-scope names; every counter restarts at offset 12 under a new tm_id; enrich is
    # not scraped for offsets 5..7 (the server's lookback is 1 s, so that is a gap)
    "v2_restart_gap": Scenario(
        start=1_795_307_340.0, seconds=20, generation=2, restart_at=12, gap=("enrich", 5, 7)
    ),
    # operator-scope names, filtered label values, busy time only as busyTimeMsPerSecond
    "v1_operator_scope": Scenario(start=1_795_307_340.0, seconds=20, generation=1),
}


def record() -> None:
    """Record the answers of a real server for the transform tests."""
    from connectors.prometheus.client import PrometheusClient
    from connectors.prometheus.collector import job_selector

    FIXTURES.mkdir(parents=True, exist_ok=True)
    histories = {
        name: (openmetrics(scenario), scenario.start, scenario.start + scenario.seconds - 1)
        for name, scenario in FIXTURE_SCENARIOS.items()
    }
    end = CHAINED_START + CHAINED_SECONDS - 1
    histories["v2_chained"] = (chained_openmetrics(), CHAINED_START, end)
    for name, (text, start, stop) in histories.items():
        with (
            tempfile.TemporaryDirectory() as work,
            serve(text, Path(work), lookback="1s") as url,
        ):
            answer = PrometheusClient(url).query_range(
                job_selector("clickstream"), start, stop, 1.0
            )
        answer["data"]["result"].sort(key=lambda s: sorted(s["metric"].items()))
        (FIXTURES / f"{name}.json").write_text(json.dumps(answer, indent=None) + "\n")
        print(f"{name}: {len(answer['data']['result'])} series")


if __name__ == "__main__":
    record()
