"""The What-if page's "Compare plans" tab (plan choice): the running plan of a query ranked
against uploaded alternative plans."""

from __future__ import annotations

from typing import Any

import dash_bootstrap_components as dbc
from dash import Input, Output, State, dcc, html
from dash.dash_table.DataTable import DataTable

from dashboard.shell import ids as shell_ids
from dashboard.shell.callbacks import Callbacks, answers
from dashboard.shell.glossary import term
from dashboard.whatif import ids, planning
from dashboard.whatif.common import (
    TABLE_STYLE,
    decided,
    decision_alert,
    decision_outputs,
    row,
    run_inputs,
    upload,
)

callbacks = Callbacks()

CRITERIA = [
    {"label": "MaceWC (worst case)", "value": "mace_wc"},
    {"label": "mean of Mace", "value": "mean"},
    {"label": "p99 of Mace", "value": "p99"},
]


def tab() -> html.Div:
    return html.Div(
        [
            html.P(
                [
                    "Which plan of a query should run? The running plan (its costs fitted "
                    "on this run) is ranked against plan files you upload: topology files "
                    "whose operators all belong to the query and read the run's sources. As "
                    "in the paper, each plan runs on one node holding its total capacity, "
                    "fed with the run's arrivals, and is judged by its ",
                    term("Mace"),
                    " across time.",
                ],
                className="text-muted small",
            ),
            dbc.Row(
                [
                    dbc.Col(row("Query", dcc.Dropdown(id=ids.WI_PL_QUERY, clearable=False)), md=2),
                    dbc.Col(
                        row(
                            "Rank by",
                            dcc.Dropdown(
                                id=ids.WI_PL_CRITERION,
                                options=CRITERIA,
                                value="mace_wc",
                                clearable=False,
                            ),
                        ),
                        md=3,
                    ),
                    dbc.Col(
                        upload(
                            ids.WI_PL_UPLOAD,
                            f"Drop up to {planning.MAX_PLANS} plan files here or click",
                            multiple=True,
                        ),
                        md=7,
                    ),
                ]
            ),
            decision_alert(ids.WI_PL_CHOSEN),
            DataTable(
                id=ids.WI_PL_TABLE,
                columns=[
                    {"name": c, "id": c}
                    for c in ("rank", "plan", "MaceWC (s)", "mean (s)", "p99 (s)")
                ],
                data=[],
                style_cell=TABLE_STYLE,
                style_data_conditional=[
                    {"if": {"filter_query": "{rank} = 1"}, "fontWeight": "bold"}
                ],
            ),
        ],
        className="pt-2",
    )


@callbacks.callback(
    output={
        "rows": Output(ids.WI_PL_TABLE, "data"),
        **decision_outputs(ids.WI_PL_CHOSEN),
    },
    inputs={
        "contents": Input(ids.WI_PL_UPLOAD, "contents"),
        "criterion": Input(ids.WI_PL_CRITERION, "value"),
        "query": Input(ids.WI_PL_QUERY, "value"),
    },
    state={
        "filenames": State(ids.WI_PL_UPLOAD, "filename"),
        "run_id": State(shell_ids.RUN, "value"),
        "windows": State(ids.WI_BASELINE, "data"),
    },
    prevent_initial_call=True,
)
@answers(lambda message: {"rows": [], **decided(message, "danger")})
def compare_plans(
    contents: list[str] | None,
    criterion: str | None,
    query: str | None,
    filenames: list[str] | None,
    run_id: str | None,
    windows: Any,
) -> dict[str, Any]:
    """Rank the running plan of the query against the uploaded plans."""
    if not contents:
        return {"rows": [], **decided("", "secondary")}
    names = list(filenames or [])
    files = [
        (name, planning.upload_text(content, name))
        for name, content in zip(names, contents, strict=False)
    ]
    ranking = planning.plan_ranking(
        run_inputs(run_id, windows), query, files, criterion or "mace_wc"
    )
    return {"rows": ranking.rows, **decided(ranking.message, "success")}
