"""The Python workers' CPU (connectors.flink.workers): a /proc tree built by hand, and
the attribution of each sample's CPU to the threads whose busy time grew."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connectors.flink.workers import TICKS, PythonWorkers, WorkAttribution


def _process(
    proc: Path,
    pid: int,
    ppid: int,
    args: list[str],
    ticks: tuple[int, int],
    env: str = "",
    threads: dict[int, tuple[int, int]] | None = None,
) -> None:
    """A process folder: its command line, environment, CPU ticks (utime, stime) and
    its threads' (ns on a core, ns waiting for one) in schedstat."""
    folder = proc / str(pid)
    folder.mkdir(exist_ok=True)
    (folder / "cmdline").write_bytes(b"\0".join(a.encode() for a in args) + b"\0")
    (folder / "environ").write_bytes(f"HOME=/root\0{env}\0".encode())
    for tid, (run, wait) in (threads or {}).items():
        (folder / "task" / str(tid)).mkdir(parents=True, exist_ok=True)
        (folder / "task" / str(tid) / "schedstat").write_text(f"{run} {wait} 3\n")
    utime, stime = ticks
    rest = " ".join(["0"] * 9)  # pgrp, session, tty, tpgid, flags and the four fault counts
    name = args[0].rsplit("/", 1)[-1][:15]
    stat = f"{pid} (a (weird) {name}) S {ppid} {rest} {utime} {stime} 0 0 20\n"
    (folder / "stat").write_text(stat)


def test_each_worker_counts_its_own_cpu_and_its_descendants(tmp_path: Path) -> None:
    _process(tmp_path, 100, 1, ["java", "-cp", "flink.jar"], (5000, 100))
    runner = ["bash", "pyflink-udf-runner.sh", "--id=1-1"]
    _process(tmp_path, 200, 100, runner, (1, 1))
    worker = ["python", "-m", "pyflink.fn_execution.beam.beam_boot", "--id=1-1"]
    _process(tmp_path, 201, 200, worker, (300, 50))
    _process(tmp_path, 202, 201, ["python", "helper"], (20, 10))
    _process(tmp_path, 203, 200, ["tee", "boot.log"], (7, 7))  # the runner's, not the worker's
    _process(tmp_path, 301, 100, [*worker[:3], "--id=2-1"], (100, 0))
    _process(tmp_path, 400, 1, ["python", "-m", "something.else"], (999, 999))
    (tmp_path / "self").mkdir()  # not a process folder
    assert PythonWorkers(tmp_path)() == {  # a first reading has waited for nothing yet
        "1-1@201": (pytest.approx((300 + 50 + 20 + 10) / TICKS), 0.0),
        "2-1@301": (pytest.approx(100 / TICKS), 0.0),
    }
    assert PythonWorkers(tmp_path / "missing")() == {}


def test_loopback_workers_are_read_in_the_process_serving_their_address(tmp_path: Path) -> None:
    """On a local deployment the PyFlink program runs the workers itself: its own CPU
    (not its children's: the JVM is one) is read once for all of them."""
    _process(tmp_path, 500, 1, ["python", "my_job.py"], (700, 100))
    _process(tmp_path, 501, 500, ["java", "-cp", "flink.jar"], (9000, 0))
    worker = ["python", "-m", "pyflink.fn_execution.beam.beam_boot"]
    loopback = "PYTHON_LOOPBACK_SERVER_ADDRESS=localhost:34797"
    _process(tmp_path, 601, 501, [*worker, "--id=1-1"], (1, 0), env=loopback)
    _process(tmp_path, 602, 501, [*worker, "--id=2-1"], (1, 0), env=loopback)
    (tmp_path / "500" / "fd").mkdir()
    (tmp_path / "500" / "fd" / "3").symlink_to("socket:[4242]")
    (tmp_path / "501" / "fd").mkdir()
    (tmp_path / "501" / "fd" / "7").symlink_to("socket:[99]")
    (tmp_path / "net").mkdir()
    header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid"
    header += "  timeout inode\n"
    rows = [
        "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 99",
        "   1: 0100007F:87ED 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 4242",
        "   2: 0100007F:87ED 0100007F:D431 01 00000000:00000000 00:00000000 00000000 0 0 77",
    ]
    (tmp_path / "net" / "tcp").write_text(header + "\n".join(rows) + "\n")
    assert PythonWorkers(tmp_path)() == {"loopback localhost:34797@500": (pytest.approx(8.0), 0.0)}


def test_the_wait_for_a_core_is_that_of_the_threads_doing_the_work(tmp_path: Path) -> None:
    """Between two readings the worker used 2 s of CPU; its working thread ran 1.9 s and
    waited 0.95 s for a core (half a second per second on a core): 1 s of waiting. A
    poller thread that ran 0.05 s and waited 0.4 s (it wakes often) is not the work."""
    worker = ["python", "-m", "pyflink.fn_execution.beam.beam_boot", "--id=1-1"]
    _process(tmp_path, 700, 1, worker, (100, 0), threads={700: (10**9, 0), 701: (0, 0)})
    workers = PythonWorkers(tmp_path)
    assert workers() == {"1-1@700": (pytest.approx(1.0), 0.0)}
    threads = {700: (29 * 10**8, 95 * 10**7), 701: (5 * 10**7, 4 * 10**8)}
    _process(tmp_path, 700, 1, worker, (300, 0), threads=threads)
    assert workers() == {"1-1@700": (pytest.approx(3.0), pytest.approx(1.0))}
    _process(tmp_path, 700, 1, worker, (300, 0), threads={700: (29 * 10**8, 95 * 10**7)})
    assert workers() == {"1-1@700": (pytest.approx(3.0), pytest.approx(1.0))}  # no CPU: no wait


