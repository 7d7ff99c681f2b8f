"""The study's test jobs and their producer, checked without running Flink.

The producer is standard library only and runs here; the jobs' graphs are built in the
Flink environment with ``--plan`` (a JVM starts, no MiniCluster, nothing is executed).
Accuracy is the benchmark's to measure (benchmarks/flink_study.py --grid), never a test's.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import subprocess
from pathlib import Path

import pytest

from benchmarks import flink_grid
from benchmarks.flink_jobs.producer import SPREAD, OnOffRates, event_offsets, lines, periods
from connectors.flink.runtime import REPO, flink_venv

RATES = OnOffRates(low_rate=10.0, high_rate=100.0, mean_low=5.0, mean_high=2.0)


def test_producer_is_deterministic_per_seed() -> None:
    assert event_offsets(RATES, 60.0, 3) == event_offsets(RATES, 60.0, 3)
    assert event_offsets(RATES, 60.0, 3) != event_offsets(RATES, 60.0, 4)


def test_producer_alternates_low_and_high_periods_over_the_duration() -> None:
    spans = periods(RATES, 60.0, random.Random(1))
    assert spans[0][0] == 0.0 and spans[-1][1] == 60.0
    assert all(a[1] == b[0] for a, b in itertools.pairwise(spans))
    assert [s[2] for s in spans] == [[10.0, 100.0][i % 2] for i in range(len(spans))]
    for start, end, rate in spans[:-1]:  # the last one is cut at the duration
        mean = RATES.mean_low if rate == 10.0 else RATES.mean_high
        assert (1 - SPREAD) * mean <= end - start <= (1 + SPREAD) * mean


def test_producer_counts_follow_the_rates() -> None:
    offsets = event_offsets(RATES, 600.0, 5)
    spans = periods(RATES, 600.0, random.Random(5))
    expected = sum((end - start) * rate for start, end, rate in spans)
    assert offsets == sorted(offsets) and offsets[0] >= 0 and offsets[-1] < 600.0
    assert abs(len(offsets) - expected) < 5 * expected**0.5  # Poisson: within 5 sigma


def test_producer_lines_are_the_jobs_csv() -> None:
    text = lines([1.5, 2.25], random.Random(0), keys=3)
    rows = [line.split(",") for line in text.splitlines()]
    assert [float(r[0]) for r in rows] == [1.5, 2.25]
    assert all(r[1] in {"k0", "k1", "k2"} and 0 <= float(r[2]) < 1 for r in rows)


def test_grid_rates_follow_the_levels() -> None:
    for job in flink_grid.JOBS:
        pairs = [flink_grid.rates(job, level) for level in flink_grid.LEVELS]
        lows, highs = [p[0] for p in pairs], [p[1] for p in pairs]
        assert len(set(lows)) == 1 and list(highs) == sorted(highs)


def test_sql_part_files_become_outputs_rows(tmp_path: Path) -> None:
    parts = tmp_path / "parts" / "2026-11-25--23"
    parts.mkdir(parents=True)
    row = {"query": "sql", "sink": "sink", "stimulus_time": 100.5,
           "egress_time": "1970-01-01T00:01:41.250Z", "k": "k1"}  # fmt: skip
    (parts / "part-abc-0-0").write_text(json.dumps(row) + "\n")
    (parts / ".part-abc-0-1.inprogress.xyz").write_text(json.dumps(row) + "\n")
    outputs = tmp_path / "outputs"
    assert flink_grid.convert_sql_outputs(tmp_path / "parts", outputs) == 1
    (written,) = [json.loads(x) for x in (outputs / "sql-parts.jsonl").read_text().splitlines()]
    assert written == {"query": "sql", "operator": "sink", "stimulus_time": 100.5,
                       "egress_time": 101.25, "weight": 1}  # fmt: skip


PLANS = {
    "chain": (1, ["events", "parse", "filter", "enrich", "sink-probe", "sink"]),
    "fanout": (1, ["events", "parse", "light", "sink-light-probe", "select", "heavy",
                   "sink-heavy-probe", "sink-light", "sink-heavy"]),
    # the window's vertex is named "window, sink-probe" or "Window(TumblingProcessing...)"
    # from one build to the next (PyFlink's chaining of the probe into it)
    "window": (1, ["events", "parse", "prepare", "window", "sink"]),
    "join": (2, ["left", "right", "parse-left", "parse-right", "join", "sink-probe", "sink"]),
}  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("job", sorted(PLANS))
def test_job_builds_its_graph(job: str, tmp_path: Path) -> None:
    """Each job builds the operators it names and one sink writer per sink."""
    python = flink_venv() / "bin" / "python"
    if not (flink_venv() / ".installed").is_file():
        pytest.skip(f"no Flink environment at {flink_venv()} (make flink-env)")
    inputs, names = PLANS[job]
    command = [str(python), "-m", f"benchmarks.flink_jobs.{job}", "--plan", "--landing",
               str(tmp_path), "--run-id", "r", "--rest-port", "1", "--job-name", job]  # fmt: skip
    for i in range(inputs):
        command += ["--input", str(tmp_path / f"in-{i}")]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    plan = json.loads(done.stdout[done.stdout.index("{") :])
    contents = ", ".join(node["contents"] for node in plan["nodes"]).lower()
    for name in names:
        assert name in contents, (name, contents)
    writers = [node for node in plan["nodes"] if node["contents"].endswith(": Writer")]
    assert len(writers) == (2 if job == "fanout" else 1)


def test_probe_sinks_are_named_after_their_vertex() -> None:
    chained = ["window-sink-probe-sink"]
    assert flink_grid.sink_vertex("sink", chained) == "window-sink-probe-sink"
    two = ["light-sink-light-probe-sink-light", "select-heavy-sink-heavy-probe-sink-heavy"]
    assert flink_grid.sink_vertex("sink-heavy", two) == two[1]
    assert flink_grid.sink_vertex("sink", ["sink", "other"]) == "sink"
    assert flink_grid.sink_vertex("sink", ["a", "b"]) is None
    assert (
        flink_grid.sink_vertex("sink", ["WindowAggregate-4-Writer"]) == "WindowAggregate-4-Writer"
    )


@pytest.mark.slow
def test_sql_job_builds_its_plan(tmp_path: Path) -> None:
    """The SQL job (no Python operator) builds its plan with the MiniCluster's settings:
    source, the costly filter, the keyed window and the sink."""
    python = flink_venv() / "bin" / "python"
    if not (flink_venv() / ".installed").is_file():
        pytest.skip(f"no Flink environment at {flink_venv()} (make flink-env)")
    command = [str(python), "-m", "benchmarks.flink_jobs.sql_job", "--plan",
               "--input", str(tmp_path / "in"), "--output", str(tmp_path / "out"),
               "--rest-port", "1", "--job-name", "sql"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    plan = done.stdout[done.stdout.index("== Optimized Execution Plan ==") :]
    for step in ("TableSourceScan", "SHA256", "WindowAggregate", "Sink(table="):
        assert step in plan, (step, plan)


def test_the_study_counts_the_runs_and_queries_within_the_targets() -> None:
    """Estimated within 10%, predicted within 15%, band held in 95% of subintervals: a
    run's system and each of its queries, counted by hand here."""

    def entry(estimated: float | None, predicted: float | None) -> dict[str, float | None]:
        return {"estimated_error": estimated, "predicted_error": predicted}

    runs = [
        {
            "system": entry(0.05, -0.2) | {"band_coverage": 0.97},
            "queries": {"a": entry(0.05, -0.2), "b": entry(-0.1, 0.15)},
        },
        {
            "system": entry(-0.3, None) | {"band_coverage": None},
            "queries": {"a": entry(-0.3, None)},
        },
    ]
    assert flink_grid.within_targets(runs) == {
        "runs": 2,
        "estimated": 1,
        "predicted": 0,
        "band": 1,
        "queries": 3,
        "queries_estimated": 2,
        "queries_predicted": 1,
    }
