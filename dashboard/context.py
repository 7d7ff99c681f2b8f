"""The per-app state callbacks reach through the app itself (no module globals)."""

from __future__ import annotations

from dataclasses import dataclass, field

import dash
import flask

from dashboard.core.data import Database, RunCache
from estimator.auto import DEFAULT
from estimator.whatif import WhatIfEngine

CONFIG_KEY = "MACE_DASHBOARD"


@dataclass
class DashboardContext:
    database: Database
    runs: RunCache
    refresh_seconds: float = 5.0
    engine: WhatIfEngine = field(default_factory=WhatIfEngine)
    live_run: str | None = None  # the run a live simulator takes placement requests for
    flink_rest: str | None = None  # the Flink REST URL the What-if page may rescale a job at
    estimator: str = DEFAULT  # the top bar's estimator until the user or the URL picks one


def current() -> DashboardContext:
    """The context of the app serving the current request (or, in a background job's
    worker process, which has no request, of the app the worker was forked from)."""
    if flask.has_app_context():
        context = flask.current_app.config[CONFIG_KEY]
    else:
        context = dash.get_app().server.config[CONFIG_KEY]
    assert isinstance(context, DashboardContext)
    return context
