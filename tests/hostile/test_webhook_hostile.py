"""Webhooks that trickle, hostile ``--webhook`` URLs, and a webhook with a password."""

from __future__ import annotations

import base64
import logging
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from ingest.job import BatchSummary
from mace.alerting import WEBHOOK_TIMEOUT, AlertSettings, after_batch, alert_pass, post
from mace.cli import main
from tests.hostile.cases import TRICKLED_OK, WEBHOOK_CASES, TrickleServer, WebhookCase


@pytest.fixture
def trickle() -> Any:
    server = TrickleServer(TRICKLED_OK, pace=0.5)
    yield server
    server.close()


def test_a_trickling_answer_hits_the_total_deadline(trickle: TrickleServer) -> None:
    started = time.monotonic()
    with pytest.raises(TimeoutError, match="timed out"):
        post(trickle.url + "/hook", {"a": 1}, timeout=1.0)
    assert time.monotonic() - started < 1.0 + WEBHOOK_TIMEOUT  # not the minutes it trickles


def test_the_scheduler_hook_does_not_wait_for_the_webhook(
    small_db: Path, trickle: TrickleServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Ingestion's hook raises the alerts and returns; the deliveries go on beside it."""
    hook = after_batch(small_db, AlertSettings(webhook=trickle.url + "/hook"))
    with caplog.at_level(logging.INFO, logger="mace.alerts"):
        started = time.monotonic()
        hook(BatchSummary(batch_id=1, runs=["small"]))
        returned = time.monotonic() - started
    assert returned < WEBHOOK_TIMEOUT  # the trickle takes minutes; the hook does not wait
    assert any(r.getMessage().startswith("alert measured_breach") for r in caplog.records)
    assert any(t.name == "mace-webhook" for t in threading.enumerate())


@pytest.mark.parametrize("case", WEBHOOK_CASES, ids=[c.id for c in WEBHOOK_CASES])
def test_a_hostile_webhook_url_is_refused(
    case: WebhookCase, small_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["alerts", "--db", str(small_db), "--evaluate"]) == 0
    landing = small_db.parent / "landing"
    landing.mkdir()
    status = main(["ingest", str(landing), "--db", str(small_db), "--webhook", case.url])
    err = capsys.readouterr().err
    assert status == 2 and case.message in err and case.secret not in err, err


def test_a_password_in_the_url_is_sent_and_never_shown(small_db: Path) -> None:
    received: list[str | None] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            received.append(self.headers["Authorization"])
            self.send_response(500 if len(received) > 1 else 200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://alice:hunter2@127.0.0.1:{server.server_address[1]}/hook"
        result = alert_pass(small_db, ["small"], AlertSettings(webhook=url))
    finally:
        server.shutdown()
        server.server_close()
    token = base64.b64encode(b"alice:hunter2").decode()
    assert received[0] == f"Basic {token}" and result.delivered == 1
    assert result.errors and all("hunter2" not in e for e in result.errors)
    assert "alice:***@" in result.errors[0]
