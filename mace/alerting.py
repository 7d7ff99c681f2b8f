"""The alert pass after each ingestion pass (``mace ingest``, ``mace serve --landing``).

For each run that received data, the pass raises the run's alerts
(:func:`dashboard.core.monitoring.run_alerts`: objectives breached, measured and
predicted, and drift; the predictive model is the run's refit one if a training
window is stored, :func:`storage.scenarios.set_training_window`) over its complete
subintervals (:mod:`mace.complete`: a measured breach waits for them; drift waits for a
default training window of ``MIN_DRIFT_TRAINING`` seconds) and records them
(:func:`storage.alerts.record_alerts`, which never duplicates one). With a webhook
URL it then POSTs every undelivered alert as one JSON object, oldest first; an alert
is marked delivered on a 2xx answer. An alert that widens later (its stretch goes
on, its peak grows) is undelivered again: the webhook gets it once more, with the
same ``alert_id``, its new range and a later ``updated_at``. A failure (refused,
timeout, non-2xx, redirect) is logged and ends the deliveries of this pass; the rest
are retried on the next pass. Nothing here raises into the scheduler: a failing pass
is logged and the next one runs.
"""

from __future__ import annotations

import http.client
import json
import logging
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from estimator.drift import DEFAULT_K
from estimator.errors import MaceError
from mace.errors import UsageError

if TYPE_CHECKING:
    import duckdb

    from ingest.job import BatchSummary
    from storage.alerts import StoredAlert

WEBHOOK_TIMEOUT = 5.0
"""Seconds to wait for the webhook to answer one POST."""
MAX_DELIVERIES_PER_PASS = 100
"""At most this many POSTs per pass, so that a backlog cannot stall ingestion."""
MIN_DRIFT_TRAINING = 60.0
"""Seconds of training before the alert pass raises drift (with the default window, the
run's first 10%: from 600 s of run on). In a 600 s ``mace demo``, the passes 140 to 280 s
into the run fitted the model on its first 14 to 28 s of bursty arrivals, and the measured
latency stayed below the predicted band for minutes (two drift alerts). In a 150 s demo
fitted on 15 s, a source operator's cost came out 9 % high and the predicted backlog of a
25 s burst 20 % high. Fitted on the
first 60 s, the same run has no drift. (Chosen from that run: not an out-of-sample
figure.)"""

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
    """The URL if it is an absolute http or https URL, else a UsageError naming it."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"--webhook {url!r}: expected an http:// or https:// URL with a host")
    return url


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


def fitted_on_enough(intervals: int, subinterval: float) -> bool:
    """Does the default training window (the run's first share) hold at least
    ``MIN_DRIFT_TRAINING`` seconds? A model fitted on less is not checked for drift."""
    from estimator.fitting import training_window
    from estimator.runs import DEFAULT_TRAINING_SHARE

    start, stop = training_window(intervals, DEFAULT_TRAINING_SHARE)
    return (stop - start) * subinterval >= MIN_DRIFT_TRAINING


def evaluate_runs(
    con: duckdb.DuckDBPyConnection, run_ids: Iterable[str] | None, k: int = DEFAULT_K
) -> PassResult:
    """Raise and record the alerts of ``run_ids`` (None: every run) on a writable
    connection; a run that cannot be evaluated is reported in ``errors``, the others go on."""
    from dashboard.core.data import load_run
    from dashboard.core.monitoring import run_alerts
    from estimator.alerts import DEFAULT_GAP, DRIFT
    from mace.complete import complete_alerts, complete_count
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
            if window is None and not fitted_on_enough(run.intervals, run.subinterval):
                alerts = [a for a in alerts if a.kind != DRIFT]
            with transaction(con, f"recording alerts of run '{run_id}'"):
                result.new += record_alerts(con, run_id, alerts, gap=DEFAULT_GAP)
        except MaceError as exc:
            result.errors.append(f"alerts of run '{run_id}': {exc}")
    return result


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is a failure: the alert goes to the configured URL or nowhere."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def post(url: str, document: dict[str, Any], timeout: float = WEBHOOK_TIMEOUT) -> None:
    """POST one JSON document; OSError (URLError, HTTPError, timeout) unless 2xx."""
    request = urllib.request.Request(
        url,
        data=json.dumps(document).encode("utf-8"),
        headers={"Content-Type": "application/json", "User-Agent": "mace-alerts"},
        method="POST",
    )
    with _OPENER.open(request, timeout=timeout) as response:
        if not 200 <= response.status < 300:
            raise OSError(f"HTTP {response.status}")


def deliver(
    con: duckdb.DuckDBPyConnection, url: str, timeout: float = WEBHOOK_TIMEOUT
) -> PassResult:
    """POST the undelivered alerts, oldest first, until one fails; mark the sent ones."""
    from storage.alerts import list_alerts, mark_delivered

    result = PassResult()
    for alert in list_alerts(con, undelivered=True, limit=MAX_DELIVERIES_PER_PASS):
        try:
            post(url, alert_json(alert), timeout)
        # URLError, HTTPError and timeouts are OSError; a garbled answer HTTPException
        except (OSError, http.client.HTTPException, ValueError) as exc:
            result.errors.append(f"webhook {url}: alert {alert.alert_id} not delivered: {exc}")
            break
        mark_delivered(con, [alert.alert_id])
        result.delivered += 1
    return result


def alert_pass(db: Path, run_ids: Iterable[str] | None, settings: AlertSettings) -> PassResult:
    """Evaluate the runs, then deliver to the webhook if one is set; never raises a
    MaceError (a database problem is reported in ``errors``, the next pass retries)."""
    from storage.db import connect

    result = PassResult()
    try:
        con = connect(db)
        try:
            result = evaluate_runs(con, run_ids, settings.k)
            if settings.webhook:
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


def after_batch(db: Path, settings: AlertSettings) -> Callable[[BatchSummary], None]:
    """The scheduler's ``on_batch`` hook: an alert pass over the runs the batch touched,
    logged (a pass with no new data still retries the webhook deliveries)."""

    def hook(summary: BatchSummary) -> None:
        for line in pass_lines(alert_pass(db, summary.runs, settings)):
            (log.warning if line.startswith("warning:") else log.info)("%s", line)

    return hook
