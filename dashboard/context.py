"""The per-app state callbacks reach through Flask's ``current_app`` (no globals)."""

from __future__ import annotations

from dataclasses import dataclass, field

import flask

from dashboard.data import Database, RunCache
from dashboard.optimizer import OptimizerJobs
from dashboard.scenario import WhatIfEngine

CONFIG_KEY = "MACE_DASHBOARD"


@dataclass
class DashboardContext:
    database: Database
    runs: RunCache
    refresh_seconds: float = 5.0
    engine: WhatIfEngine = field(default_factory=WhatIfEngine)
    jobs: OptimizerJobs = field(default_factory=OptimizerJobs)


def current() -> DashboardContext:
    """The context of the app serving the current request."""
    context = flask.current_app.config[CONFIG_KEY]
    assert isinstance(context, DashboardContext)
    return context
