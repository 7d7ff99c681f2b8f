"""What the What-if tabs share: callback registration per app, form rows, tables, the
page's message and note outputs, and the run's baseline and scenario."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import dash_bootstrap_components as dbc
from dash import Input, Output, State, dcc, html
from dash.dash_table.DataTable import DataTable

from dashboard import context
from dashboard.core import data as core_data
from dashboard.core.data import RunData
from dashboard.shell import ids as shell_ids
from dashboard.shell.callbacks import chosen_run
from dashboard.shell.jobs import background_job
from dashboard.whatif import ids, link, planning
from dashboard.whatif import scenario as whatif_scenario
from estimator.whatif import RunInputs, WhatIfEngine

TAB_EDITOR, TAB_ADMIT, TAB_PROVISION, TAB_PLANS = "editor", "admit", "provision", "plans"
TABLE_STYLE = {"fontSize": 13, "padding": "2px 6px", "textAlign": "left"}


CONTROLS = (dbc.Input, dcc.Dropdown, dbc.RadioItems, dbc.Textarea)
"""The components a user fills in: each needs a label naming what it asks."""


def row(label: str | list[Any], *children: Any) -> dbc.Row:
    """A form row: a small label above its controls, side by side. The label is the
    control's own (``<label for>``) when the row has one control; a row of several
    gives each its own with :func:`field`."""
    controls: list[Any] = [c for c in children if isinstance(c, CONTROLS)]
    heading: Any = html.Small(label)
    if len(controls) == 1:
        heading = html.Label(label, htmlFor=controls[0].id, className="small mb-0")
    return dbc.Row(
        [dbc.Col(heading, width=12), *[dbc.Col(c) for c in children]],
        className="g-1 mb-2",
    )


def field(label: str, control: Any) -> html.Div:
    """A control with its own small label above it (a row of several controls)."""
    return html.Div(
        [html.Label(label, htmlFor=control.id, className="small text-muted mb-0"), control]
    )


def upload(component: str, text: str, multiple: bool = False) -> dcc.Upload:
    """A bounded drop zone for YAML or JSON files."""
    kib = planning.MAX_UPLOAD_BYTES // 1024
    return dcc.Upload(
        id=component,
        children=html.Div([text, html.Small(f" (YAML or JSON, at most {kib} KiB each)")]),
        max_size=planning.MAX_UPLOAD_BYTES,
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


def failed(message: str) -> dict[str, Any]:
    """Outputs of a failure: the note closed, the error message shown."""
    return {"note": "", "note_open": False, "text": message, "open": True}


def run_inputs(run_id: str | None, windows: Any) -> RunInputs:
    """The What-if baseline of the selected run, on its pinned window (``windows``: the
    page's session store of them; all the run's data while none is pinned)."""
    return inputs_of(chosen_run(run_id), windows)


def inputs_of(run: RunData, windows: Any) -> RunInputs:
    """:func:`run_inputs` of a run already read."""
    window = link.window_for(windows, run.info.run_id)
    return core_data.inputs_for_run(context.current().engine, run, window)


def scenario_of(inputs: RunInputs, store: Any, run_id: str | None) -> dict[str, Any]:
    """The scenario JSON of the run's edit log in the session store."""
    return whatif_scenario.fold_edits(inputs, whatif_scenario.edits_for(store, run_id))


SCENARIO = {
    "run_id": State(shell_ids.RUN, "value"),
    "data": State(ids.WI_SCENARIO, "data"),
    "windows": State(ids.WI_BASELINE, "data"),
}
"""The selected run, and the session stores of its scenario and of its pinned baseline
window (callback state)."""

SCENARIO_STATE = {
    "inputs_key": State(ids.WI_INPUTS_KEY, "data"),
    "run_id": State(shell_ids.RUN, "value"),
    "data": State(ids.WI_SCENARIO, "data"),
}
"""What a background job rebuilds the scenario from (a worker never reads the database)."""


def cached_scenario(
    inputs_key: str | None, run_id: str | None, data: Any
) -> tuple[WhatIfEngine, RunInputs, dict[str, Any]]:
    """In a background job: the engine, the baseline the page showed (from the engine's
    cache) and the scenario JSON of the session store."""
    engine = context.current().engine
    inputs = engine.cached_inputs(inputs_key or "")
    return engine, inputs, scenario_of(inputs, data, run_id)


def decision_alert(component: str) -> dbc.Alert:
    """The closed alert where a planning tab says what it decided."""
    return dbc.Alert(id=component, is_open=False, className="mt-2 mb-2")


def decision_outputs(component: str) -> dict[str, Output]:
    """A decision alert's text, colour and visibility as callback outputs."""
    return {
        "decision": Output(component, "children"),
        "color": Output(component, "color"),
        "open": Output(component, "is_open"),
    }


def decided(text: str, color: str) -> dict[str, Any]:
    """The values of :func:`decision_outputs`: ``text`` shown in ``color``."""
    return {"decision": text, "color": color, "open": bool(text)}


def result_tables(*columns: tuple[str, Any, int]) -> dbc.Row:
    """Tables side by side, each (heading, table, width of 12)."""
    return dbc.Row(
        [dbc.Col([html.H6(title), content], md=width) for title, content, width in columns]
    )


def proposal_button(text: str, component: str) -> dbc.Button:
    """The button that loads a planning tab's proposal as the scenario."""
    return dbc.Button(text, id=component, size="sm", className="mt-2", disabled=True)


def proposal_search(
    *,
    start: str,
    decision: str,
    tables: Mapping[str, str],
    result: str,
    apply: str,
    state: Mapping[str, State],
    **job: Any,
) -> dict[str, Any]:
    """The callback declaration of a planning tab's search: started by the button
    ``start`` and run in the background (``job``: see :func:`dashboard.shell.jobs.background_job`)
    on the scenario and ``state``; it answers in the ``decision`` alert and ``tables``
    (output key -> DataTable id), and keeps its proposal in the store ``result``, which
    the ``apply`` button loads as the scenario."""
    return {
        "output": {
            **decision_outputs(decision),
            **{key: Output(component, "data") for key, component in tables.items()},
            "result": Output(result, "data"),
            "apply_disabled": Output(apply, "disabled"),
        },
        "inputs": {"start": Input(start, "n_clicks")},
        "state": {**SCENARIO_STATE, **state},
        **background_job(start, **job),
    }


def proposal_failed(tables: Iterable[str]) -> Callable[[str], dict[str, Any]]:
    """The answer of a planning search that failed (for :func:`answers`): the message,
    empty ``tables``, nothing to apply."""
    empty: dict[str, list[Any]] = {key: [] for key in tables}

    def answer(message: str) -> dict[str, Any]:
        return {**decided(message, "danger"), **empty, "result": None, "apply_disabled": True}

    return answer


def proposal_found(
    message: str, ok: bool, tables: Mapping[str, Any], scenario: Any, label: str
) -> dict[str, Any]:
    """A planning search's answer: the decision, its tables, and the proposal (to load
    as the scenario named ``label``; applicable only if ``ok``)."""
    return {
        **decided(message, "success" if ok else "warning"),
        **tables,
        "result": {"scenario": scenario, "label": label},
        "apply_disabled": not ok,
    }
