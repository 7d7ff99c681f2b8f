"""The Dash app factory: ``create_app(db_path)`` builds a multi-page app over one database."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import dash

from dashboard.context import CONFIG_KEY, DashboardContext
from dashboard.core.data import Database, RunCache
from dashboard.health.page import PAGE as HEALTH
from dashboard.help.page import PAGE as HELP
from dashboard.nodes.page import PAGE as NODES
from dashboard.overview.page import PAGE as OVERVIEW
from dashboard.reports.page import PAGE as REPORTS
from dashboard.shell import layout, theme
from dashboard.shell.api import register_api
from dashboard.shell.jobs import create_manager
from dashboard.shell.security import (
    MAX_REQUEST_BYTES,
    allowed_hosts,
    harden,
    require_basic_auth,
    require_known_host,
)
from dashboard.whatif.page import PAGE as WHATIF
from estimator.auto import DEFAULT
from estimator.kernels import warm_up

ASSETS = Path(__file__).resolve().parent / "assets"  # package data: ships with the wheel
PAGES = (OVERVIEW, NODES, WHATIF, REPORTS, HEALTH, HELP)
"""The pages of the top bar (each orders itself); the shell's callbacks come with them."""


def create_app(
    db_path: str | Path,
    *,
    refresh_seconds: float = 5.0,
    jobs: str | Path | None = None,
    credentials: tuple[str, str] | None = None,
    live_run: str | None = None,
    flink_rest: str | None = None,
    bind: tuple[str, int] | None = None,
    extra_hosts: Sequence[str] = (),
    estimator: str = DEFAULT,
) -> dash.Dash:
    """A Dash app reading (and storing scenarios and objectives in) ``db_path``.

    With ``credentials`` (user, password) every request needs HTTP basic authentication.

    Background callbacks (the searches) keep their state in the folder ``jobs`` (by
    default a fresh temporary one; see :func:`dashboard.shell.jobs.create_manager`).
    ``live_run`` names the run whose live simulator polls the placement requests (set
    by ``mace demo``): only then can the What-if page apply a placement to it.
    ``flink_rest`` (a Flink REST URL): the What-if page may send a parallelism change to
    the job of a Flink run there, when the user confirms it; without it, it shows the call.

    With ``bind`` (host, port: where the server listens) a request must name in its
    ``Host`` header the bind host, localhost, 127.0.0.1 or [::1] on that port, or one of
    ``extra_hosts`` (``mace serve --allowed-host``); anything else gets a 400.

    ``estimator`` is the top bar's estimator until the user or the URL picks one: a
    registered estimator or ``auto``; by default :data:`estimator.auto.DEFAULT`, the
    estimator ``mace report`` uses when none is chosen.
    """
    # Compile (or load from numba's cache) the estimator's kernels here, before a
    # background job forks a worker from the threaded server: compiling in such a child
    # can crash it (a segmentation fault seen with a cold cache).
    warm_up()
    database = Database(db_path)
    app = dash.Dash(
        __name__,
        use_pages=True,
        pages_folder="",  # the pages are registered below, per app (see dashboard)
        background_callback_manager=create_manager(jobs),
        assets_folder=str(ASSETS),
        suppress_callback_exceptions=True,
        title="mace — latency",
    )
    app.server.config[CONFIG_KEY] = DashboardContext(
        database,
        RunCache(database),
        refresh_seconds=refresh_seconds,
        live_run=live_run,
        flink_rest=flink_rest,
        estimator=estimator,
    )
    app.server.config["MAX_CONTENT_LENGTH"] = MAX_REQUEST_BYTES
    theme.use_light_template()
    for page in PAGES:
        page.register(app)
    layout.callbacks.register(app)
    app.layout = layout.page_shell
    register_api(app)
    harden(app)
    if bind is not None:
        require_known_host(app, allowed_hosts(*bind, extra_hosts))
    if credentials is not None:
        require_basic_auth(app, *credentials)
    return app