def _rows(busy: dict[str, float]) -> list[dict[str, Any]]:
    return [{"operator": op, "subtask": 0, "port": 0, "busy_seconds": b} for op, b in busy.items()]


def test_a_samples_cpu_goes_to_the_threads_whose_busy_time_grew() -> None:
    attribution = WorkAttribution()
    first = _rows({"src": math.nan, "a": 1.0, "b": 2.0})
    attribution.attribute(first, {})  # no worker yet: not measured
    assert all(math.isnan(r["work_seconds"]) for r in first)
    baseline = _rows({"src": math.nan, "a": 1.0, "b": 2.0})
    attribution.attribute(baseline, {"w@1": (10.0, 1.0)})
    grown = _rows({"src": math.nan, "a": 1.5, "b": 3.5})  # a +0.5, b +1.5
    attribution.attribute(grown, {"w@1": (10.3, 1.1)})  # 0.3 s of CPU, 0.1 s ready
    assert [r["work_seconds"] for r in grown] == pytest.approx([0.0, 0.1, 0.3])
    idle = _rows({"src": math.nan, "a": 1.5, "b": 3.5})  # 0.2 s used while no thread grew
    attribution.attribute(idle, {"w@1": (10.5, 1.1)})
    assert [r["work_seconds"] for r in idle] == pytest.approx([0.0, 0.1, 0.3])
    assert attribution.idle == pytest.approx(0.2)
    later = _rows({"src": math.nan, "a": 2.5, "b": 3.5})  # a +1: it gets this sample's 0.1
    # a thread that waited ended (ready fell: no time back), a new worker is a baseline
    attribution.attribute(later, {"w@1": (10.6, 0.5), "w@2": (4.0, 0.0)})
    assert [r["work_seconds"] for r in later] == pytest.approx([0.0, 0.2, 0.3])
    assert attribution.idle == pytest.approx(0.2)


def test_with_python_operators_known_only_they_are_charged() -> None:
    # the table word count: PythonCalc-2 behind a legacy source (no busy time), and
    # GroupAggregate-5 (Java) whose busy time grows with its own work
    attribution = WorkAttribution(frozenset({"PythonCalc-2"}))

    def rows(calc_in: float, aggregate_busy: float) -> list[dict[str, Any]]:
        return [
            {"operator": "source-1", "subtask": 0, "port": 0, "busy_seconds": math.nan,
             "records_in": 0.0},
            {"operator": "PythonCalc-2", "subtask": 0, "port": 0, "busy_seconds": math.nan,
             "records_in": calc_in},
            {"operator": "GroupAggregate-5", "subtask": 0, "port": 0,
             "busy_seconds": aggregate_busy, "records_in": calc_in},
        ]  # fmt: skip

    attribution.attribute(rows(0.0, 0.0), {"w@1": (1.0, 0.0)})
    took = rows(40.0, 0.2)  # 40 records through the UDF: its 0.3 s, none to the Java one
    attribution.attribute(took, {"w@1": (1.3, 0.0)})
    assert [r["work_seconds"] for r in took] == pytest.approx([0.0, 0.3, 0.0])
    calm = rows(40.0, 0.3)  # no record through the UDF: the Java thread's growth is not it
    attribution.attribute(calm, {"w@1": (1.4, 0.0)})
    assert [r["work_seconds"] for r in calm] == pytest.approx([0.0, 0.3, 0.0])
    assert attribution.idle == pytest.approx(0.1)


def test_python_threads_with_busy_time_share_by_its_growth() -> None:
    attribution = WorkAttribution(frozenset({"a", "b"}))
    busy = {"a": 0.0, "b": 0.0, "java": 0.0}
    attribution.attribute(_rows(busy), {"w@1": (0.0, 0.0)})
    grown = _rows({"a": 0.1, "b": 0.3, "java": 0.5})
    attribution.attribute(grown, {"w@1": (0.2, 0.0)})
    assert [r["work_seconds"] for r in grown] == pytest.approx([0.05, 0.15, 0.0])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.lists(st.floats(0, 2), min_size=3, max_size=3), st.floats(0, 3)),
        min_size=1,
        max_size=25,
    )
)
def test_attributed_work_adds_up_to_the_cpu_used_once_a_thread_was_busy(
    steps: list[tuple[list[float], float]],
) -> None:
    """Against a plain ledger: after each sample, the work charged to the threads plus
    the idle time charged to none is the CPU the worker used since its baseline, and
    idle time is exactly that of the samples in which no thread's busy time grew."""
    attribution = WorkAttribution()
    busy = [0.0, 0.0, 0.0]
    cpu = 1.0
    rows = _rows({"a": 0.0, "b": 0.0, "c": 0.0})
    attribution.attribute(rows, {"w@1": (cpu, 0.0)})
    used = idle = 0.0
    for growth, spent in steps:
        before, busy = busy, [b + g for b, g in zip(busy, growth, strict=True)]
        cpu += spent
        used += spent
        rows = _rows(dict(zip("abc", busy, strict=True)))
        attribution.attribute(rows, {"w@1": (cpu, 0.0)})
        if not any(new > old for new, old in zip(busy, before, strict=True)):
            idle += spent
        charged = sum(float(r["work_seconds"]) for r in rows)
        assert charged + attribution.idle == pytest.approx(used)
        assert attribution.idle == pytest.approx(idle)
