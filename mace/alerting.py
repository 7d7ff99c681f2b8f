"""The alert pass after each ingestion pass (``mace ingest``, ``mace serve --landing``).

For each run that received data, the pass raises the run's alerts
(:func:`dashboard.core.monitoring.run_alerts`: objectives breached, measured and
predicted, and drift; the predictive model is the run's refit one if a training
window is stored, :func:`storage.scenarios.set_training_window`) over its complete
subintervals (:mod:`dashboard.core.complete`: a measured breach waits for them; drift, as
on the Overview, waits for them and for a default training window of
:data:`dashboard.core.monitoring.MIN_DRIFT_TRAINING` seconds) and records them
(:func:`storage.alerts.record_alerts`, which never duplicates one). With a webhook
URL it then POSTs every undelivered alert as one JSON object, oldest first; an alert
is marked delivered on a 2xx answer. An alert that widens later (its stretch goes
on, its peak grows) is undelivered again: the webhook gets it once more, with the
same ``alert_id``, its new range and a later ``updated_at``. A failure (refused,
timeout, non-2xx, redirect) is logged and ends the deliveries of this pass; the rest
are retried on the next pass. Nothing here raises into the scheduler: a failing pass
is logged and the next one runs.

Deliveries never hold up ingestion: each POST has a total deadline (connect, send and
the whole answer, :data:`WEBHOOK_TIMEOUT`), a pass's deliveries another
(:data:`DELIVERY_DEADLINE`), and under the scheduler they run in a thread of their own
(:class:`Courier`), so a webhook that answers one byte at a time delays only itself.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import ipaddress
import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from estimator.drift import DEFAULT_K
from estimator.errors import MaceError
from mace.errors import UsageError

if TYPE_CHECKING:
    import duckdb

    from ingest.job import BatchSummary
    from storage.alerts import StoredAlert

WEBHOOK_TIMEOUT = 5.0
"""Seconds one POST may take in all (connect, send, the whole answer)."""
DELIVERY_DEADLINE = 15.0
"""Seconds the deliveries of one pass may take in all; the rest wait for the next pass."""
MAX_DELIVERIES_PER_PASS = 100
"""At most this many POSTs per pass, so that a backlog cannot stall ingestion."""
log = logging.getLogger("mace.alerts")


@dataclass(frozen=True)
class AlertSettings:
    """What the alert pass does: drift after ``k`` subintervals, POSTs to ``webhook``."""

    webhook: str | None = None
    k: int = DEFAULT_K


@dataclass
class PassResult:
    """What one alert pass did."""

    new: list[StoredAlert] = field(default_factory=list)
    delivered: int = 0
    errors: list[str] = field(default_factory=list)


def check_webhook(url: str) -> str:
    """The URL if it is an absolute http or https URL with a valid port and not a
    link-local address (cloud metadata services live there), else a UsageError naming
    it (its password hidden)."""
    parts = urlsplit(url)
    shown = safe_url(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"--webhook {shown!r}: expected an http:// or https:// URL with a host")
    try:
        parts.port  # noqa: B018 (a property that validates the port)
    except ValueError:
        raise UsageError(f"--webhook {shown!r}: the port must be 1 to 65535") from None
    if _link_local(parts.hostname):
        raise UsageError(f"--webhook {shown!r}: a link-local address is not a webhook")
    return url


def safe_url(url: str) -> str:
    """The URL with the password of a ``user:password@`` part replaced by ``***``, for
    messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()


