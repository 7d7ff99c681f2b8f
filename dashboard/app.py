"""The Dash app factory: ``create_app(db_path)`` builds a multi-page app over one database."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dash
import dash_bootstrap_components as dbc
from dash import Input, Output, State, dcc, html, no_update
from dash.background_callback.managers import BaseBackgroundCallbackManager

from dashboard import context as app_context
from dashboard import ids
from dashboard.context import CONFIG_KEY, DashboardContext
from dashboard.data import Database, RunCache
from dashboard.optimizer import create_manager
from estimator.pathaware import ESTIMATOR_LABELS

ASSETS = Path(__file__).resolve().parent / "assets"  # package data: ships with the wheel
PAGES = Path(__file__).resolve().parent / "pages"
MAX_REQUEST_BYTES = 2 * 1024 * 1024


def create_app(
    db_path: str | Path,
    *,
    refresh_seconds: float = 5.0,
    background_manager: BaseBackgroundCallbackManager | None = None,
) -> dash.Dash:
    """A Dash app reading (and storing scenarios and objectives in) ``db_path``.

    Background callbacks (the optimizer) run through ``background_manager``, by
    default a fresh diskcache manager (see :mod:`dashboard.optimizer` for the choice).
    """
    database = Database(db_path)
    app = dash.Dash(
        __name__,
        use_pages=True,
        background_callback_manager=background_manager or create_manager(),
        pages_folder=str(PAGES),
        assets_folder=str(ASSETS),
        suppress_callback_exceptions=True,
        title="mace — latency",
    )
    app.server.config[CONFIG_KEY] = DashboardContext(
        database, RunCache(database), refresh_seconds=refresh_seconds
    )
    app.server.config["MAX_CONTENT_LENGTH"] = MAX_REQUEST_BYTES
    app.layout = _layout
    # The shell's own callback, registered on this app (a module-level dash.callback
    # would be taken by the first app created in the process only).
    app.callback(
        Output(ids.RUN, "options"),
        Output(ids.RUN, "value"),
        Output(ids.MESSAGE, "children"),
        Output(ids.MESSAGE, "is_open"),
        Input(ids.RUN_REFRESH, "n_intervals"),
        State(ids.RUN, "options"),
        State(ids.RUN, "value"),
        prevent_initial_call=True,
    )(refresh_runs)
    return app


def _run_options(context: DashboardContext) -> tuple[list[dict[str, str]], str | None, str]:
    try:
        runs = context.runs.run_ids()
    except Exception as exc:  # the shell must render even if the database is unreadable
        return [], None, f"cannot read the database: {exc}"
    options = [{"label": f"{r.run_id} ({r.name})", "value": r.run_id} for r in runs]
    if not runs:
        return [], None, "no runs in the database yet: waiting for ingestion"
    newest = max(runs, key=lambda r: (r.origin, r.run_id))  # a live run starts latest
    return options, newest.run_id, ""


def refresh_runs(
    _: int, shown: list[dict[str, str]] | None, chosen: str | None
) -> tuple[Any, Any, str, bool]:
    """New runs appear within one refresh; the newest is selected while none is chosen."""
    options, newest, message = _run_options(app_context.current())
    if options == (shown or []):
        return no_update, no_update, message, bool(message)
    known = {o["value"] for o in options}
    return options, chosen if chosen in known else newest, message, bool(message)


def _layout(**_: Any) -> html.Div:
    import flask

    context = flask.current_app.config[CONFIG_KEY]
    options, value, message = _run_options(context)
    refresh = dcc.Interval(id=ids.RUN_REFRESH, interval=int(context.refresh_seconds * 1000))
    nav = dbc.Navbar(
        dbc.Container(
            [
                dbc.NavbarBrand("mace", href="/"),
                dbc.Nav(
                    [
                        dbc.NavLink(page["name"], href=page["relative_path"], active="exact")
                        for page in dash.page_registry.values()
                    ],
                    pills=True,
                ),
                html.Div(
                    dcc.Dropdown(
                        id=ids.RUN,
                        options=options,
                        value=value,
                        clearable=False,
                        placeholder="run",
                        persistence=True,
                    ),
                    style={"minWidth": "260px"},
                ),
                html.Div(
                    dcc.Dropdown(
                        id=ids.ESTIMATOR,
                        options=[
                            {"label": f"estimator: {label}", "value": name}
                            for name, label in ESTIMATOR_LABELS.items()
                        ],
                        value="mace",
                        clearable=False,
                        persistence=True,
                    ),
                    title="Mace: the paper's estimate, a proven lower bound. Path-aware: "
                    "adds up backlogs along each machine path (closer on multi-node runs, "
                    "may overestimate).",
                    style={"minWidth": "200px"},
                ),
            ],
            fluid=True,
        ),
        color="light",
        className="mb-3 no-print",
    )
    return html.Div(
        [
            refresh,
            nav,
            dbc.Container(
                [
                    dbc.Alert(message, id=ids.MESSAGE, color="warning", is_open=bool(message)),
                    dash.page_container,
                ],
                fluid=True,
            ),
        ]
    )
