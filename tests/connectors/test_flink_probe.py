"""The latency probe's writer and the demo's click feeder (no Flink needed)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest

from connectors.flink.feeder import feed
from connectors.flink.probe import ProbeWriter


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _rows(folder: Path) -> list[dict[str, object]]:
    return [json.loads(line) for f in sorted(folder.glob("*.jsonl")) for line in f.open()]


def test_below_the_rate_limit_every_event_is_a_row(tmp_path: Path) -> None:
    clock = Clock(1000.0)
    writer = ProbeWriter(tmp_path, "q1", "sink", max_rate=100, flush_seconds=10, clock=clock)
    for k in range(5):
        clock.now = 1000.0 + k * 0.1
        writer.record(999.0 + k)
    writer.flush()
    rows = _rows(tmp_path)
    assert [r["stimulus_time"] for r in rows] == [999.0, 1000.0, 1001.0, 1002.0, 1003.0]
    assert [r["egress_time"] for r in rows] == pytest.approx(
        [1000.0, 1000.1, 1000.2, 1000.3, 1000.4]
    )
    assert {(r["query"], r["operator"], r["weight"]) for r in rows} == {("q1", "sink", 1)}


def test_above_the_rate_limit_one_in_n_is_kept_with_weight_n(tmp_path: Path) -> None:
    clock = Clock(0.0)
    writer = ProbeWriter(tmp_path, "q", "s", max_rate=100, flush_seconds=100, clock=clock)
    for k in range(350):  # second 0: 350 events/s -> from second 1 on, N = ceil(3.5) = 4
        clock.now = k / 350
        writer.record(0.0)
    for k in range(400):  # second 1: 400 events kept 1 in 4 with weight 4
        clock.now = 1.0 + k / 400
        writer.record(1.0)
    writer.flush()
    rows = _rows(tmp_path)
    first = [r for r in rows if r["stimulus_time"] == 0.0]
    second = [r for r in rows if r["stimulus_time"] == 1.0]
    assert len(first) == 350 and {r["weight"] for r in first} == {1}
    assert len(second) == 100 and {r["weight"] for r in second} == {4}
    assert sum(int(str(r["weight"])) for r in second) == 400  # counts stay right


def test_files_appear_whole_under_their_final_name(tmp_path: Path) -> None:
    clock = Clock(0.0)
    writer = ProbeWriter(tmp_path, "q", "s", flush_seconds=1.0, clock=clock)
    writer.record(0.0)
    assert not list(tmp_path.iterdir())  # not due yet
    clock.now = 1.5
    writer.record(1.0)  # due: both rows go out in one file
    files = list(tmp_path.iterdir())
    assert len(files) == 1 and files[0].suffix == ".jsonl"
    assert len(_rows(tmp_path)) == 2
    assert writer.flush() is None  # nothing pending, no empty file


def test_feeder_writes_every_event_once_in_time_order(tmp_path: Path) -> None:
    clock = Clock(100.0)
    times = np.array([100.0, 100.05, 100.3, 100.31, 101.0])
    stop = threading.Event()

    class Ticking(threading.Event):
        def wait(self, timeout: float | None = None) -> bool:
            clock.now += timeout or 0.0
            return stop.is_set()

    written = feed(times, tmp_path, Ticking(), np.random.default_rng(0), slot=0.1, clock=clock)
    assert written == 5
    lines = [line for f in sorted(tmp_path.glob("*.csv")) for line in f.read_text().splitlines()]
    assert [float(line.split(",")[0]) for line in lines] == times.tolist()
    assert {line.split(",")[3] for line in lines} <= {"click", "view"}