def _link_local(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_link_local
    except ValueError:
        return False


def alert_json(alert: StoredAlert) -> dict[str, Any]:
    """The JSON object of an alert (what ``mace alerts --json`` prints and the webhook gets)."""
    return {
        "alert_id": alert.alert_id,
        "run": alert.run_id,
        "query": alert.query,
        "kind": alert.kind,
        "start_interval": alert.start,
        "end_interval": alert.end,
        "value": alert.value,
        "objective": alert.objective,
        "detail": alert.detail,
        "created_at": alert.created_at.isoformat(),
        "updated_at": alert.updated_at.isoformat(),
        "delivered": alert.delivered,
    }


def describe(alert: StoredAlert) -> str:
    """One line for the terminal or a log."""
    return describe_json(alert_json(alert))


def describe_json(alert: dict[str, Any]) -> str:
    """One line for an alert's JSON object (:func:`alert_json`, or a server's answer)."""
    who = f"query {alert['query']}" if alert["query"] else "system"
    where = (
        f"run {alert['run']}, {who}, subintervals {alert['start_interval']}-{alert['end_interval']}"
    )
    if alert["objective"] is None:
        return f"{alert['kind']}: {where}: {alert['detail']} (by up to {alert['value']:.3f} s)"
    return (
        f"{alert['kind']}: {where}: peak {alert['value']:.3f} s > objective "
        f"{alert['objective']:g} s"
    )


def evaluate_runs(
    con: duckdb.DuckDBPyConnection, run_ids: Iterable[str] | None, k: int = DEFAULT_K
) -> PassResult:
    """Raise and record the alerts of ``run_ids`` (None: every run) on a writable
    connection; a run that cannot be evaluated is reported in ``errors``, the others go on."""
    from dashboard.core.complete import complete_count
    from dashboard.core.data import load_run
    from dashboard.core.monitoring import run_alerts
    from estimator.alerts import DEFAULT_GAP
    from mace.complete import complete_alerts
    from storage import reads
    from storage.alerts import record_alerts
    from storage.db import transaction
    from storage.scenarios import objectives, training_window_of

    result = PassResult()
    ids = [r.run_id for r in reads.list_runs(con)] if run_ids is None else list(run_ids)
    for run_id in ids:
        try:
            run = load_run(con, run_id)
            if run.intervals == 0:
                continue
            window = training_window_of(con, run_id)
            alerts = run_alerts(run, objectives(con, run_id), training=window, k=k)
            alerts = complete_alerts(run, alerts, complete_count(run))
            with transaction(con, f"recording alerts of run '{run_id}'"):
                result.new += record_alerts(con, run_id, alerts, gap=DEFAULT_GAP)
        except MaceError as exc:
            result.errors.append(f"alerts of run '{run_id}': {exc}")
    return result


def post(url: str, document: dict[str, Any], timeout: float = WEBHOOK_TIMEOUT) -> None:
    """POST one JSON document; OSError (refused, non-2xx, redirect) unless 2xx, and
    TimeoutError when the whole exchange takes more than ``timeout`` seconds (a socket
    timeout alone bounds each read, not a server that answers one byte at a time).

    A ``user:password@`` part of the URL is sent as basic authentication. A host that
    resolves to a link-local address is refused."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    resolved = {info[4][0] for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)}
    if any(_link_local(str(address)) for address in resolved):
        raise OSError(f"{host} resolves to a link-local address")
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    connection = kind(host, port, timeout=timeout)
    headers = {"Content-Type": "application/json", "User-Agent": "mace-alerts"}
    if parts.username is not None:
        user_pass = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        headers["Authorization"] = "Basic " + base64.b64encode(user_pass.encode()).decode()
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    expired = threading.Event()

    def cut() -> None:  # wakes a read blocked on a trickling answer
        expired.set()
        if connection.sock is not None:
            with contextlib.suppress(OSError):
                connection.sock.shutdown(socket.SHUT_RDWR)

    watchdog = threading.Timer(timeout, cut)
    watchdog.daemon = True
    watchdog.start()
    try:
        connection.request("POST", target, json.dumps(document).encode("utf-8"), headers)
        status = connection.getresponse().status
    except (OSError, http.client.HTTPException) as exc:
        if expired.is_set():
            raise TimeoutError(f"timed out: no complete answer within {timeout:g} s") from None
        raise OSError(str(exc) or type(exc).__name__) from None
    finally:
        watchdog.cancel()
        connection.close()
    if not 200 <= status < 300:
        raise OSError(f"HTTP {status}")


def deliver(
    con: duckdb.DuckDBPyConnection,
    url: str,
    timeout: float = WEBHOOK_TIMEOUT,
    deadline: float = DELIVERY_DEADLINE,
) -> PassResult:
    """POST the undelivered alerts, oldest first, until one fails or ``deadline``
    seconds have passed; mark the sent ones."""
    from storage.alerts import list_alerts, mark_delivered

    result = PassResult()
    end = time.monotonic() + deadline
    for alert in list_alerts(con, undelivered=True, limit=MAX_DELIVERIES_PER_PASS):
        left = end - time.monotonic()
        if left <= 0:
            result.errors.append(
                f"webhook {safe_url(url)}: deliveries took {deadline:g} s; "
                "the rest are sent on the next pass"
            )
            break
        try:
            post(url, alert_json(alert), min(timeout, left))
        # refusals, HTTP errors and timeouts are OSError; a bad URL ValueError
        except (OSError, ValueError) as exc:
            result.errors.append(
                f"webhook {safe_url(url)}: alert {alert.alert_id} not delivered: {exc}"
            )
            break
        mark_delivered(con, [alert.alert_id])
        result.delivered += 1
    return result


def alert_pass(
    db: Path, run_ids: Iterable[str] | None, settings: AlertSettings, *, send: bool = True
) -> PassResult:
    """Evaluate the runs, then (with ``send``) deliver to the webhook if one is set; never
    raises a MaceError (a database problem is reported in ``errors``, the next pass
    retries)."""
    from storage.db import connect

    result = PassResult()
    try:
        con = connect(db)
        try:
            result = evaluate_runs(con, run_ids, settings.k)
            if settings.webhook and send:
                sent = deliver(con, settings.webhook)
                result.delivered, result.errors = sent.delivered, result.errors + sent.errors
        finally:
            con.close()
    except MaceError as exc:
        result.errors.append(f"alerts: {exc}")
    return result


def pass_lines(result: PassResult) -> list[str]:
    """One line per new alert, per delivery count and per failure (prefixed "warning:")."""
    lines = [f"alert {describe(a)}" for a in result.new]
    if result.delivered:
        lines.append(f"webhook: {result.delivered} alert(s) delivered")
    return lines + [f"warning: {e}" for e in result.errors]


class Courier:
    """Webhook deliveries in a thread of their own, one at a time: ``send()`` returns at
    once; while a delivery is still under way a new one is not started (the undelivered
    alerts wait for it or for the next pass). ``say`` gets the lines of each delivery."""

    def __init__(self, db: Path, url: str, say: Callable[[str], None]) -> None:
        self.db, self.url, self.say = db, url, say
        self.thread: threading.Thread | None = None

    def send(self) -> None:
        if self.thread is not None and self.thread.is_alive():
            return
        self.thread = threading.Thread(target=self._deliver, name="mace-webhook", daemon=True)
        self.thread.start()

    def _deliver(self) -> None:
        from storage.db import connect

        try:
            con = connect(self.db)
            try:
                result = deliver(con, self.url)
            finally:
                con.close()
        except MaceError as exc:
            result = PassResult(errors=[f"alerts: {exc}"])
        for line in pass_lines(result):
            self.say(line)


def scheduled_pass(
    db: Path, settings: AlertSettings, say: Callable[[str], None]
) -> Callable[[list[str]], None]:
    """An alert pass for a scheduler: evaluate the given runs now, say the new alerts,
    and hand the deliveries to a :class:`Courier`, so ingestion never waits for the
    webhook (a pass with no new data still retries the deliveries)."""
    courier = None if settings.webhook is None else Courier(db, settings.webhook, say)

    def run(run_ids: list[str]) -> None:
        for line in pass_lines(alert_pass(db, run_ids, settings, send=False)):
            say(line)
        if courier is not None:
            courier.send()

    return run


def _log(line: str) -> None:
    (log.warning if line.startswith("warning:") else log.info)("%s", line)


def after_batch(db: Path, settings: AlertSettings) -> Callable[[BatchSummary], None]:
    """The scheduler's ``on_batch`` hook: :func:`scheduled_pass` over the runs the batch
    touched, logged."""
    run = scheduled_pass(db, settings, _log)

    def hook(summary: BatchSummary) -> None:
        run(summary.runs)

    return hook
