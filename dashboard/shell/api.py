"""A small JSON API beside the pages. ``GET /api/report`` answers what ``mace report
--json`` prints (over the complete subintervals), so reports keep working while this
server holds the database (DuckDB lets one process open a file that another one writes)."""

from __future__ import annotations

import math

import dash
import flask

from dashboard.context import CONFIG_KEY, DashboardContext
from dashboard.core.complete import complete_report
from dashboard.core.report import REPORT_PATH, choose_run
from estimator.auto import AUTO, DEFAULT
from estimator.errors import MaceError
from estimator.pathaware import ESTIMATORS
from estimator.runs import DEFAULT_TRAINING_SHARE
from storage.scenarios import objectives


def register_api(app: dash.Dash) -> None:
    """Add the API routes to ``app``'s server."""
    app.server.add_url_rule(REPORT_PATH, "mace_report", _report, methods=["GET"])


def _report() -> flask.Response:
    """``?run=ID&estimator=NAME&training_share=0.1``, every parameter optional (NAME a
    registered estimator or ``auto``, the default: the report says which it used and why)."""
    context: DashboardContext = flask.current_app.config[CONFIG_KEY]
    args = flask.request.args
    estimator = args.get("estimator", DEFAULT)
    if estimator != AUTO and estimator not in ESTIMATORS:
        known = ", ".join([AUTO, *sorted(ESTIMATORS)])
        return _error(400, f"estimator must be one of {known}")
    try:
        share = float(args.get("training_share", DEFAULT_TRAINING_SHARE))
    except ValueError:
        share = math.nan
    if not 0 < share <= 1:
        return _error(400, "training_share must be a number in (0, 1]")
    try:
        run_id = choose_run([r.run_id for r in context.runs.run_ids()], args.get("run"))
        run = context.runs.get(run_id)
        with context.database.cursor() as cur:
            goals = objectives(cur, run_id)
    except MaceError as exc:
        return _error(404, str(exc))
    return flask.jsonify(complete_report(run, goals, share, estimator))


def _error(status: int, message: str) -> flask.Response:
    response = flask.jsonify({"error": message})
    response.status_code = status
    return response
