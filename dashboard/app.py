"""The Dash app factory: ``create_app(db_path)`` builds a multi-page app over one database."""

from __future__ import annotations

import base64
import functools
import hmac
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import dash
import dash_bootstrap_components as dbc
from dash import ALL, Input, Output, State, dcc, html, no_update
from dash.background_callback.managers import BaseBackgroundCallbackManager

from dashboard import context as app_context
from dashboard import figures, ids
from dashboard.api import register_api
from dashboard.context import CONFIG_KEY, DashboardContext
from dashboard.data import Database, RunCache
from dashboard.optimizer import create_manager
from dashboard.urlquery import merged
from estimator.kernels import warm_up
from estimator.pathaware import ESTIMATOR_LABELS

ASSETS = Path(__file__).resolve().parent / "assets"  # package data: ships with the wheel
PAGES = Path(__file__).resolve().parent / "pages"
MAX_REQUEST_BYTES = 2 * 1024 * 1024
SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}
"""Sent on every response: no MIME sniffing, no framing (clickjacking), no referrer."""
CSP_TEMPLATE = (
    "default-src 'self'; script-src 'self' 'unsafe-eval' {script_hashes}; "
    "style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; "
    "worker-src 'self' blob:; object-src 'none'; base-uri 'self'; form-action 'self'; "
    "frame-ancestors 'none'"
)
"""Scripts only from this server plus Dash's own inline scripts (by hash). Plotly.js
needs 'unsafe-eval' (without it a drag-zoom silently does nothing) and sets inline styles
at run time, so both stay allowed; everything else is same-origin only."""
CALLBACK_PATH = "/_dash-update-component"
log = logging.getLogger("mace.dashboard")


def create_app(
    db_path: str | Path,
    *,
    refresh_seconds: float = 5.0,
    background_manager: BaseBackgroundCallbackManager | None = None,
    credentials: tuple[str, str] | None = None,
    live_run: str | None = None,
) -> dash.Dash:
    """A Dash app reading (and storing scenarios and objectives in) ``db_path``.

    With ``credentials`` (user, password) every request needs HTTP basic authentication.

    Background callbacks (the optimizer) run through ``background_manager``, by
    default a fresh diskcache manager (see :mod:`dashboard.optimizer` for the choice).
    ``live_run`` names the run whose live simulator polls the placement requests (set
    by ``mace demo``): only then can the What-if page apply a placement to it.
    """
    # Compile (or load from numba's cache) the estimator's kernels here, before a
    # background job forks a worker from the threaded server: compiling in such a child
    # can crash it (a segmentation fault seen with a cold cache).
    warm_up()
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
        database, RunCache(database), refresh_seconds=refresh_seconds, live_run=live_run
    )
    app.server.config["MAX_CONTENT_LENGTH"] = MAX_REQUEST_BYTES
    figures.use_light_template()
    app.layout = _layout
    # The shell's own callback, registered on this app (a module-level dash.callback
    # would be taken by the first app created in the process only).
    app.callback(
        Output(ids.RUN, "options"),
        Output(ids.RUN, "value", allow_duplicate=True),
        Output(ids.MESSAGE, "children"),
        Output(ids.MESSAGE, "is_open"),
        Input(ids.RUN_REFRESH, "n_intervals"),
        State(ids.RUN, "options"),
        State(ids.RUN, "value"),
        prevent_initial_call=True,
    )(refresh_runs)
    app.callback(
        Output(ids.URL, "search"),
        Output(ids.RUN, "value"),
        Output(ids.ESTIMATOR, "value"),
        Output({"type": ids.NAV_LINK, "index": ALL}, "href"),
        Output({"type": ids.NAV_LINK, "index": ALL}, "active"),
        Input(ids.URL, "search"),
        Input(ids.URL, "pathname"),
        Input(ids.RUN, "value"),
        Input(ids.ESTIMATOR, "value"),
        State(ids.RUN, "options"),
        State({"type": ids.NAV_LINK, "index": ALL}, "id"),
    )(sync_url)
    register_api(app)
    _harden(app)
    if credentials is not None:
        _require_basic_auth(app, *credentials)
    return app


def _harden(app: dash.Dash) -> None:
    """Security headers on every response; callback requests whose shape does not match
    a registered callback get a 400 and one log line (not a 500 and a traceback)."""
    import flask

    server = app.server

    @server.after_request
    def add_headers(response: flask.Response) -> flask.Response:
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        response.headers.setdefault("Content-Security-Policy", content_security_policy(app))
        return response

    endpoint = next(
        rule.endpoint for rule in server.url_map.iter_rules() if rule.rule.endswith(CALLBACK_PATH)
    )
    dispatch: Callable[..., Any] = server.view_functions[endpoint]

    @functools.wraps(dispatch)
    def checked(*args: Any, **kwargs: Any) -> Any:
        body = flask.request.get_json(silent=True)
        problem = callback_request_problem(body, app.callback_map)
        if problem is not None:
            log.warning("rejected callback request from %s: %s", flask.request.remote_addr, problem)
            return flask.Response(f"bad callback request: {problem}\n", 400, mimetype="text/plain")
        return dispatch(*args, **kwargs)

    server.view_functions[endpoint] = checked


