"""The shell every page shares: the top bar (pages, run and estimator pickers, the time
picker), the URL and the run list refresh."""

from __future__ import annotations

from typing import Any

import dash
import dash_bootstrap_components as dbc
from dash import ALL, Input, Output, State, dcc, html, no_update

from dashboard import context as app_context
from dashboard.context import CONFIG_KEY, DashboardContext
from dashboard.shell import ids, timerange
from dashboard.shell.urlquery import merged
from estimator.auto import AUTO
from estimator.pathaware import ESTIMATOR_LABELS
from storage import reads

callbacks = timerange.callbacks
"""The shell's callbacks (the time picker's among them), given to each app at once."""

PICKED = {AUTO: "auto", **ESTIMATOR_LABELS}
"""The top bar's estimators: ``auto`` (resolved per run by each page) and the registered ones."""


def _run_options(context: DashboardContext) -> tuple[list[dict[str, str]], str | None, str]:
    try:
        runs = context.runs.run_ids()
    except Exception as exc:  # the shell must render even if the database is unreadable
        return [], None, f"cannot read the database: {exc}"
    options = [{"label": f"{r.run_id} ({r.name})", "value": r.run_id} for r in runs]
    if not runs:
        return [], None, "no runs in the database yet: waiting for ingestion"
    # a live run starts latest; a run too long to read is chosen only when no other is
    readable = [r for r in runs if not reads.too_long(r)] or runs
    newest = max(readable, key=lambda r: (r.origin, r.run_id))
    return options, newest.run_id, ""


@callbacks.callback(
    Output(ids.RUN, "options"),
    Output(ids.RUN, "value", allow_duplicate=True),
    Output(ids.MESSAGE, "children"),
    Output(ids.MESSAGE, "is_open"),
    Input(ids.RUN_REFRESH, "n_intervals"),
    State(ids.RUN, "options"),
    State(ids.RUN, "value"),
    prevent_initial_call=True,
)
def refresh_runs(
    _: int, shown: list[dict[str, str]] | None, chosen: str | None
) -> tuple[Any, Any, str, bool]:
    """New runs appear within one refresh; the newest is selected while none is chosen."""
    options, newest, message = _run_options(app_context.current())
    if options == (shown or []):
        return no_update, no_update, message, bool(message)
    known = {o["value"] for o in options}
    return options, chosen if chosen in known else newest, message, bool(message)


@callbacks.callback(
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
)
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
    (with the other parameters, e.g. the shared time range)."""
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
        if wanted_estimator in PICKED and wanted_estimator != estimator:
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


def page_shell(**_: Any) -> html.Div:
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
                            for name, label in PICKED.items()
                        ],
                        value=context.estimator,
                        clearable=False,
                        persistence=True,
                    ),
                    title="auto: the most accurate estimate the run's size allows "
                    "(per-origin, else burst-aware, else Mace; the Overview says which and "
                    "why). Mace: the paper's estimate, a proven lower bound. Path-aware: "
                    "adds up backlogs along each machine path (closer on multi-node runs, "
                    "may overestimate).",
                    style={"minWidth": "200px"},
                ),
                timerange.controls(),
            ],
            fluid=True,
            style={"flexWrap": "wrap"},  # the time picker on a row of its own
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
