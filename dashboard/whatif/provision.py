"""The What-if page's "Provision for an objective" tab (capacity planning): the fewest nodes, or
the least added capacity, that keep every query within a latency objective."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import dash_bootstrap_components as dbc
from dash import State, html

from dashboard.shell.callbacks import Callbacks, answers
from dashboard.shell.glossary import term
from dashboard.shell.jobs import job_buttons
from dashboard.whatif import ids, planning
from dashboard.whatif.common import (
    cached_scenario,
    decision_alert,
    proposal_button,
    proposal_failed,
    proposal_found,
    proposal_search,
    result_tables,
    row,
    table,
)
from estimator.whatif import MAX_CAPACITY, parse_positive

callbacks = Callbacks()


def tab() -> html.Div:
    return html.Div(
        [
            html.P(
                [
                    "What does a ",
                    term("latency objective"),
                    " need? Mode fewest nodes: the fewest identical "
                    "nodes on which the placement search keeps every query's ",
                    term("MaceWC"),
                    " within the objective. Mode least added capacity: the least CPU "
                    "capacity to add to "
                    "the scenario's nodes, placement unchanged. Capacities are in reference "
                    "CPU-seconds per second (1 = one reference core).",
                ],
                className="text-muted small",
            ),
            dbc.Row(
                [
                    dbc.Col(
                        row("Objective (s)", dbc.Input(id=ids.WI_PV_OBJECTIVE, size="sm")), md=2
                    ),
                    dbc.Col(
                        row(
                            "Mode",
                            dbc.RadioItems(
                                id=ids.WI_PV_MODE,
                                options=[
                                    {"label": "fewest nodes", "value": "nodes"},
                                    {"label": "least added capacity", "value": "capacity"},
                                ],
                                value="nodes",
                                inline=True,
                            ),
                        ),
                        md=3,
                    ),
                    dbc.Col(
                        row(
                            "Node capacity (CPU-s/s)",
                            dbc.Input(id=ids.WI_PV_CAPACITY, value="1", size="sm"),
                        ),
                        md=2,
                    ),
                    dbc.Col(
                        row(
                            "Search budget per node count (s)",
                            dbc.Input(id=ids.WI_PV_BUDGET, value="0.5", size="sm"),
                        ),
                        md=2,
                    ),
                    dbc.Col(
                        [
                            *job_buttons("Provision", ids.WI_PV_START, ids.WI_PV_CANCEL),
                            html.Small(id=ids.WI_PV_BUSY, className="ms-2 text-muted"),
                        ],
                        md=3,
                        className="pt-4",
                    ),
                ]
            ),
            decision_alert(ids.WI_PV_DECISION),
            result_tables(
                (
                    "Each query now and on the proposal",
                    table(
                        ids.WI_PV_QUERIES,
                        ["query", "now (s)", "proposed (s)", "objective (s)", "ok"],
                    ),
                    6,
                ),
                ("Proposed nodes", table(ids.WI_PV_NODES, ["node", "capacity", "operators"]), 6),
            ),
            proposal_button("Load the proposal as the scenario", ids.WI_PV_APPLY),
        ],
        className="pt-2",
    )


TABLES = {"queries": ids.WI_PV_QUERIES, "nodes": ids.WI_PV_NODES}


@callbacks.callback(
    **proposal_search(
        start=ids.WI_PV_START,
        decision=ids.WI_PV_DECISION,
        tables=TABLES,
        result=ids.WI_PV_RESULT,
        apply=ids.WI_PV_APPLY,
        state={
            "objective": State(ids.WI_PV_OBJECTIVE, "value"),
            "mode": State(ids.WI_PV_MODE, "value"),
            "capacity": State(ids.WI_PV_CAPACITY, "value"),
            "budget": State(ids.WI_PV_BUDGET, "value"),
        },
        cancel=ids.WI_PV_CANCEL,
        text=ids.WI_PV_BUSY,
    )
)
@answers(proposal_failed(TABLES))
def provision(
    set_progress: Callable[[str], None],
    start: Any,
    inputs_key: str | None,
    run_id: str | None,
    data: Any,
    objective: Any,
    mode: str | None,
    capacity: Any,
    budget: Any,
) -> dict[str, Any]:
    """Nodes or capacity the objective needs on the scenario (a worker process)."""
    seconds = planning.parse_objective(objective)
    engine, inputs, scenario = cached_scenario(inputs_key, run_id, data)
    view = planning.provisioning(
        engine,
        inputs,
        scenario,
        seconds,
        mode=mode or "nodes",
        node_capacity=parse_positive(capacity, "node capacity", upper=MAX_CAPACITY),
        budget=parse_positive(budget, "search budget", upper=planning.MAX_PLANNING_BUDGET),
        progress=lambda count: set_progress(
            f"searching placements on {count} node{'s' * (count != 1)}…"
        ),
    )
    tables = {"queries": view.rows, "nodes": view.nodes}
    return proposal_found(
        view.message, view.feasible, tables, view.scenario, f"provisioned: {view.label}"
    )
