"""Drift and alerts of a stored run (dashboard.core.monitoring) and a refit's training window.

The run: one operator (cost 0.1) on one node of capacity 1, 5 events per subinterval
for 40 subintervals: load 0.5, Mace 0, eps 0.1, so the predicted band widened by w is
[-1, 2.1]. The measured latency is 0.2 s until subinterval 19 and 3.0 s from 20 on:
drift above the band from 20. Subintervals 38 and 39 are not settled: their outputs
may leave up to 1.1 s after they end, after the data's end at t = 40.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from dashboard.core.data import Database, RunData, load_run
from dashboard.core.monitoring import run_alerts, run_drift
from dashboard.overview import views as overview_views
from estimator.alerts import DRIFT, MEASURED_BREACH
from estimator.drift import ABOVE
from estimator.model import topology_from_dict
from mace.alerting import AlertSettings, alert_pass
from storage.alerts import list_alerts
from storage.db import connect, transaction
from storage.errors import StorageError
from storage.scenarios import set_objective, set_training_window, training_window_of
from storage.writes import merge_latency_stats, merge_operator_stats, merge_source_arrivals
from storage.writes import write_run as write_topology
from tests.dashboard.builders import latency_frame

pytestmark = pytest.mark.usefixtures("short_drift_training")

N = 40
TOPOLOGY = {
    "name": "drifting",
    "subinterval": 1.0,
    "nodes": [{"id": "n1", "capacity": 1.0}],
    "sources": [{"id": "s"}],
    "operators": [{"id": "a", "query": "q", "inputs": ["s"], "cost": 0.1}],
    "placement": {"a": "n1"},
}


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "drift.duckdb"
    con = connect(path)
    try:
        with transaction(con, "test run"):
            write_topology(con, "d", topology_from_dict(TOPOLOGY), [])
            merge_source_arrivals(
                con, pd.DataFrame({"run_id": "d", "source": "s", "interval": range(N), "events": 5})
            )
            merge_operator_stats(
                con,
                pd.DataFrame(
                    {
                        "run_id": "d",
                        "operator": "a",
                        "port": 0,
                        "interval": range(N),
                        "events_in": 5,
                        "events_out": 5,
                        "cpu_seconds": 0.5,
                    }
                ),
            )
            merge_latency_stats(
                con, latency_frame("d", {"q": [0.2 if p < 20 else 3.0 for p in range(N)]})
            )
    finally:
        con.close()
    return path


def _run(db: Path) -> RunData:
    database = Database(db)
    try:
        with database.cursor() as cur:
            return load_run(cur, "d")
    finally:
        database.close()


def test_drift_from_the_change_on_settled_subintervals(db: Path) -> None:
    run = _run(db)
    (event,) = run_drift(run, k=5)
    assert (event.start, event.end, event.direction, event.flagged_at) == (20, 37, ABOVE, 24)
    assert event.peak == pytest.approx(3.0 - 2.1)
    assert run_drift(run, k=19) == []
    # a refit model's drift is looked for from its training window on only
    (late,) = run_drift(run, k=5, training=(30, 40))
    assert (late.start, late.flagged_at) == (30, 34)
    # with no tolerance the band ends at 1.1: the 3.0 s are further out
    (tight,) = run_drift(run, k=5, tolerance=0.0)
    assert tight.peak == pytest.approx(3.0 - 1.1)


def test_drift_stops_at_the_first_incomplete_subinterval(db: Path) -> None:
    """One event of subinterval 30 not executed yet: 30.. are incomplete, so the drift
    from 20 ends at 29 (it went on to 37), and the alerts say the same."""
    con = connect(db)
    con.execute("UPDATE operator_stats SET events_in = 4 WHERE interval = 30")
    con.close()
    run = _run(db)
    (event,) = run_drift(run, k=5)
    assert (event.start, event.end, event.flagged_at) == (20, 29, 24)
    assert [(a.kind, a.start, a.end) for a in run_alerts(run, {})] == [(DRIFT, 20, 29)]


def test_drift_waits_for_a_minute_of_training(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The default window of this 40 s run is its first 4 s: under the minute that drift
    needs, so the same drift is not looked for; a chosen window is, however short."""
    from dashboard.core import monitoring

    monkeypatch.setattr(monitoring, "MIN_DRIFT_TRAINING", 60.0)
    run = _run(db)
    assert run_drift(run, k=5) == []
    assert run_alerts(run, {}) == []
    (event,) = run_drift(run, k=5, training=(0, 4))
    assert (event.start, event.end) == (20, 37)


