"""The What-if page's "Provision for an objective" tab (issue 18): the fewest nodes, or
the least added capacity, that keep every query within a latency objective."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import dash_bootstrap_components as dbc
from dash import Input, Output, State, html

from dashboard import context, ids, planning_view
from dashboard.glossary import term
from dashboard.whatif.common import CallbackSet, row, scenario_of, table
from estimator.errors import MaceError
from estimator.whatif import MAX_CAPACITY, parse_positive

callbacks = CallbackSet()


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
                            dbc.Button("Provision", id=ids.WI_PV_START, color="success", size="sm"),
                            dbc.Button(
                                "Cancel",
                                id=ids.WI_PV_CANCEL,
                                color="warning",
                                size="sm",
                                className="ms-1",
                                disabled=True,
                            ),
                            html.Small(id=ids.WI_PV_BUSY, className="ms-2 text-muted"),
                        ],
                        md=3,
                        className="pt-4",
                    ),
                ]
            ),
            dbc.Alert(id=ids.WI_PV_DECISION, is_open=False, className="mt-2 mb-2"),
            dbc.Row(
                [
                    dbc.Col(
                        [
                            html.H6("Each query now and on the proposal"),
                            table(
                                ids.WI_PV_QUERIES,
                                ["query", "now (s)", "proposed (s)", "objective (s)", "ok"],
                            ),
                        ],
                        md=6,
                    ),
                    dbc.Col(
                        [
                            html.H6("Proposed nodes"),
                            table(ids.WI_PV_NODES, ["node", "capacity", "operators"]),
                        ],
                        md=6,
                    ),
                ]
            ),
            dbc.Button(
                "Load the proposal as the scenario",
                id=ids.WI_PV_APPLY,
                size="sm",
                className="mt-2",
                disabled=True,
            ),
        ],
        className="pt-2",
    )


@callbacks.callback(
    output={
        "decision": Output(ids.WI_PV_DECISION, "children"),
        "color": Output(ids.WI_PV_DECISION, "color"),
        "open": Output(ids.WI_PV_DECISION, "is_open"),
        "queries": Output(ids.WI_PV_QUERIES, "data"),
        "nodes": Output(ids.WI_PV_NODES, "data"),
        "result": Output(ids.WI_PV_RESULT, "data"),
        "apply_disabled": Output(ids.WI_PV_APPLY, "disabled"),
    },
    inputs={"start": Input(ids.WI_PV_START, "n_clicks")},
    state={
        "inputs_key": State(ids.WI_INPUTS_KEY, "data"),
        "run_id": State(ids.RUN, "value"),
        "data": State(ids.WI_SCENARIO, "data"),
        "objective": State(ids.WI_PV_OBJECTIVE, "value"),
        "mode": State(ids.WI_PV_MODE, "value"),
        "capacity": State(ids.WI_PV_CAPACITY, "value"),
        "budget": State(ids.WI_PV_BUDGET, "value"),
    },
    background=True,
    progress=Output(ids.WI_PV_BUSY, "children"),
    progress_default="",
    running=[
        (Output(ids.WI_PV_START, "disabled"), True, False),
        (Output(ids.WI_PV_CANCEL, "disabled"), False, True),
    ],
    cancel=[Input(ids.WI_PV_CANCEL, "n_clicks")],
    prevent_initial_call=True,
)
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
    try:
        seconds = planning_view.parse_objective(objective)
        engine = context.current().engine
        inputs = engine.cached_inputs(inputs_key or "")
        view = planning_view.provisioning(
            engine,
            inputs,
            scenario_of(inputs, data, run_id),
            seconds,
            mode=mode or "nodes",
            node_capacity=parse_positive(capacity, "node capacity", upper=MAX_CAPACITY),
            budget=parse_positive(budget, "search budget", upper=planning_view.MAX_PLANNING_BUDGET),
            progress=lambda count: set_progress(
                f"searching placements on {count} node{'s' * (count != 1)}…"
            ),
        )
    except MaceError as exc:
        return {
            "decision": str(exc), "color": "danger", "open": True, "queries": [],
            "nodes": [], "result": None, "apply_disabled": True,
        }  # fmt: skip
    return {
        "decision": view.message,
        "color": "success" if view.feasible else "warning",
        "open": True,
        "queries": view.rows,
        "nodes": view.nodes,
        "result": {"scenario": view.scenario, "label": f"provisioned: {view.label}"},
        "apply_disabled": not view.feasible,
    }
