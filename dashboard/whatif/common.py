"""What the What-if tabs share: callback registration per app, form rows, tables, the
page's message and note outputs, and the run's baseline and scenario."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import dash
import dash_bootstrap_components as dbc
from dash import Output, dcc, html
from dash.dash_table.DataTable import DataTable

from dashboard import context, ids, planning_view, whatif_view
from estimator.whatif import RunInputs, ScenarioError


class CallbackSet:
    """Callbacks declared at import and registered with ``dash.callback`` by the page.

    Dash Pages executes a page module anew for every app it builds (tests build many),
    and ``dash.callback`` hands its callbacks to the next app created. A tab module is
    imported once per process, so it declares its callbacks here and the page module,
    run once per app, calls :meth:`register`: every app gets every callback once.
    """

    def __init__(self) -> None:
        self._declared: list[tuple[tuple[Any, ...], dict[str, Any], Callable[..., Any]]] = []

    def callback(self, *args: Any, **kwargs: Any) -> Callable[[Callable[..., Any]], Any]:
        """Like ``dash.callback``; the function is returned unchanged (testable as is)."""

        def declare(function: Callable[..., Any]) -> Callable[..., Any]:
            self._declared.append((args, kwargs, function))
            return function

        return declare

    def register(self) -> None:
        """Give the declared callbacks to the app being built."""
        for args, kwargs, function in self._declared:
            dash.callback(*args, **kwargs)(function)


TAB_EDITOR, TAB_ADMIT, TAB_PROVISION, TAB_PLANS = "editor", "admit", "provision", "plans"
TABLE_STYLE = {"fontSize": 13, "padding": "2px 6px", "textAlign": "left"}


def row(label: str | list[Any], *children: Any) -> dbc.Row:
    """A form row: a small label above its controls, side by side."""
    return dbc.Row(
        [dbc.Col(html.Small(label), width=12), *[dbc.Col(c) for c in children]],
        className="g-1 mb-2",
    )


def upload(component: str, text: str, multiple: bool = False) -> dcc.Upload:
    """A bounded drop zone for YAML or JSON files."""
    kib = planning_view.MAX_UPLOAD_BYTES // 1024
    return dcc.Upload(
        id=component,
        children=html.Div([text, html.Small(f" (YAML or JSON, at most {kib} KiB each)")]),
        max_size=planning_view.MAX_UPLOAD_BYTES,
        multiple=multiple,
        accept=".yaml,.yml,.json",
        className="upload-box",
    )


def table(component: str, columns: list[str]) -> DataTable:
    """A result table whose "ok" column shows NO in red."""
    return DataTable(
        id=component,
        columns=[{"name": c, "id": c} for c in columns],
        data=[],
        style_cell=TABLE_STYLE,
        style_data_conditional=[
            {"if": {"filter_query": '{ok} = "NO"', "column_id": "ok"}, "color": "#b02a37"}
        ],
    )


MESSAGE = {
    "text": Output(ids.WI_MESSAGE, "children", allow_duplicate=True),
    "open": Output(ids.WI_MESSAGE, "is_open", allow_duplicate=True),
}
"""The page's error message (shared by every tab)."""

NOTE = {
    "note": Output(ids.WI_NOTE, "children", allow_duplicate=True),
    "note_open": Output(ids.WI_NOTE, "is_open", allow_duplicate=True),
}
"""The page's confirmation note."""


def notify(note: str) -> dict[str, Any]:
    """Outputs of a confirmation: the note shown, the error message closed."""
    return {"note": note, "note_open": bool(note), "text": "", "open": False}


def failed(exc: Exception) -> dict[str, Any]:
    """Outputs of a failure: the note closed, the error message shown."""
    return {"note": "", "note_open": False, "text": str(exc), "open": True}


def run_inputs(run_id: str | None) -> RunInputs:
    """The What-if baseline of the selected run."""
    if not run_id:
        raise ScenarioError("select a run")
    app = context.current()
    return whatif_view.inputs_for_run(app.engine, app.runs.get(run_id))


def scenario_of(inputs: RunInputs, store: Any, run_id: str | None) -> dict[str, Any]:
    """The scenario JSON of the run's edit log in the session store."""
    return whatif_view.fold_edits(inputs, whatif_view.edits_for(store, run_id))