def test_run_alerts(db: Path) -> None:
    run = _run(db)
    alerts = run_alerts(run, {"q": 2.5})
    assert [(a.kind, a.query, a.start, a.end) for a in alerts] == [
        (MEASURED_BREACH, "q", 20, 39),
        (DRIFT, None, 20, 37),
    ]
    assert run_alerts(run, {}, k=50) == []


def test_training_window_round_trip(db: Path) -> None:
    con = connect(db)
    try:
        assert training_window_of(con, "d") is None
        set_training_window(con, "d", (30, 40))
        set_training_window(con, "d", (32, 40))
        assert training_window_of(con, "d") == (32, 40)
        set_training_window(con, "d", None)
        assert training_window_of(con, "d") is None
        with pytest.raises(StorageError, match="holds no subinterval"):
            set_training_window(con, "d", (5, 5))
    finally:
        con.close()


def test_the_alert_pass_uses_a_stored_refit(db: Path) -> None:
    con = connect(db)
    set_objective(con, "d", "q", 2.5)
    set_training_window(con, "d", (30, 40))
    con.close()
    result = alert_pass(db, ["d"], AlertSettings())
    assert result.errors == []
    assert sorted((a.kind, a.start) for a in result.new) == [(DRIFT, 30), (MEASURED_BREACH, 20)]
    con = connect(db, read_only=True)
    try:
        assert len(list_alerts(con, "d")) == 2
    finally:
        con.close()


# Two queries on their own nodes (C = 1), 30 events in subinterval 0 then 10 per second:
# q1's a (cost 0.1) puts 3 CPU-s then 1 per second on n1, a backlog of 2 s that stays;
# q2's b (cost 0.01) puts 0.3 then 0.1 on n2, no backlog. eps = 0.11, so with the band
# widened by w: q1's band [1, 4.11], q2's [-1, 2.11], the system's [1, 4.11]. q1
# measures 2.3 s throughout; q2 0.2 s, then 3.0 s from 20 on: outside its own band, while
# the worst query (3.0 s) stays inside the system's. q2's settled subintervals end at 37.
TWO_QUERIES = {
    "name": "two-queries",
    "subinterval": 1.0,
    "nodes": [{"id": "n1", "capacity": 1.0}, {"id": "n2", "capacity": 1.0}],
    "sources": [{"id": "s"}],
    "operators": [
        {"id": "a", "query": "q1", "inputs": ["s"], "cost": 0.1, "selectivity": 1.0},
        {"id": "b", "query": "q2", "inputs": ["s"], "cost": 0.01, "selectivity": 1.0},
    ],
    "placement": {"a": "n1", "b": "n2"},
}


def test_drift_of_one_query_inside_the_systems_band(tmp_path: Path) -> None:
    from tests.dashboard.builders import write_series_run

    db = tmp_path / "two.duckdb"
    arrivals = [30] + [10] * (N - 1)
    write_series_run(
        db,
        "two",
        TWO_QUERIES,
        arrivals,
        {"a": [0.1 * e for e in arrivals], "b": [0.01 * e for e in arrivals]},
        {"q1": [2.3] * N, "q2": [0.2 if p < 20 else 3.0 for p in range(N)]},
    )
    database = Database(db)
    try:
        with database.cursor() as cur:
            run = load_run(cur, "two")
    finally:
        database.close()
    (event,) = run_drift(run, k=5)
    assert (event.query, event.start, event.end, event.direction) == ("q2", 20, 37, ABOVE)
    assert (event.flagged_at, event.peak) == (24, pytest.approx(3.0 - 2.11))
    assert [(a.kind, a.query, a.start) for a in run_alerts(run, {})] == [(DRIFT, "q2", 20)]
    (row,) = overview_views.drift_rows(run, [event])
    assert (row["query"], row["start"], row["end"]) == ("q2", 20.0, 38.0)
