"""The scenario's pinned baseline window and the scenario in the URL (issue 14; the rules
are in :mod:`dashboard.whatif_link`).

The window is pinned when a run's scenario starts (on the run's data so far) and stays
while live data arrives, so that Optimize and the applied placement are compared with
the same "current"; the line under the summary says which window it is, and a button
re-pins it to the latest data. The URL keeps the scenario and the window, and a page
opened from such a link takes them over.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

import dash_bootstrap_components as dbc
from dash import Input, Output, State, ctx, html, no_update

from dashboard import context, ids, whatif_link, whatif_view
from dashboard.urlquery import merged
from dashboard.whatif.common import MESSAGE, CallbackSet
from estimator.errors import MaceError
from estimator.whatif import ScenarioError

callbacks = CallbackSet()


def line() -> html.Div:
    """The baseline's window, with the button that re-pins it."""
    return html.Div(
        [
            html.Small(id=ids.WI_BASELINE_LABEL, className="text-muted"),
            dbc.Button(
                "Re-pin to the latest data",
                id=ids.WI_REPIN,
                size="sm",
                color="link",
                className="p-0 ms-2 align-baseline",
            ),
        ],
        className="mb-2",
    )


def _adopt(link: Any, data: Any, windows: Any) -> tuple[Any, Any, list[str]]:
    """The session stores with a link's scenario taken over (its run's edits and window),
    and what had to be left out."""
    if not isinstance(link, str):
        raise ScenarioError("the link's scenario cannot be read: it was left out")
    app = context.current()
    adopted = whatif_link.decode_link(link)
    run = app.runs.get(adopted.run_id)
    problems = []
    window = adopted.window or (0, run.intervals)
    if window[1] > run.intervals:
        problems.append("the link's baseline window ends after the run's data: it was left out")
        window = (0, run.intervals)
    inputs = whatif_view.inputs_for_run(app.engine, run, window)
    edits, left_out = whatif_link.adopt_edits(inputs, adopted.pairs)
    data = whatif_view.with_edits(data, adopted.run_id, edits)
    return data, whatif_link.with_window(windows, adopted.run_id, window), problems + left_out


@callbacks.callback(
    output={
        "windows": Output(ids.WI_BASELINE, "data"),
        "scenario": Output(ids.WI_SCENARIO, "data", allow_duplicate=True),
        **MESSAGE,
    },
    inputs={
        "link": Input(ids.WI_LINK, "data"),
        "run_id": Input(ids.RUN, "value"),
        "repin": Input(ids.WI_REPIN, "n_clicks"),
    },
    state={"data": State(ids.WI_SCENARIO, "data"), "windows": State(ids.WI_BASELINE, "data")},
    prevent_initial_call="initial_duplicate",
)
def pin(link: Any, run_id: str | None, repin: Any, data: Any, windows: Any) -> dict[str, Any]:
    """Take over a link's scenario when the page opens from one; pin the window of a
    run that has none yet on its data so far; re-pin on request."""
    trigger = ctx.triggered_id
    out: dict[str, Any] = {"windows": no_update, "scenario": no_update}
    problems: list[str] = []
    if trigger in (None, ids.WI_LINK) and link:
        try:
            data, windows, problems = _adopt(link, data, windows)
            out = {"windows": windows, "scenario": data}
        except MaceError as exc:
            problems = [str(exc)]
    if run_id and (trigger == ids.WI_REPIN or whatif_link.window_for(windows, run_id) is None):
        try:
            intervals = context.current().runs.get(run_id).intervals
        except MaceError:
            intervals = 0
        if intervals:
            out["windows"] = whatif_link.with_window(windows, run_id, (0, intervals))
    if problems:
        return {**out, "text": "; ".join(problems), "open": True}
    return {**out, "text": no_update, "open": no_update}


@callbacks.callback(
    Output(ids.WI_BASELINE_LABEL, "children"),
    Input(ids.WI_BASELINE, "data"),
    Input(ids.RUN, "value"),
    Input(ids.RUN_REFRESH, "n_intervals"),
)
def baseline_label(windows: Any, run_id: str | None, _: Any) -> str:
    """Which window the baseline uses, and whether the run has newer data."""
    window = whatif_link.window_for(windows, run_id)
    if not run_id or window is None:
        return ""
    try:
        run = context.current().runs.get(run_id)
    except MaceError:
        return ""
    return whatif_link.Baseline(*window, run.intervals, run.subinterval).label


@callbacks.callback(
    Output(ids.WI_URL_QUERY, "data"),
    Input(ids.WI_SCENARIO, "data"),
    Input(ids.WI_BASELINE, "data"),
    Input(ids.URL, "search"),
    State(ids.RUN, "value"),
    prevent_initial_call=True,
)
def url_query(data: Any, windows: Any, search: str | None, run_id: str | None) -> Any:
    """The query string with the run's scenario and window. While the URL still names
    another run (the top bar is changing it), wait: the URL's next change calls this
    again. (A page store in between: a callback writing the shell's URL straight from
    these inputs would fire on other pages too, where they do not exist.)"""
    named = parse_qs((search or "").lstrip("?")).get("run", [run_id])[0]
    if not run_id or named != run_id:
        return no_update
    window = whatif_link.window_for(windows, run_id)
    edits = whatif_view.edits_for(data, run_id)
    value = whatif_link.encode_link(run_id, window, edits) if window or edits else None
    query = merged(search, {"scenario": value})
    return query if query != (search or "") else no_update


@callbacks.callback(
    Output(ids.URL, "search", allow_duplicate=True),
    Input(ids.WI_URL_QUERY, "data"),
    prevent_initial_call=True,
)
def to_url(query: str | None) -> Any:
    """Write the query string into the URL (without reloading the page)."""
    return query if query is not None else no_update