def content_security_policy(app: dash.Dash) -> str:
    """The CSP header for ``app``: computed per response because Dash adds its inline
    scripts (and their hashes) only once its pages and callbacks are registered."""
    return CSP_TEMPLATE.format(script_hashes=" ".join(app.csp_hashes()))


def _require_basic_auth(app: dash.Dash, user: str, password: str) -> None:
    """Every request must carry HTTP basic credentials equal to (user, password),
    compared in constant time; anything else gets a 401 asking for them."""
    import flask

    expected = base64.b64encode(f"{user}:{password}".encode()).decode()

    @app.server.before_request
    def authenticate() -> flask.Response | None:
        header = flask.request.headers.get("Authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() == "basic" and hmac.compare_digest(token.strip(), expected):
            return None
        return flask.Response(
            "authentication required\n",
            401,
            {"WWW-Authenticate": 'Basic realm="mace", charset="UTF-8"'},
            mimetype="text/plain",
        )


def _is_dependency(entry: Any) -> bool:
    """An input, state or output entry: {id, property, ...} or a list of them
    (pattern-matching ALL)."""
    if isinstance(entry, list):
        return all(_is_dependency(e) and not isinstance(e, list) for e in entry)
    return (
        isinstance(entry, Mapping)
        and isinstance(entry.get("id"), str | Mapping)
        and isinstance(entry.get("property"), str)
    )


def callback_request_problem(body: Any, callbacks: Mapping[str, Any]) -> str | None:
    """Why a ``/_dash-update-component`` body cannot be a call of one of ``callbacks``
    (None if its shape fits: known output, one entry per declared input and state)."""
    if not isinstance(body, Mapping):
        return "the body is not a JSON object"
    output = body.get("output")
    if not isinstance(output, str) or output not in callbacks:
        return "unknown callback output"
    spec = callbacks[output]
    for key in ("inputs", "state"):
        entries = body.get(key, [])
        if not isinstance(entries, list) or len(entries) != len(spec.get(key, [])):
            return f"'{key}' does not match the callback"
        if not all(_is_dependency(e) for e in entries):
            return f"malformed '{key}' entry"
    outputs = body.get("outputs", [])
    if not (
        _is_dependency(outputs) or (isinstance(outputs, list) and all(map(_is_dependency, outputs)))
    ):
        return "malformed 'outputs'"
    changed = body.get("changedPropIds", [])
    if not isinstance(changed, list) or not all(isinstance(c, str) for c in changed):
        return "malformed 'changedPropIds'"
    return None


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


def sync_url(
    search: str | None,
    path: str | None,
    run_id: str | None,
    estimator: str | None,
    runs: list[dict[str, str]] | None,
    links: list[dict[str, str]],
) -> tuple[Any, Any, Any, list[str], list[bool]]:
    """Keep the run and the estimator in the URL (``?run=..&estimator=..``) so that a
    copied link reproduces the view: a URL that names them sets the top bar on load, a
    choice in the top bar rewrites the URL, and the page links carry the query along
    (with the pages' own parameters, e.g. the Overview's time range)."""
    from urllib.parse import parse_qs

    asked = parse_qs((search or "").lstrip("?"))
    known = {o["value"] for o in runs or []}
    new_run: Any = no_update
    new_estimator: Any = no_update
    if dash.ctx.triggered_id in (None, ids.URL):  # a link was opened: it names the view
        wanted_run = asked.get("run", [None])[0]
        wanted_estimator = asked.get("estimator", [None])[0]
        if wanted_run in known and wanted_run != run_id:
            run_id = new_run = wanted_run
        if wanted_estimator in ESTIMATOR_LABELS and wanted_estimator != estimator:
            estimator = new_estimator = wanted_estimator
    query = merged(search, {"run": run_id or None, "estimator": estimator or None})
    hrefs = [f"{link['index']}{query}" for link in links]
    active = [link["index"] == (path or "/") for link in links]
    return (
        query if query != (search or "") else no_update,
        new_run,
        new_estimator,
        hrefs,
        active,
    )


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
                        dbc.NavLink(
                            page["name"],
                            id={"type": ids.NAV_LINK, "index": page["relative_path"]},
                            href=page["relative_path"],
                            active=False,
                        )
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
            dcc.Location(id=ids.URL, refresh=False),
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
