"""``mace report`` on a small run whose figures were computed by hand.

Run (builders.write_small_run): source s = [5, 12, 5, 0, 10]; q1 = a -> b on n2
(capacity 2), q2 = c on n1 (capacity 1); costs a 0.1, b 0.2, c 0.1, except
that a's measured CPU in interval 0 is 0.75 (so the model fitted on the first
10% of the run, interval 0, gives a cost 0.15).

Estimated (measured DLTS): n2 load [1.75, 3.6, 1.5, 0, 3.0], CE/C
[0, 0.8, 0.55, 0, 0.5]; n1 load [0.5, 1.2, 0.5, 0, 1.0], CE/C [0, 0.2, 0, 0, 0].
Predicted: n2 load 0.35 * s = [1.75, 4.2, 1.75, 0, 3.5], CE/C [0, 1.1, 0.975, 0, 0.75].
Measured q1 max latency [0.3, 1.2, 1.0, -, 0.4]; q2 [0.1, 0.5, 0.2, -, 0.15].
Each row's figures cover the intervals with outputs: 0, 1, 2 and 4 (interval 3 has no
arrivals, so no output). p99 is numpy's linear quantile: for 4 values, 0.99 * 3 = 2.97
between the 3rd and 4th smallest.
eps = 0.1 (n1: 0.1/1) + 0.1 (n2: 0.2/2) = 0.2, upper = Mace + 1.2: the measured
0.4 in interval 4 is below Mace 0.5, the other three are inside: coverage 3/4.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mace.cli import main
from tests.dashboard.builders import write_small_run

EXPECTED_Q1 = {
    "estimated_wc": 0.8,
    "predicted_wc": 1.1,
    "measured_wc": 1.2,
    "estimated_p99": 0.55 + 0.97 * 0.25,
    "predicted_p99": 0.975 + 0.97 * 0.125,
    "measured_p99": 1.0 + 0.97 * 0.2,
    "estimated_mean": (0.8 + 0.55 + 0.5) / 4,
    "predicted_mean": (1.1 + 0.975 + 0.75) / 4,
    "measured_mean": (0.3 + 1.2 + 1.0 + 0.4) / 4,
    "objective": 1.0,
    "compliance": 0.75,
}
EXPECTED_Q2 = {
    "estimated_wc": 0.2,
    "predicted_wc": 0.2,
    "measured_wc": 0.5,
    "estimated_p99": 0.97 * 0.2,
    "predicted_p99": 0.97 * 0.2,
    "measured_p99": 0.2 + 0.97 * 0.3,
    "estimated_mean": 0.05,
    "predicted_mean": 0.05,
    "measured_mean": (0.1 + 0.5 + 0.2 + 0.15) / 4,
    "objective": None,
    "compliance": None,
}


def _check(entry: dict, expected: dict) -> None:
    assert set(entry) >= set(expected)
    for key, value in expected.items():
        if value is None:
            assert entry[key] is None, key
        else:
            assert entry[key] == pytest.approx(value, rel=1e-12, abs=1e-12), key


def test_report_json_exact(small_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["report", "--db", str(small_db), "--run", "small", "--estimator", "mace", "--json"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["run"] == "small"
    assert list(report["queries"]) == ["q1", "q2"]
    _check(report["queries"]["q1"], EXPECTED_Q1)
    _check(report["queries"]["q2"], EXPECTED_Q2)
    system = report["system"]
    # the system series is q1's in every interval (n2 dominates, q1 is the slower query)
    _check(system, {**EXPECTED_Q1, "objective": 1.0, "compliance": 0.75})
    assert system["bound_coverage"] == pytest.approx(0.75)
    assert set(system) == {*EXPECTED_Q1, "bound_coverage"}


def test_report_csv_has_one_row_per_query_and_system(
    small_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", "--db", str(small_db), "--csv"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("run,query,estimated_wc,predicted_wc,measured_wc")
    assert [line.split(",")[1] for line in lines[1:]] == ["q1", "q2", "system"]
    q1 = dict(zip(lines[0].split(","), lines[1].split(","), strict=True))
    assert float(q1["measured_wc"]) == 1.2
    assert q1["compliance"] == "0.75"


def test_report_unknown_run_is_one_line_error(
    small_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", "--db", str(small_db), "--run", "nope", "--json"]) == 2
    err = capsys.readouterr().err
    assert "unknown run 'nope'" in err and "Traceback" not in err


def test_report_missing_database(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--db", str(tmp_path / "none.duckdb")]) == 2
    assert "no such database file" in capsys.readouterr().err


# The tandem run (builders.TANDEM_TOPOLOGY, hand-computed there): Mace's q1 series is
# n1's CE/C [1.25, 2.65, 2.65, 1.65, 2.65], the path-aware one [1.25, 3.25, 3.25, 2.25, 3.25];
# the burst-aware one has no stored arrival profile and falls back to Mace's series.
# The means cover the subintervals with outputs, as the measured one: 0, 1, 2 and 4.
@pytest.mark.parametrize(
    ("estimator", "q1_wc", "q1_mean"),
    [
        ("mace", 2.65, (1.25 + 2.65 * 3) / 4),
        ("path", 3.25, (1.25 + 3.25 * 3) / 4),
        ("burst", 2.65, (1.25 + 2.65 * 3) / 4),
    ],
)
def test_report_estimator_option(
    tandem_db: Path,
    capsys: pytest.CaptureFixture[str],
    estimator: str,
    q1_wc: float,
    q1_mean: float,
) -> None:
    argv = ["report", "--db", str(tandem_db), "--estimator", estimator, "--json"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    q1, q2, system = report["queries"]["q1"], report["queries"]["q2"], report["system"]
    assert q1["estimated_wc"] == pytest.approx(q1_wc)
    assert q1["estimated_mean"] == pytest.approx(q1_mean)
    assert system["estimated_wc"] == pytest.approx(q1_wc)
    # q2 runs on n1 alone: its path is one stage, so both estimators give n1's CE/C
    assert q2["estimated_wc"] == pytest.approx(2.65)
    assert q2["estimated_mean"] == pytest.approx((1.25 + 2.65 * 3) / 4)


def test_a_mace_report_does_not_load_the_compiled_kernels(small_db: Path) -> None:
    """Numba's import is a third of the command's start-up: a report by Mace needs none of
    its kernels, so it does not load it (the other estimators' modules load it when they
    run)."""
    code = (
        "import contextlib, io, sys\n"
        "from mace.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main(['report', '--db', {str(small_db)!r}, '--estimator', 'mace']) == 0\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'numba')[:3])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_report_readable_output_names_the_estimator(
    tandem_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", "--db", str(tandem_db), "--estimator", "path"]) == 0
    assert "estimated and predicted by path-aware" in capsys.readouterr().out


def test_report_unknown_estimator_is_a_usage_error(
    tandem_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["report", "--db", str(tandem_db), "--estimator", "exact"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'exact'" in err and "Traceback" not in err


def test_report_without_placement_change_has_no_changes(
    small_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", "--db", str(small_db), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["changes"] == []
    assert main(["report", "--db", str(small_db)]) == 0
    assert "changes" not in capsys.readouterr().out


def test_report_changes_of_a_run_with_a_placement_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # b moves from n2 to n1 at t = 2; figures by hand in tests/estimator/test_verification.py
    db = tmp_path / "change.duckdb"
    write_small_run(db, versions=[(2.0, {"a": "n2", "b": "n1", "c": "n1"})])
    assert main(["report", "--db", str(db), "--estimator", "mace", "--json"]) == 0
    (change,) = json.loads(capsys.readouterr().out)["changes"]
    cost_a = 1.95 / 17
    before = ((cost_a + 0.2) * 12 - 2) / 2
    assert change == {
        "interval": 2,
        "version": 1,
        "predicted_wc_before": pytest.approx(before),
        "predicted_wc_after": pytest.approx(2.0),
        "measured_wc_before": 1.2,
        "measured_wc_after": 1.0,
        "predicted_change": pytest.approx(2.0 / before - 1),
        "measured_change": pytest.approx(1.0 / 1.2 - 1),
        "moved": [{"operator": "b", "from": "n2", "to": "n1"}],
        "rescaled": [],
    }
    assert main(["report", "--db", str(db), "--estimator", "mace"]) == 0
    text = capsys.readouterr().out
    assert "subinterval 2 (b n2->n1): predicted 0.8882 -> 2.0000 s (+125%)" in text
    assert "measured 1.2000 -> 1.0000 s (-17%)" in text


def test_report_per_origin_estimate_and_its_band(
    tandem_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--estimator origin`` on a run without a stored profile: the replay of the
    measured CPU of every operator port spread evenly over the sub-buckets, per query at
    its sinks; bound coverage counts the measured max latency inside the per-origin band
    [Mace, max(per-origin, Mace) + 2w + eps] (no profile: the bursts are unknown)."""
    from contextlib import closing

    import numpy as np

    from dashboard.core.data import load_run
    from estimator.burst import SUB_BUCKETS
    from estimator.origins import origin_latency
    from estimator.runs import input_matrix
    from storage.db import connect_to_read

    argv = ["report", "--db", str(tandem_db), "--estimator", "origin", "--json"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    with closing(connect_to_read(tandem_db)) as con:
        run = load_run(con, "tandem")
    topology = run.topology
    port = input_matrix(topology, run.operator_stats, run.intervals)
    latency = origin_latency(topology, port, None, SUB_BUCKETS)
    for row, query in enumerate(topology.queries):
        assert report["queries"][query]["estimated_wc"] == pytest.approx(latency[row].max())
    measured = run.measured_system().lat_max
    ce = run.node_dlts.copy()  # Mace: the largest CE/C (capacities 1, no backlog over w)
    backlog = np.zeros(ce.shape[0])
    for p in range(ce.shape[1]):
        backlog = np.maximum(backlog + run.node_dlts[:, p] - 1.0, 0.0)
        ce[:, p] = backlog
    mace = ce.max(axis=0)
    eps = 0.1 + 0.2  # n1 hosts a (0.1) and c (0.1): 0.1; n2 hosts b: 0.2
    upper = np.maximum(latency.max(axis=0), mace) + 2 * 1.0 + eps
    seen = np.isfinite(measured)
    inside = (measured[seen] >= mace[seen] - 1e-9) & (measured[seen] <= upper[seen] + 1e-9)
    assert report["system"]["bound_coverage"] == pytest.approx(inside.mean())


def test_report_leaves_out_subintervals_with_events_in_flight(
    small_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One of a's outputs in subinterval 4 is not executed by b yet (a live run's newest
    seconds): the figures cover subintervals 0..3 (those with outputs: 0..2) and the text
    says so."""
    from storage.db import connect

    con = connect(small_db)
    con.execute(
        "UPDATE operator_stats SET events_in = events_in - 1 WHERE operator = 'b' AND interval = 4"
    )
    con.close()
    argv = ["report", "--db", str(small_db), "--run", "small", "--estimator", "mace"]
    assert main([*argv, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["intervals"], report["complete_intervals"]) == (5, 4)
    q1 = report["queries"]["q1"]
    assert q1["measured_mean"] == pytest.approx((0.3 + 1.2 + 1.0) / 3)
    assert q1["estimated_mean"] == pytest.approx((0.8 + 0.55) / 3)
    assert q1["compliance"] == pytest.approx(2 / 3)
    assert main(["report", "--db", str(small_db), "--run", "small"]) == 0
    assert "the newest 1 still have events in flight" in capsys.readouterr().out


def test_cut_keeps_the_first_subintervals_of_every_field(small_db: Path) -> None:
    """Every per-subinterval field of a run is cut (a new one must be added to cut too)."""
    import dataclasses

    import numpy as np

    from dashboard.core.complete import cut
    from mace.report_command import load_run_data

    run, _ = load_run_data(small_db, "small")
    part = cut(run, 3)
    assert (run.intervals, part.intervals, part.info.last_interval) == (5, 3, 2)
    per_interval = {"arrivals", "operator_stats", "operator_dlts", "node_dlts", "busy"}
    per_interval |= {"latency", "profile", "arrival_profile", "info", "_derived"}
    unchanged = {"version", "topology", "versions", "version_starts"}
    assert {f.name for f in dataclasses.fields(run)} == per_interval | unchanged
    for name in ("operator_dlts", "node_dlts", "busy"):
        assert np.array_equal(getattr(part, name), getattr(run, name)[:, :3])
    assert np.array_equal(part.arrivals.counts, run.arrivals.counts[:, :3])
    assert part.operator_stats["interval"].max() == 2
    assert all(q.lat_max.size == 3 for q in part.latency.values())
    assert part.node_profile is None or part.node_profile.shape[1] == 3


def test_the_readable_report_says_which_engine_delay_the_estimate_holds() -> None:
    """An engine run's query names the delay its estimate adds, and a query whose delay
    could not be calibrated says why."""
    from dashboard.core.report import KEYS
    from mace.report_command import format_report

    figures = {key: 1.0 for key in KEYS} | {"objective": None, "compliance": None}
    delay = {"low": 0.5, "typical": 1.25, "high": 2.0, "calm_subintervals": 9}
    report = {
        "run": "flink",
        "estimator_used": {"label": "Mace", "reason": "chosen with --estimator"},
        "queries": {
            "sink": figures | {"pipeline_delay": delay},
            "rare": figures | {"pipeline_delay": delay | {"calm_subintervals": 2}},
        },
        "system": figures | {"bound_coverage": 1.0},
        "changes": [],
    }
    lines = format_report(report).splitlines()
    assert (
        "engine delay in the estimate 2.0000 s (typical 1.2500, least 0.5000, "
        "over 9 calm subintervals)" in lines[6]
    )
    assert "engine delay: none in the estimate (only 2 calm subintervals, 3 needed)" in lines[12]


def test_report_changes_of_a_rescaled_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # n2 (a and b) doubles its capacity at t = 2: by hand in tests/dashboard/test_views.py
    db = tmp_path / "rescaled.duckdb"
    write_small_run(db, versions=[(2.0, {"a": "n2", "b": "n2", "c": "n1"}, {"n2": 4.0})])
    assert main(["report", "--db", str(db), "--estimator", "mace", "--json"]) == 0
    (change,) = json.loads(capsys.readouterr().out)["changes"]
    assert change["moved"] == []
    assert change["rescaled"] == [{"node": "n2", "from": 2.0, "to": 4.0}]
    assert change["predicted_wc_after"] == 0.0
    assert main(["report", "--db", str(db), "--estimator", "mace"]) == 0
    assert "subinterval 2 (n2 2->4): predicted 0.8882 -> 0.0000 s" in capsys.readouterr().out


def test_a_thread_with_a_bundle_time_is_in_the_report(tmp_path: Path) -> None:
    """n1 (query q2's thread) runs Python operators in bundles of 0.5 s: the report
    names its calm cycle and the rise its bundle cycles add, and q2's estimate holds
    that rise where it is above the backlog (CE/C of n1: [0, 0.2, 0, 0, 0])."""
    import numpy as np

    from estimator.bundles import cycle_excess
    from mace.report_command import format_report, load_report
    from tests.dashboard.builders import SMALL_TOPOLOGY

    document = dict(SMALL_TOPOLOGY)
    document["nodes"] = [
        {"id": "n1", "capacity": 1.0, "bundle_time": 0.5},
        {"id": "n2", "capacity": 2.0},
    ]
    db = tmp_path / "bundles.duckdb"
    write_small_run(db, document=document)
    report = load_report(db, None, 0.1, "mace")
    rise = cycle_excess(np.array([0.5, 1.2, 0.5, 0.0, 1.0]), 1.0, 0.5)
    assert report["bundle_cycles"] == {
        "n1": {
            "bundle_time": 0.5,
            "bundle_size": None,
            "checkpoint_interval": None,
            "calm_cycle": 1.0,
        }
    }
    assert report["bundle_rise"] == {"q2": pytest.approx(rise.max())}
    with_outputs = [0, 1, 2, 4]
    expected = np.maximum(rise, [0.0, 0.2, 0.0, 0.0, 0.0])[with_outputs].max()
    assert rise.max() > 0.2
    assert report["queries"]["q2"]["estimated_wc"] == pytest.approx(expected)
    assert "bundles of n1: every 0.5 s, calm cycle 1 s" in format_report(report)


def test_a_restart_is_in_the_whole_run_estimate_and_prediction(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Flink-shaped run (tests/mace/test_whatif_command.py's bursty run: 0.5 CPU-s/s,
    3.0 in the burst of every tenth second, on one thread of a 2-core TaskManager)
    rescaled to 2 subtasks at t = 50 after a stop from t = 44. Without the stop, the
    worst case is a burst on one thread: 2.0 s. With it, nothing is served from 44 to 50,
    and what waits is served by the two threads the job runs on after it: in subinterval
    44 the backlog is 0.5 CPU-s (0.25 s on two threads) and the stop has 5 s left, 5.25
    s; then 0.5 + 4, 0.75 + 3, 1.0 + 2, 1.25 + 1, and 5.5 / 2 = 2.75 s in the burst at
    49. The measured arrivals (and the model fitted on them) serve that work during the
    stop unless told."""
    from storage.db import connect, transaction
    from storage.writes import merge_latency_stats
    from tests.dashboard.builders import latency_frame
    from tests.mace.test_whatif_command import BURSTY, bursty_document

    db = tmp_path / "restarted.duckdb"
    rescaled = (50.0, {"work": "work-threads"}, {"work-threads": 2.0}, 44.0)
    write_small_run(db, "restarted", [rescaled], bursty_document(True), measured_cpu={},
                    arrivals=BURSTY * 10)  # fmt: skip
    con = connect(db)
    try:
        with transaction(con, "test latency"):  # an output in every subinterval
            merge_latency_stats(con, latency_frame("restarted", {"q1": [1.0] * 100}))
    finally:
        con.close()
    assert main(["report", "--db", str(db), "--estimator", "mace", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    for figure in ("estimated_wc", "predicted_wc"):
        assert report["system"][figure] == pytest.approx(5.25)
        assert report["queries"]["q1"][figure] == pytest.approx(5.25)


def test_the_readable_report_names_the_python_interpreter_a_thread_shares() -> None:
    from dashboard.core.report import KEYS
    from mace.report_command import format_report

    figures = {key: 1.0 for key in KEYS} | {"objective": None, "compliance": None}
    thread = {
        "cost": 0.003, "reading": "worker time per record", "predicted_cost": None,
        "predicted_reading": None, "busy_per_record_calm": None,
        "busy_per_record_busy": None, "busy_time_is_work": True,
    }  # fmt: skip
    report = {
        "run": "flink",
        "estimator_used": {"label": "Mace", "reason": "chosen with --estimator"},
        "queries": {"sink": figures},
        "system": figures | {"bound_coverage": 1.0},
        "changes": [],
        "threads": {
            "join": thread | {"python_worker": "python-worker@tm-1", "python_worker_cores": 1.0},
            "count": thread | {"reading": "queued", "python_worker": None},
            "parse": thread | {"python_worker": "python-worker@tm-2", "python_worker_cores": 2.0},
            "map": thread
            | {
                "python_worker": "python-worker@tm-3",
                "python_worker_cores": 1.0,
                "python_workers": "per-slot",
            },
        },
    }
    text = format_report(report)
    assert (
        "thread join: 3 ms a record (worker time per record); its Python code shares the "
        "interpreter of python-worker@tm-1 (1 core)" in text
    )
    assert "thread count: 3 ms a record (queued)\n" in text + "\n"
    assert text.count("interpreter") == 1
    assert (
        "thread parse: 3 ms a record (worker time per record); its Python code runs in the "
        "workers of python-worker@tm-2 (a worker per slot holding Python subtasks: 2 cores "
        "as the job runs now)" in text
    )
    # a cluster's TaskManager whose job runs at parallelism 1 now: one worker, not shared
    assert (
        "thread map: 3 ms a record (worker time per record); its Python code runs in the "
        "workers of python-worker@tm-3 (a worker per slot holding Python subtasks: 1 core "
        "as the job runs now)" in text
    )


def test_the_readable_report_says_when_a_first_parts_cost_counts_fixed_time() -> None:
    from dashboard.core.report import KEYS
    from mace.report_command import format_report

    figures = {key: 1.0 for key in KEYS} | {"objective": None, "compliance": None}
    thread = {
        "cost": 0.00376, "reading": "worker time per record", "records_a_second": 45.3,
        "predicted_cost": 0.00848, "predicted_reading": "worker time per record",
        "predicted_records_a_second": 10.2, "busy_per_record_calm": None,
        "busy_per_record_busy": None, "busy_time_is_work": True, "python_worker": None,
    }  # fmt: skip
    report = {
        "run": "flink",
        "estimator_used": {"label": "Mace", "reason": "chosen with --estimator"},
        "queries": {"sink": figures},
        "system": figures | {"bound_coverage": 1.0},
        "changes": [],
        "threads": {
            "parse": thread | {"predicted_counts_fixed_time": True},
            "map": thread | {"predicted_counts_fixed_time": False},
        },
    }
    text = format_report(report)
    assert (
        "thread parse: 3.76 ms a record (worker time per record), predicted with 8.48 "
        "(worker time per record, first part of the run) (the first part took 10.2 records "
        "a second against 45.3 over the run: the worker's time a second that no record "
        "causes counts per record there, so the prediction is high where more records "
        "come)" in text
    )
    assert text.count("no record causes") == 1
