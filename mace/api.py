"""The routes ``mace explain --url`` and ``mace alerts --url`` ask, on the server of
``mace serve`` and ``mace demo``; they answer what the commands print with ``--json``
from ``--db`` (``mace report --url`` asks the dashboard's own ``/api/report``)."""

from __future__ import annotations

from typing import Any

import flask

from dashboard.context import CONFIG_KEY, DashboardContext
from dashboard.core.report import choose_run
from estimator.errors import MaceError
from mace.remote import ALERTS_PATH, EXPLAIN_PATH


def register_cli_api(server: flask.Flask) -> None:
    """Add the routes to the dashboard's Flask ``server``."""
    server.add_url_rule(EXPLAIN_PATH, "mace_explain", _explain, methods=["GET"])
    server.add_url_rule(ALERTS_PATH, "mace_alerts", _alerts, methods=["GET"])


def _explain() -> flask.Response:
    """``?run=ID&interval=P&estimator=NAME``, every parameter optional."""
    from mace.explain_command import explain_document

    context: DashboardContext = flask.current_app.config[CONFIG_KEY]
    args = flask.request.args
    interval: int | None = None
    if "interval" in args:
        try:
            interval = int(args["interval"])
        except ValueError:
            return _error(400, f"interval must be a whole number, got {args['interval']!r}")
    try:
        run_id = choose_run([r.run_id for r in context.runs.run_ids()], args.get("run"))
        document = explain_document(
            context.runs.get(run_id), interval, args.get("estimator", "mace")
        )
    except MaceError as exc:
        return _error(400, str(exc))
    return flask.jsonify(document)


def _alerts() -> flask.Response:
    """``?run=ID`` (default: every run): the stored alerts, oldest first."""
    from mace.alerting import alert_json
    from storage import reads
    from storage.alerts import list_alerts

    context: DashboardContext = flask.current_app.config[CONFIG_KEY]
    run_id = flask.request.args.get("run")
    try:
        with context.database.cursor() as cur:
            if run_id is not None:
                reads.get_run(cur, run_id)  # an unknown run is an error, not "no alerts"
            documents: list[dict[str, Any]] = [alert_json(a) for a in list_alerts(cur, run_id)]
    except MaceError as exc:
        return _error(404, str(exc))
    return flask.jsonify(documents)


def _error(status: int, message: str) -> flask.Response:
    response = flask.jsonify({"error": message})
    response.status_code = status
    return response
