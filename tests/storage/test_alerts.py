"""Stored alerts: recording is idempotent, overlapping alerts widen, delivery is remembered,
and a database of the previous schema gets the table when opened for writing."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from estimator.alerts import DRIFT, MEASURED_BREACH, PREDICTED_BREACH, Alert
from storage.alerts import list_alerts, mark_delivered, record_alerts
from storage.db import connect, transaction
from storage.schema import MIGRATIONS, SCHEMA_VERSION, current_version

BREACH = Alert(MEASURED_BREACH, "q1", 10, 12, 2.0, 1.0)
DRIFTING = Alert(DRIFT, None, 20, 26, 0.5, None, "measured latency above the predicted band")


@pytest.fixture
def con(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    connection = connect(tmp_path / "alerts.duckdb")
    yield connection
    connection.close()


def test_recording_twice_adds_nothing(con: duckdb.DuckDBPyConnection) -> None:
    with transaction(con, "first pass"):
        new = record_alerts(con, "r1", [BREACH, DRIFTING])
    assert [(a.kind, a.query, a.start, a.end) for a in new] == [
        (MEASURED_BREACH, "q1", 10, 12),
        (DRIFT, None, 20, 26),
    ]
    assert new[0].objective == 1.0 and new[1].objective is None and not new[0].delivered
    with transaction(con, "second pass"):
        assert record_alerts(con, "r1", [BREACH, DRIFTING]) == []
    assert len(list_alerts(con)) == 2


def test_a_growing_breach_widens_its_alert(con: duckdb.DuckDBPyConnection) -> None:
    record_alerts(con, "r1", [BREACH])
    # more data: the breach goes on to 15 with a higher peak; one close by (gap 2) joins it
    grown = Alert(MEASURED_BREACH, "q1", 10, 15, 2.5, 1.0)
    near = Alert(MEASURED_BREACH, "q1", 18, 18, 1.1, 1.0)
    assert record_alerts(con, "r1", [grown, near], gap=2) == []
    (stored,) = list_alerts(con)
    assert (stored.start, stored.end, stored.value) == (10, 18, 2.5)
    # far away, another kind, another query or another run: new alerts
    others = [
        Alert(MEASURED_BREACH, "q1", 40, 41, 1.5, 1.0),
        Alert(PREDICTED_BREACH, "q1", 10, 12, 2.0, 1.0),
        Alert(MEASURED_BREACH, "q2", 10, 12, 2.0, 1.0),
    ]
    assert len(record_alerts(con, "r1", others, gap=2)) == 3
    assert len(record_alerts(con, "r2", [BREACH])) == 1
    assert [a.run_id for a in list_alerts(con, "r2")] == ["r2"]


def test_system_alerts_match_on_a_null_query(con: duckdb.DuckDBPyConnection) -> None:
    record_alerts(con, "r1", [DRIFTING])
    assert record_alerts(con, "r1", [Alert(DRIFT, None, 24, 30, 0.7)]) == []
    (stored,) = list_alerts(con)
    assert (stored.query, stored.start, stored.end, stored.value) == (None, 20, 30, 0.7)


def test_delivery_is_remembered(con: duckdb.DuckDBPyConnection) -> None:
    first, second = record_alerts(con, "r1", [BREACH, DRIFTING])
    mark_delivered(con, [first.alert_id])
    assert [a.alert_id for a in list_alerts(con, undelivered=True)] == [second.alert_id]
    assert [a.delivered for a in list_alerts(con)] == [True, False]


def test_widening_a_delivered_alert_makes_it_undelivered_once(
    con: duckdb.DuckDBPyConnection,
) -> None:
    (stored,) = record_alerts(con, "r1", [BREACH])
    mark_delivered(con, [stored.alert_id])
    # the same alert again, or one inside it: no change, stays delivered
    record_alerts(con, "r1", [BREACH, Alert(MEASURED_BREACH, "q1", 11, 11, 1.5, 1.0)])
    assert list_alerts(con, undelivered=True) == []
    # the breach goes on: widened, to be delivered again
    record_alerts(con, "r1", [Alert(MEASURED_BREACH, "q1", 10, 14, 2.0, 1.0)])
    (again,) = list_alerts(con, undelivered=True)
    assert (again.alert_id, again.start, again.end) == (stored.alert_id, 10, 14)
    assert again.updated_at >= stored.updated_at
    assert len(list_alerts(con, limit=1)) == 1


def test_a_database_from_before_alerts_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "old.duckdb"
    old = duckdb.connect(str(path))
    old.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TIMESTAMP)")
    before_alerts = next(k for k, sql in enumerate(MIGRATIONS) if "CREATE TABLE alerts" in sql)
    for number, sql in enumerate(MIGRATIONS[:before_alerts], start=1):
        old.execute(sql)
        old.execute("INSERT INTO schema_version VALUES (?, current_timestamp)", [number])
    old.close()
    con = connect(path)
    try:
        assert current_version(con) == SCHEMA_VERSION
        assert record_alerts(con, "r1", [BREACH])[0].alert_id == 1
    finally:
        con.close()


def test_the_kind_is_checked(con: duckdb.DuckDBPyConnection) -> None:
    from storage.errors import StorageError

    with pytest.raises(StorageError, match="recording alerts"):
        record_alerts(con, "r1", [Alert("hunch", "q1", 1, 2, 1.0)])
