"""``mace whatif`` and ``mace plan parallelism`` on stored runs worked out by hand.

The bursty run: one operator (cost 0.01 s per event) on a machine of capacity 1, ten
cycles of 9 s at 50 events/s and 1 s at 300 events/s: 0.5 CPU-s/s, then 3.0 in a
burst (mean 0.75). One subtask leaves 2 s of work after a burst, two 0.5 s each, three
none; the utilisation rule (0.7) asks for ceil(0.75 / 0.7) = 2.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from mace.cli import main
from storage.db import connect, transaction
from storage.writes import merge_latency_stats, replace_sample_state
from tests.dashboard.builders import latency_frame, write_small_run

BURSTY = [50.0] * 9 + [300.0]
WHATIF_KEYS = {"run", "delays", "recorded", "changed", "restart"}
SIDE_KEYS = {"deployment", "queries", "system", "bottleneck", "spread"}
DEPLOYMENT_KEYS = {"parallelism", "subtasks", "taskmanagers", "slots", "cores"}
FIGURE_KEYS = {"wc", "p99", "mean"}


def bursty_document(hosted: bool) -> dict[str, Any]:
    nodes: list[dict[str, Any]] = [{"id": "m", "capacity": 1.0}]
    placement = {"work": "m"}
    if hosted:
        nodes = [
            {"id": "work-threads", "capacity": 1.0, "host": "tm-a"},
            {"id": "tm-a", "capacity": 2.0},
        ]
        placement = {"work": "work-threads"}
    return {
        "name": "bursty",
        "subinterval": 1.0,
        "nodes": nodes,
        "sources": [{"id": "s"}],
        "operators": [
            {"id": "work", "query": "q1", "inputs": ["s"], "cost": 0.01, "selectivity": 1.0}
        ],
        "placement": placement,
    }


@pytest.fixture
def bursty_db(tmp_path: Path) -> Path:
    db = tmp_path / "bursty.duckdb"
    write_small_run(db, "bursty", document=bursty_document(False), measured_cpu={},
                    arrivals=BURSTY * 10)  # fmt: skip
    return db


@pytest.fixture
def flink_db(tmp_path: Path) -> Path:
    db = tmp_path / "flink.duckdb"
    write_small_run(db, "flinkish", document=bursty_document(True), measured_cpu={},
                    arrivals=BURSTY * 10)  # fmt: skip
    return db


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main(list(argv)) == 0, capsys.readouterr().err
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    return document


def error_of(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err
    return lines[0]


def test_whatif_json_predicts_a_higher_parallelism(
    bursty_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = run_json(
        capsys, "whatif", "--db", str(bursty_db), "--set", "work.parallelism=2", "--json"
    )
    assert set(document) == WHATIF_KEYS and document["delays"] is False
    for side in ("recorded", "changed"):
        assert set(document[side]) == SIDE_KEYS
        assert set(document[side]["deployment"]) == DEPLOYMENT_KEYS
        assert set(document[side]["system"]) == FIGURE_KEYS
        assert set(document[side]["queries"]) == {"q1"}
    recorded, changed = document["recorded"], document["changed"]
    assert recorded["system"]["wc"] == pytest.approx(2.0)
    assert recorded["bottleneck"] == "m"
    assert changed["system"]["wc"] == pytest.approx(0.5)
    assert changed["queries"]["q1"]["wc"] == pytest.approx(0.5)
    assert changed["bottleneck"] in {"m#0", "m#1"}
    assert changed["deployment"]["parallelism"] == {"m": 2}
    assert changed["deployment"]["taskmanagers"] == 0
    assert document["restart"] is None  # no restart measured on this run


@pytest.fixture
def restarted_db(tmp_path: Path) -> Path:
    """The bursty run, restarted once for 2 s (stopped at 48, running again at 50)."""
    db = tmp_path / "restarted.duckdb"
    write_small_run(db, "restarted", [(50.0, {"work": "m"}, {}, 48.0)],
                    bursty_document(False), measured_cpu={}, arrivals=BURSTY * 10)  # fmt: skip
    return db


def test_whatif_says_what_a_measured_restart_costs(
    restarted_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The same deployment restarted for 2 s at the busiest moments: ending at a burst
    # (intervals 7 and 8 stopped: CE 0.5, 1.0, then 1.0 + 3.0 - 1 = 3.0 in the burst) or
    # during one (9 and 10: CE 3.0 with 1 s of stop left, 4.0 s; then 3.5): the worst is 4.0 s
    db = restarted_db
    document = run_json(capsys, "whatif", "--db", str(db), "--set", "m.parallelism=1", "--json")
    restart = document["restart"]
    figure_keys = SIDE_KEYS - {"deployment", "spread"}
    assert set(restart) == {"downtime", "measured", "interval", *figure_keys}
    assert (restart["downtime"], restart["measured"], restart["interval"]) == (2.0, 1, 9)
    assert restart["system"]["wc"] == pytest.approx(4.0)
    assert document["changed"]["system"]["wc"] == pytest.approx(2.0)
    assert main(["whatif", "--db", str(db), "--set", "m.parallelism=1"]) == 0
    assert "restart: 2.00 s stopped (the median of 1 measured" in capsys.readouterr().out


def test_whatif_readable_output(bursty_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["whatif", "--db", str(bursty_db), "--set", "m.parallelism=3"]) == 0
    out = capsys.readouterr().out
    assert "changed: 3 subtasks" in out and "bottleneck changed: none" in out


def test_whatif_on_a_flink_shaped_run_adds_taskmanagers(
    flink_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = run_json(
        capsys, "whatif", "--db", str(flink_db), "--set", "work.parallelism=3", "--set",
        "slots=1", "--json",
    )  # fmt: skip
    deployment = document["changed"]["deployment"]
    assert deployment["taskmanagers"] == 3 and deployment["slots"] == 1
    assert deployment["parallelism"] == {"work-threads": 3}


def test_whatif_starts_from_the_parallelism_a_rescale_left(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the run's last version has work at 2 subtasks: that is what "recorded" means now
    db = tmp_path / "rescaled.duckdb"
    write_small_run(db, "rescaled", [(50.0, {"work": "work-threads"}, {"work-threads": 2.0})],
                    bursty_document(True), measured_cpu={}, arrivals=BURSTY * 10)  # fmt: skip
    document = run_json(capsys, "whatif", "--db", str(db), "--set", "work.parallelism=3", "--json")
    assert document["recorded"]["deployment"]["parallelism"] == {"work-threads": 2}
    assert document["changed"]["deployment"]["parallelism"] == {"work-threads": 3}


def test_plan_parallelism_beats_the_utilisation_rule(
    bursty_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = run_json(
        capsys, "plan", "parallelism", "--db", str(bursty_db), "--objective", "0.2", "--json"
    )
    recommended, rule = document["recommended"], document["utilization_rule"]
    assert recommended["deployment"]["parallelism"] == {"m": 3}
    assert recommended["meets_objective"] and recommended["feasible"]
    assert recommended["system"]["wc"] == pytest.approx(0.0)
    assert rule["target"] == 0.7
    assert rule["deployment"]["parallelism"] == {"m": 2}
    assert rule["system"]["wc"] == pytest.approx(0.5)
    assert rule["meets_objective"] is False
    assert document["recorded"]["system"]["wc"] == pytest.approx(2.0)
    assert document["search"] == "greedy"


def test_plan_parallelism_shows_the_restart_its_recommendation_costs(
    restarted_db: Path, bursty_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 3 subtasks meet 0.2 s once running (each takes 1.0 CPU-s of a burst in its second).
    # Reaching them is a restart, the run's 2 s: stopped in a burst's second (9) and the
    # next, a subtask holds 1.0 CPU-s with 1 s of stop left, 2.0 s; stopped just before
    # it (7 and 8), 0.5 / 3 + 1 s at most, and the burst is then served in its second.
    # The rule's 2 subtasks: 1.5 + 1 s = 2.5 s at 9.
    document = run_json(capsys, "plan", "parallelism", "--db", str(restarted_db),
                        "--objective", "0.2", "--json")  # fmt: skip
    recommended, rule = document["recommended"], document["utilization_rule"]
    assert recommended["deployment"]["parallelism"] == {"m": 3}
    assert recommended["meets_objective"] and recommended["system"]["wc"] == pytest.approx(0.0)
    restart = recommended["restart"]
    assert set(restart) == {"downtime", "measured", "interval", "queries", "system",
                            "bottleneck", "meets_objective"}  # fmt: skip
    assert (restart["downtime"], restart["measured"], restart["interval"]) == (2.0, 1, 9)
    assert restart["system"]["wc"] == pytest.approx(2.0)
    assert restart["queries"]["q1"]["wc"] == pytest.approx(2.0)
    assert restart["meets_objective"] is False
    assert rule["restart"]["system"]["wc"] == pytest.approx(2.5)
    assert main(["plan", "parallelism", "--db", str(restarted_db), "--objective", "0.2"]) == 0
    out = capsys.readouterr().out
    assert "worst case after the change 0.0000 s meets it" in out
    assert "worst case including the restart: 2.0000 s MISSES it (once: a 2.00 s stop" in out
    # no restart measured: none predicted; the recorded deployment needs none
    document = run_json(capsys, "plan", "parallelism", "--db", str(bursty_db),
                        "--objective", "2.5", "--json")  # fmt: skip
    assert document["recommended"]["deployment"]["parallelism"] == {"m": 1}
    assert document["recommended"]["restart"] is None
    assert document["utilization_rule"]["restart"] is None
    assert main(["plan", "parallelism", "--db", str(bursty_db), "--objective", "2.5"]) == 0
    out = capsys.readouterr().out
    assert "no restart: it is the recorded deployment" in out
    assert "not predicted (no restart measured on this run)" in out


@pytest.mark.parametrize(
    ("edits", "message"),
    [
        (["nope.parallelism=2"], "unknown operator 'nope'"),
        (["work.parallelism=0"], "work-threads.parallelism: must be a whole number from 1 to 128"),
        (["work.parallelism=200"], "(the max parallelism), got 200"),
        (["work.parallelism=1.5"], "expected a whole number"),
        (["work.parallelism=4", "taskmanagers=1", "slots=2"], "the job needs 4 slots"),
        (["slots=4", "cores=2"], "4 slots per TaskManager is more than its 2 cores"),
        (["colour=red"], "unknown key 'colour'"),
        (["work.speed=2"], "unknown attribute 'speed'"),
    ],
)
def test_whatif_user_mistakes_are_one_line(
    flink_db: Path, capsys: pytest.CaptureFixture[str], edits: list[str], message: str
) -> None:
    argv = ["whatif", "--db", str(flink_db)]
    for edit in edits:
        argv += ["--set", edit]
    line = error_of(capsys, *argv)
    assert message in line and line.startswith("mace whatif: error: ")


def test_whatif_taskmanagers_on_a_simulated_run_is_refused(
    bursty_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = error_of(capsys, "whatif", "--db", str(bursty_db), "--set", "taskmanagers=2")
    assert "no TaskManagers (no node hosts others, as in a simulated run)" in line


@pytest.fixture
def engine_db(tmp_path: Path) -> Path:
    """The bursty run on a TaskManager, measured by counters (a sample state kept), its
    query's latency 1.5 s in every subinterval that has no backlog and 1.5 s more in each
    burst: an engine delay of 1.5 s, calibrated on the calm subintervals."""
    db = tmp_path / "engine.duckdb"
    write_small_run(db, "engine", document=bursty_document(True), measured_cpu={},
                    arrivals=BURSTY * 10)  # fmt: skip
    latency = [1.5 + (1.5 if k % 10 == 9 else 0.0) for k in range(100)]
    state = {"run_id": "engine", "operator": "work", "subtask": 0, "port": 0, "time": 100.0,
             "node": "work-threads", "records_in": 0.0, "records_out": 0.0,
             "busy_seconds": 0.0, "work_seconds": None}  # fmt: skip
    con = connect(db)
    try:
        with transaction(con, "engine run"):
            con.execute("DELETE FROM latency_stats WHERE run_id = 'engine'")
            merge_latency_stats(con, latency_frame("engine", {"q1": latency}))
            replace_sample_state(con, pd.DataFrame([state]))
    finally:
        con.close()
    return db


def test_plan_parallelism_says_no_deployment_beats_the_engine_delay(
    engine_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = run_json(capsys, "plan", "parallelism", "--db", str(engine_db),
                        "--objective", "1.2", "--json")  # fmt: skip
    assert document["delays"] is True
    assert document["floor"] == {"query": "q1", "seconds": pytest.approx(1.5)}
    assert document["recommended"] is None and document["evaluations"] == 0
    # the rule's deployment is still judged, with the delay on top of its 0.5 s of backlog
    assert document["utilization_rule"]["system"]["wc"] == pytest.approx(2.0)
    assert main(["plan", "parallelism", "--db", str(engine_db), "--objective", "1.2"]) == 0
    text = capsys.readouterr().out
    assert "none meets it: the engine delay of query q1, 1.5000 s, is in every subinterval" in text
    # above the floor the search runs and its answer holds the delay
    document = run_json(capsys, "plan", "parallelism", "--db", str(engine_db),
                        "--objective", "4", "--json")  # fmt: skip
    assert document["evaluations"] > 0
    # one subtask: 2 s of backlog after a burst, and the delay
    assert document["recommended"]["deployment"]["subtasks"] == 1
    assert document["recommended"]["system"]["wc"] == pytest.approx(3.5)


def test_plan_parallelism_refuses_a_bad_objective(
    bursty_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = error_of(capsys, "plan", "parallelism", "--db", str(bursty_db), "--objective", "-1")
    assert "--objective: must be a positive number" in line


def test_plan_parallelism_says_when_the_rules_deployment_does_not_fit(
    flink_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = error_of(
        capsys, "plan", "parallelism", "--db", str(flink_db), "--objective", "100",
        "--set", "taskmanagers=1", "--set", "slots=1",
    )  # fmt: skip
    assert "the utilisation rule's deployment cannot be scheduled" in line
    assert "the job needs 2 slots" in line
