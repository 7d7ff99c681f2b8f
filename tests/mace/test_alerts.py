"""The alert pass, the webhook (a real HTTP server on 127.0.0.1) and ``mace alerts``.

The small run (tests/mace/test_report.py, objective 1 s for q1): q1's measured max latency
[0.3, 1.2, 1.0, -, 0.4] breaches it in subinterval 1 (peak 1.2 s), its predicted latency
[0, 1.1, 0.975, 0, 0.75] too (peak 1.1 s); the measured latency stays inside the predicted
band widened by w, so there is no drift.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from ingest.job import BatchSummary
from mace.alerting import AlertSettings, after_batch, alert_pass, deliver
from mace.cli import main
from storage.alerts import list_alerts
from storage.db import connect
from storage.scenarios import set_objective
from tests.ingest.landing import write_run

EXPECTED = [
    ("measured_breach", "q1", 1, 1, 1.2, 1.0),
    ("predicted_breach", "q1", 1, 1, 1.1, 1.0),
]


class Hook:
    """A webhook receiver: records each POSTed JSON body; answers ``status`` (a redirect
    with a Location for 3xx) after ``delay`` seconds."""

    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []
        self.status = 200
        self.delay = 0.0
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                time.sleep(hook.delay)
                if 200 <= hook.status < 300:
                    assert self.headers["Content-Type"] == "application/json"
                    hook.received.append(json.loads(body))
                self.send_response(hook.status)
                if 300 <= hook.status < 400:
                    self.send_header("Location", "http://127.0.0.1:9/elsewhere")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/alerts"


@pytest.fixture
def hook() -> Iterator[Hook]:
    receiver = Hook()
    thread = threading.Thread(target=receiver.server.serve_forever, daemon=True)
    thread.start()
    yield receiver
    receiver.server.shutdown()
    receiver.server.server_close()


def _rows(received: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    keys = ("kind", "query", "start_interval", "end_interval", "value", "objective")
    return [tuple(doc[k] for k in keys) for doc in received]


def test_pass_raises_stores_and_posts_each_alert_once(small_db: Path, hook: Hook) -> None:
    settings = AlertSettings(webhook=hook.url)
    result = alert_pass(small_db, ["small"], settings)
    assert [(a.kind, a.query, a.start, a.end, a.value, a.objective) for a in result.new] == EXPECTED
    assert result.delivered == 2 and result.errors == []
    assert _rows(hook.received) == EXPECTED
    assert {doc["run"] for doc in hook.received} == {"small"}
    assert set(hook.received[0]) >= {"alert_id", "detail", "created_at"}
    # again (e.g. the next ingestion pass): nothing new, nothing posted again
    again = alert_pass(small_db, ["small"], settings)
    assert again.new == [] and again.delivered == 0 and len(hook.received) == 2
    con = connect(small_db, read_only=True)
    try:
        assert [a.delivered for a in list_alerts(con)] == [True, True]
    finally:
        con.close()


def test_a_widened_alert_is_posted_again_once(small_db: Path, hook: Hook) -> None:
    settings = AlertSettings(webhook=hook.url)
    assert alert_pass(small_db, ["small"], settings).delivered == 2
    first = {doc["kind"]: doc for doc in hook.received}
    # a tighter objective, 0.5 s: the measured breach now covers 1-2 (1.0 s at 2), the
    # predicted one 1-4 (0.75 s at 4, within the 5-subinterval gap): both stored alerts
    # widen (no new row) and are POSTed again, updated, with their ids
    con = connect(small_db)
    set_objective(con, "small", "q1", 0.5)
    con.close()
    widened = alert_pass(small_db, ["small"], settings)
    assert widened.new == [] and widened.delivered == 2 and widened.errors == []
    assert _rows(hook.received[2:]) == [
        ("measured_breach", "q1", 1, 2, 1.2, 0.5),
        ("predicted_breach", "q1", 1, 4, 1.1, 0.5),
    ]
    for doc in hook.received[2:]:
        before = first[doc["kind"]]
        assert doc["alert_id"] == before["alert_id"]
        assert doc["created_at"] == before["created_at"]
        assert doc["updated_at"] > before["updated_at"]
    # the next pass changes nothing: nothing is POSTed again
    again = alert_pass(small_db, ["small"], settings)
    assert again.delivered == 0 and len(hook.received) == 4
    con = connect(small_db, read_only=True)
    try:
        assert [(a.start, a.end, a.delivered) for a in list_alerts(con)] == [
            (1, 2, True),
            (1, 4, True),
        ]
    finally:
        con.close()


@pytest.mark.parametrize("status", [500, 302])
def test_a_failed_delivery_is_retried_on_the_next_pass(
    small_db: Path, hook: Hook, status: int
) -> None:
    hook.status = status
    failed = alert_pass(small_db, ["small"], AlertSettings(webhook=hook.url))
    assert len(failed.new) == 2 and failed.delivered == 0
    (error,) = failed.errors  # the first failure ends this pass's deliveries
    assert f"webhook {hook.url}: alert 1 not delivered" in error
    hook.status = 200
    retried = alert_pass(small_db, [], AlertSettings(webhook=hook.url))
    assert retried.new == [] and retried.delivered == 2
    assert _rows(hook.received) == EXPECTED


def test_a_webhook_that_is_down_or_slow_is_an_error_not_a_crash(
    small_db: Path, hook: Hook, free_port: int
) -> None:
    down = alert_pass(small_db, ["small"], AlertSettings(webhook=f"http://127.0.0.1:{free_port}/"))
    assert down.delivered == 0 and "not delivered" in down.errors[0]
    hook.delay = 1.0
    con = connect(small_db)
    try:
        slow = deliver(con, hook.url, timeout=0.2)
    finally:
        con.close()
    assert slow.delivered == 0 and "timed out" in slow.errors[0]


def test_the_scheduler_hook_logs_new_alerts(
    small_db: Path, caplog: pytest.LogCaptureFixture
) -> None:
    hook = after_batch(small_db, AlertSettings())
    with caplog.at_level(logging.INFO, logger="mace.alerts"):
        hook(BatchSummary(batch_id=1, runs=["small"]))
        hook(BatchSummary(batch_id=None))  # no new data: nothing to say
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "alert measured_breach: run small, query q1, subintervals 1-1: "
        "peak 1.200 s > objective 1 s",
        "alert predicted_breach: run small, query q1, subintervals 1-1: "
        "peak 1.100 s > objective 1 s",
    ]


def test_a_missing_database_is_reported_not_raised(tmp_path: Path) -> None:
    result = alert_pass(tmp_path / "nope" / "x.duckdb", None, AlertSettings())
    assert result.new == [] and "alerts:" in result.errors[0]


def test_alerts_command(small_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["alerts", "--db", str(small_db)]) == 0
    assert capsys.readouterr().out.strip() == "no alerts"
    assert main(["alerts", "--db", str(small_db), "--evaluate", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert _rows(listed) == EXPECTED and not any(doc["delivered"] for doc in listed)
    assert main(["alerts", "--db", str(small_db), "--run", "small"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "#1 measured_breach: run small, query q1, subintervals 1-1: peak 1.200 s > "
        "objective 1 s (not delivered)",
        "#2 predicted_breach: run small, query q1, subintervals 1-1: peak 1.100 s > "
        "objective 1 s (not delivered)",
    ]
    assert main(["alerts", "--db", str(small_db), "--run", "other"]) == 2
    assert "unknown run 'other'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["ingest", "{tmp}", "--db", "{tmp}/x.duckdb", "--webhook", "ftp://h/x"], "--webhook"),
        (["ingest", "{tmp}", "--db", "{tmp}/x.duckdb", "--webhook", "hooks.example"], "http"),
        (["serve", "--db", "{tmp}/x.duckdb", "--webhook", "file:///etc/passwd"], "--webhook"),
        (["serve", "--db", "{tmp}/x.duckdb", "--drift-k", "0"], "--drift-k"),
        (["alerts", "--db", "{tmp}/x.duckdb"], "no such database file"),
    ],
)
def test_bad_alert_options_are_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.duckdb").exists()


@pytest.mark.spark
def test_ingest_raises_alerts_and_posts_them(
    spark: Any, tmp_path: Path, hook: Hook, capsys: pytest.CaptureFixture[str]
) -> None:
    """Spark ingestion of the tiny landing run (tests/ingest/landing.py): query q's
    outputs stimulated in subinterval 1 leave 1.4 s later, above its 1 s objective."""
    landing, db = tmp_path / "landing", tmp_path / "run.duckdb"
    write_run(landing)
    con = connect(db)
    set_objective(con, "r1", "q", 1.0)
    con.close()
    argv = ["ingest", str(landing), "--db", str(db), "--webhook", hook.url]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "alert measured_breach: run r1, query q, subintervals 1-1: peak 1.400 s" in out
    assert "webhook: 1 alert(s) delivered" in out
    assert [(d["kind"], d["run"], d["value"]) for d in hook.received] == [
        ("measured_breach", "r1", pytest.approx(1.4))
    ]
    assert main(argv) == 0  # nothing new to ingest, nothing new to raise or post
    assert "alert " not in capsys.readouterr().out and len(hook.received) == 1


def test_a_measured_breach_waits_until_its_subintervals_are_complete(small_db: Path) -> None:
    """With one of a's outputs of subinterval 1 not executed by b yet, subintervals 1.. are
    incomplete: the measured breach waits (the predicted one, read from the arrivals, does
    not); once b executes it, the breach is raised."""
    con = connect(small_db)
    con.execute(
        "UPDATE operator_stats SET events_in = events_in - 1 WHERE operator = 'b' AND interval = 1"
    )
    con.close()
    result = alert_pass(small_db, ["small"], AlertSettings())
    assert [(a.kind, a.start) for a in result.new] == [("predicted_breach", 1)]
    con = connect(small_db)
    con.execute(
        "UPDATE operator_stats SET events_in = events_in + 1 WHERE operator = 'b' AND interval = 1"
    )
    con.close()
    result = alert_pass(small_db, ["small"], AlertSettings())
    assert [(a.kind, a.start, a.value) for a in result.new] == [("measured_breach", 1, 1.2)]


def test_drift_waits_for_a_minute_of_training() -> None:
    """The default window is the run's first 10%: drift from 600 s of run on (w = 1 s),
    from 60 s with w = 0.1 s."""
    from dashboard.core.monitoring import fitted_on_enough

    assert not fitted_on_enough(594, 1.0)
    assert fitted_on_enough(595, 1.0)  # round(59.5) = 60 subintervals
    assert not fitted_on_enough(590, 0.1) and fitted_on_enough(6000, 0.1)
