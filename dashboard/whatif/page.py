"""What-if: move operators, change nodes and load, optimize, plan, and apply a scenario.

This module is the page: its layout shell (stores, messages, the summary and the tabs)
and the run-level callbacks. Each tab has its own module in this package (``editor``
and ``editor_layout``, ``admit``, ``provision``, ``plans``; ``baseline`` and ``apply``
above the tabs); :data:`PAGE` lists their callbacks.
"""

from __future__ import annotations

from typing import Any

import dash_bootstrap_components as dbc
from dash import Input, Output, State, ctx, dcc, html, no_update

from dashboard import context
from dashboard.shell import ids as shell_ids
from dashboard.shell.callbacks import Callbacks, Page, answers, chosen_run
from dashboard.whatif import (
    admit,
    apply,
    baseline,
    changes,
    editor,
    editor_layout,
    editor_tools,
    flink,
    ids,
    planning,
    plans,
    provision,
)
from dashboard.whatif.common import TAB_ADMIT, TAB_EDITOR, TAB_PLANS, TAB_PROVISION, run_inputs
from storage import scenarios


def layout(scenario: Any = None, **_: Any) -> html.Div:
    """The page; ``scenario`` is the URL's scenario (see :mod:`dashboard.whatif.link`)."""
    return html.Div(
        [
            # {run id: [edit, ...]}: kept across reloads and page changes, per run
            dcc.Store(id=ids.WI_SCENARIO, storage_type="session"),
            # {run id: [start, stop]}: the pinned baseline window of each run's scenario
            dcc.Store(id=ids.WI_BASELINE, storage_type="session"),
            dcc.Store(id=ids.WI_LINK, data=scenario),
            dcc.Store(id=ids.WI_URL_QUERY),
            dcc.Store(id=ids.WI_INPUTS_KEY),
            dcc.Store(id=ids.WI_OPT_RESULT),
            dcc.Store(id=ids.WI_OBJECTIVES),
            dcc.Store(id=ids.WI_PLANNING_RUN),  # the run the planning defaults are of
            dcc.Store(id=ids.WI_AD_RESULT),
            dcc.Store(id=ids.WI_PV_RESULT),
            dcc.Download(id=ids.WI_DOWNLOAD),
            dbc.Alert(id=ids.WI_MESSAGE, is_open=False, color="danger", dismissable=True),
            dbc.Alert(id=ids.WI_NOTE, is_open=False, color="success", dismissable=True),
            dbc.Alert(COUNTER_RUN_NOTE, id=ids.WI_ENGINE_NOTE, is_open=False, color="info"),
            html.H4(id=ids.WI_MACE_WC, className="mb-0"),
            baseline.line(),
            apply.live_apply_block(),
            changes.card(),
            flink.card(),
            dbc.Tabs(
                [
                    dbc.Tab(editor_layout.tab(), label="Scenario editor", tab_id=TAB_EDITOR),
                    dbc.Tab(admit.tab(), label="Admit a query", tab_id=TAB_ADMIT),
                    dbc.Tab(
                        provision.tab(), label="Provision for an objective", tab_id=TAB_PROVISION
                    ),
                    dbc.Tab(plans.tab(), label="Compare plans", tab_id=TAB_PLANS),
                ],
                id=ids.WI_TABS,
                active_tab=TAB_EDITOR,
            ),
        ]
    )


COUNTER_RUN_NOTE = (
    "This run was measured by an engine's counters (e.g. Apache Flink). A '-threads' node "
    "is a vertex's subtask threads (capacity = its parallelism), inside its TaskManager's "
    "node (capacity = its cores), whose load is the sum of its threads': moving an operator "
    "means giving it its own slot-sharing group or TaskManager. Costs are what a thread "
    "spends per record while a queue waits for it. The Flink deployment card below "
    "changes parallelism, slots and TaskManagers."
)

callbacks = Callbacks()


@callbacks.callback(Output(ids.WI_ENGINE_NOTE, "is_open"), Input(shell_ids.RUN, "value"))
@answers(lambda _: False)
def engine_note(run_id: str | None) -> bool:
    """Say what a what-if edit means on a run measured by counters."""
    return chosen_run(run_id).info.counters


PLANNING_OUTPUTS = ("objectives", "objective", "capacity", "queries", "query", "filled")
NO_PLANNING_DEFAULTS: dict[str, Any] = {
    "objectives": {}, "objective": "", "capacity": "1", "queries": [], "query": None,
    "filled": None,
}  # fmt: skip
"""The planning fields of a run that cannot be read."""


@callbacks.callback(
    output={
        "objectives": Output(ids.WI_OBJECTIVES, "data"),
        "objective": Output(ids.WI_PV_OBJECTIVE, "value"),
        "capacity": Output(ids.WI_PV_CAPACITY, "value"),
        "queries": Output(ids.WI_PL_QUERY, "options"),
        "query": Output(ids.WI_PL_QUERY, "value"),
        "filled": Output(ids.WI_PLANNING_RUN, "data"),
    },
    inputs={"run_id": Input(shell_ids.RUN, "value"), "tab": Input(ids.WI_TABS, "active_tab")},
    state={"windows": State(ids.WI_BASELINE, "data"), "filled": State(ids.WI_PLANNING_RUN, "data")},
    prevent_initial_call=True,
)
@answers(lambda _: NO_PLANNING_DEFAULTS)
def planning_defaults(
    run_id: str | None, tab: str | None, windows: Any, filled: str | None
) -> dict[str, Any]:
    """The run's stored objectives (the background jobs never read the database), and
    defaults: the tightest stored objective (else the current MaceWC), the largest node
    capacity, the first query. Filled when a planning tab is first opened on a run, not
    on the page's load (the editor tab opens first and needs none of them)."""
    if tab == TAB_EDITOR or (filled == run_id and ctx.triggered_id == ids.WI_TABS):
        return {key: no_update for key in PLANNING_OUTPUTS}
    app = context.current()
    inputs = run_inputs(run_id, windows)
    with app.database.cursor() as cur:
        stored = scenarios.objectives(cur, run_id or "")
    defaults = planning.defaults(app.engine, inputs, stored)
    return {
        "objectives": stored,
        "objective": defaults.objective,
        "capacity": defaults.capacity,
        "queries": defaults.queries,
        "query": defaults.queries[0] if defaults.queries else None,
        "filled": run_id,
    }


PAGE = Page(
    "dashboard.whatif",
    path="/whatif",
    name="What-if",
    order=2,
    layout=layout,
    callbacks=[
        callbacks,
        *(
            m.callbacks
            for m in (
                baseline,
                editor,
                editor_tools,
                admit,
                provision,
                plans,
                apply,
                flink,
                changes,
            )
        ),
    ],
)
