"""The What-if page's "Admit a query" tab (admission control): can a new query, uploaded or
pasted, run next to the scenario without breaking a latency objective?"""

from __future__ import annotations

from typing import Any

import dash_bootstrap_components as dbc
from dash import Input, Output, State, dcc, html, no_update

from dashboard.shell.callbacks import Callbacks, answers
from dashboard.shell.glossary import term
from dashboard.whatif import ids, planning
from dashboard.whatif.common import (
    cached_scenario,
    decided,
    decision_alert,
    decision_outputs,
    field,
    proposal_button,
    proposal_failed,
    proposal_found,
    proposal_search,
    result_tables,
    row,
    table,
    upload,
)
from estimator.placement import ALGORITHMS
from estimator.whatif import ScenarioError, parse_positive

callbacks = Callbacks()

QUERY_EXAMPLE = """# a query file: the new query, its operators and its new sources' arrivals
query: q9
operators:
  - {id: o1, inputs: [orders], cost: 0.001, selectivity: 1.0}
  - {id: o2, inputs: [o1, s], cost: [0.002, 0.001], selectivity: [0.5, 0.5]}
sources:                        # new sources (running ones are read by id)
  - {id: orders, arrivals: [100, 120, 80, 95]}   # events per subinterval
placement: {o1: n1}             # optional: where to start"""

ADMIT_ALGORITHMS = [
    *({"label": a, "value": a} for a in ALGORITHMS),
    {"label": "as in the file (no search)", "value": planning.AS_IN_FILE},
]


def tab() -> html.Div:
    return html.Div(
        [
            html.P(
                [
                    "Can a new query run next to the scenario above without breaking a ",
                    term("latency objective"),
                    "? ",
                    term("admission", "Admission"),
                    ": the running operators stay where they are, the new ones are placed "
                    "by the algorithm, and every query's ",
                    term("MaceWC"),
                    " is compared with its objective (set on the Reports page).",
                ],
                className="text-muted small",
            ),
            dbc.Row(
                [
                    dbc.Col(
                        [
                            upload(ids.WI_AD_UPLOAD, "Drop a query file here or click"),
                            field(
                                "or paste the query (YAML or JSON)",
                                dbc.Textarea(
                                    id=ids.WI_AD_TEXT,
                                    placeholder=QUERY_EXAMPLE,
                                    rows=9,
                                    className="font-monospace small mt-2",
                                ),
                            ),
                        ],
                        md=6,
                    ),
                    dbc.Col(
                        [
                            row(
                                "Objective of the new query (s, optional)",
                                dbc.Input(id=ids.WI_AD_OBJECTIVE, placeholder="none", size="sm"),
                            ),
                            row(
                                "Placement search",
                                field(
                                    "algorithm",
                                    dcc.Dropdown(
                                        id=ids.WI_AD_ALGO,
                                        options=ADMIT_ALGORITHMS,
                                        value="mace-hc",
                                        clearable=False,
                                    ),
                                ),
                                field(
                                    "time budget (s)",
                                    dbc.Input(id=ids.WI_AD_BUDGET, value="1", size="sm"),
                                ),
                            ),
                            dbc.Button(
                                "Check admission", id=ids.WI_AD_START, color="success", size="sm"
                            ),
                            html.Small(id=ids.WI_AD_BUSY, className="ms-2 text-muted"),
                        ],
                        md=6,
                    ),
                ]
            ),
            decision_alert(ids.WI_AD_DECISION),
            result_tables(
                (
                    "Each query before and after",
                    table(
                        ids.WI_AD_QUERIES,
                        ["query", "before (s)", "after (s)", "objective (s)", "ok"],
                    ),
                    7,
                ),
                (
                    "Placement of the new operators",
                    table(ids.WI_AD_PLACEMENT, ["operator", "node"]),
                    5,
                ),
            ),
            proposal_button("Add this query to the scenario", ids.WI_AD_APPLY),
        ],
        className="pt-2",
    )


@callbacks.callback(
    output={"text": Output(ids.WI_AD_TEXT, "value"), **decision_outputs(ids.WI_AD_DECISION)},
    inputs={"contents": Input(ids.WI_AD_UPLOAD, "contents")},
    state={"filename": State(ids.WI_AD_UPLOAD, "filename")},
    prevent_initial_call=True,
)
@answers(lambda message: {"text": no_update, **decided(message, "danger")})
def admit_upload(contents: str | None, filename: str | None) -> dict[str, Any]:
    """An uploaded query file goes into the text box (to read, edit, then check)."""
    text = planning.upload_text(contents, filename)
    return {"text": text, **decided(f"loaded {filename}", "secondary")}


TABLES = {"queries": ids.WI_AD_QUERIES, "placement": ids.WI_AD_PLACEMENT}


@callbacks.callback(
    **proposal_search(
        start=ids.WI_AD_START,
        decision=ids.WI_AD_DECISION,
        tables=TABLES,
        result=ids.WI_AD_RESULT,
        apply=ids.WI_AD_APPLY,
        state={
            "text": State(ids.WI_AD_TEXT, "value"),
            "filename": State(ids.WI_AD_UPLOAD, "filename"),
            "objective": State(ids.WI_AD_OBJECTIVE, "value"),
            "algorithm": State(ids.WI_AD_ALGO, "value"),
            "budget": State(ids.WI_AD_BUDGET, "value"),
            "objectives": State(ids.WI_OBJECTIVES, "data"),
        },
        busy=(ids.WI_AD_BUSY, "placing the new operators…"),
    )
)
@answers(proposal_failed(TABLES))
def admit(
    start: Any,
    inputs_key: str | None,
    run_id: str | None,
    data: Any,
    text: str | None,
    filename: str | None,
    objective: Any,
    algorithm: str | None,
    budget: Any,
    objectives: Any,
) -> dict[str, Any]:
    """Admission control of the query in the text box against the scenario (a worker
    process: inputs from the engine's cache, objectives from the page's store)."""
    if not (text or "").strip():
        raise ScenarioError("admit: upload or paste a query file first")
    query = planning.added_query_from_text(text or "", filename or "query file")
    engine, inputs, scenario = cached_scenario(inputs_key, run_id, data)
    view = planning.admission(
        engine,
        inputs,
        scenario,
        query,
        planning.stored_objectives(objectives),
        new_objective=(
            None
            if not str(objective or "").strip()
            else planning.parse_objective(objective, "objective of the new query")
        ),
        algorithm=algorithm or "mace-hc",
        budget=parse_positive(budget, "time budget", upper=planning.MAX_PLANNING_BUDGET),
    )
    tables = {"queries": view.rows, "placement": view.placement}
    return proposal_found(
        view.message, view.admitted, tables, view.scenario, f"admitted {view.query}"
    )
