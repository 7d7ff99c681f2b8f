"""The scenario's pinned baseline window and the scenario in the URL (the rules are
in :mod:`dashboard.whatif.link`).

The window is pinned when a run's scenario starts (on the run's data so far) and stays
while live data arrives, so that Optimize and the applied placement are compared with
the same "current"; the line under the summary says which window it is, and a button
re-pins it to the latest data. The URL keeps the scenario and the window, and a page
opened from such a link takes them over.

:func:`settle` is that rule. The scenario view (:func:`dashboard.whatif.editor.show`)
applies it, stores the result and draws it in one response; :func:`url_query` applies
it too and writes the result into the URL meanwhile (nothing waits for the view).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

import dash_bootstrap_components as dbc
from dash import Input, Output, State, ctx, html, no_update

from dashboard import context
from dashboard.core import data as core_data
from dashboard.core.data import RunData
from dashboard.core.timeaxis import Clock
from dashboard.shell import ids as shell_ids
from dashboard.shell.callbacks import Callbacks, answers, chosen_run
from dashboard.shell.urlquery import merged
from dashboard.whatif import ids, scenario
from dashboard.whatif import link as whatif_link
from estimator.errors import MaceError
from estimator.whatif import ScenarioError

callbacks = Callbacks()


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
    inputs = core_data.inputs_for_run(app.engine, run, window)
    edits, left_out = whatif_link.adopt_edits(inputs, adopted.pairs)
    data = scenario.with_edits(data, adopted.run_id, edits)
    return data, whatif_link.with_window(windows, adopted.run_id, window), problems + left_out


@dataclass(frozen=True)
class Settled:
    """The session stores once a link is taken over and the run's window pinned
    (``changed``: they differ from the stores given), and what was left out."""

    data: Any
    windows: Any
    changed: bool
    problems: list[str]


def settle(link: Any, repin: bool, run: RunData | None, data: Any, windows: Any) -> Settled:
    """Take over ``link`` (a link's scenario the page was opened from and has not taken
    over yet); pin the window of a run that has none yet on its data so far; re-pin on
    request. A rule on the run's data: the scenario view draws and stores its result,
    and :func:`url_query` writes the same into the URL at the same time."""
    changed = False
    problems: list[str] = []
    if link:
        try:
            data, windows, problems = _adopt(link, data, windows)
            changed = True
        except MaceError as exc:
            problems = [str(exc)]
    if run is not None and run.intervals:
        run_id = run.info.run_id
        if repin or whatif_link.window_for(windows, run_id) is None:
            pinned = whatif_link.with_window(windows, run_id, (0, run.intervals))
            changed = changed or pinned != windows
            windows = pinned
    return Settled(data, windows, changed, problems)


def repinned() -> bool:
    """Whether the re-pin button is among the callback's triggers."""
    return f"{ids.WI_REPIN}.n_clicks" in ctx.triggered_prop_ids


def label(windows: Any, run: RunData, axis: Clock | None = None) -> str:
    """Which window the baseline uses, and whether the run has newer data (on the
    shared clock ``axis``)."""
    window = whatif_link.window_for(windows, run.info.run_id)
    if window is None:
        return ""
    return whatif_link.Baseline(*window, run.intervals, run.subinterval).text(axis)


@callbacks.callback(
    Output(ids.WI_BASELINE_LABEL, "children", allow_duplicate=True),
    Input(shell_ids.RUN_REFRESH, "n_intervals"),
    State(ids.WI_BASELINE, "data"),
    State(shell_ids.RUN, "value"),
    State(shell_ids.CLOCK, "value"),
    State(shell_ids.ZONE, "data"),
    prevent_initial_call=True,
)
@answers(lambda _: "")
def baseline_label(
    _: Any, windows: Any, run_id: str | None, clock: str | None, zone: str | None
) -> str:
    """The label again at each refresh, as new data arrives (the scenario view draws it
    with the scenario)."""
    run = chosen_run(run_id)
    return label(windows, run, Clock.of(run.info.origin, clock, zone))


def query(search: str | None, run_id: str | None, data: Any, windows: Any) -> Any:
    """The query string with the run's scenario and window (no_update: unchanged, or
    the URL still names another run while the top bar is changing it: the URL's next
    change asks again)."""
    named = parse_qs((search or "").lstrip("?")).get("run", [run_id])[0]
    if not run_id or named != run_id:
        return no_update
    window = whatif_link.window_for(windows, run_id)
    edits = scenario.edits_for(data, run_id)
    value = whatif_link.encode_link(run_id, window, edits) if window or edits else None
    out = merged(search, {"scenario": value})
    return out if out != (search or "") else no_update


@callbacks.callback(
    Output(ids.WI_URL_QUERY, "data"),
    Input(shell_ids.RUN, "value"),
    Input(ids.WI_REPIN, "n_clicks"),
    State(shell_ids.URL, "search"),
    State(ids.WI_SCENARIO, "data"),
    State(ids.WI_BASELINE, "data"),
    State(ids.WI_LINK, "data"),
)
@answers(lambda _: no_update)
def url_query(
    run_id: str | None, repin: Any, search: str | None, data: Any, windows: Any, link: Any
) -> Any:
    """The scenario and its window into the URL when the page opens, when the top bar
    switches the run (after the shell has put the run into the URL) and when the window
    is re-pinned: the stores as the scenario view settles them (:func:`settle`, the same
    rule), written at once rather than after the view is drawn; an edit writes its own.
    (A page store in between: a callback writing the shell's URL from the top bar's
    inputs would fire on other pages too.)"""
    settled = settle(link, repinned(), chosen_run(run_id), data, windows)
    return query(search, run_id, settled.data, settled.windows)


# The query string into the URL (without reloading the page), in the browser: one round
# trip less before the shell's links follow it.
callbacks.clientside_callback(
    "function(query) { return query == null ? window.dash_clientside.no_update : query; }",
    Output(shell_ids.URL, "search", allow_duplicate=True),
    Input(ids.WI_URL_QUERY, "data"),
    prevent_initial_call=True,
)
