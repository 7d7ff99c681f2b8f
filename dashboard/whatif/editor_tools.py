"""The scenario editor's tools: optimize the placement (a background job with progress
and Cancel, :mod:`dashboard.whatif.optimizer`), save, compare and export scenarios."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dash import Input, Output, State, no_update

from dashboard import context
from dashboard.core.estimators import shown_estimator
from dashboard.shell import ids as shell_ids
from dashboard.shell.callbacks import Callbacks, answers, chosen_run
from dashboard.shell.jobs import background_job
from dashboard.whatif import ids, optimizer
from dashboard.whatif import scenario as whatif_scenario
from dashboard.whatif.common import (
    MESSAGE,
    NOTE,
    SCENARIO,
    SCENARIO_STATE,
    cached_scenario,
    failed,
    inputs_of,
    notify,
    run_inputs,
    scenario_of,
)
from dashboard.whatif.editor import saved_options
from estimator.whatif import parse_positive, scenario_from_json
from storage import scenarios

callbacks = Callbacks()

OPTIMIZE_FAILED = {
    "result": no_update, "status": "", "apply_disabled": True, "queries": [], "open": True,
}  # fmt: skip
"""The optimizer's outputs after a failure (with the message as ``text``)."""


@callbacks.callback(
    output={
        "result": Output(ids.WI_OPT_RESULT, "data"),
        "status": Output(ids.WI_OPT_STATUS, "children"),
        "apply_disabled": Output(ids.WI_OPT_APPLY, "disabled"),
        "queries": Output(ids.WI_OPT_QUERIES, "data"),
        **MESSAGE,
    },
    inputs={"start": Input(ids.WI_OPT_START, "n_clicks")},
    state={
        **SCENARIO_STATE,
        "algorithms": State(ids.WI_OPT_ALGO, "value"),
        "budget": State(ids.WI_OPT_BUDGET, "value"),
        "max_moves": State(ids.WI_OPT_MAX_MOVES, "value"),
        "objective": State(ids.WI_OPT_OBJECTIVE, "value"),
        "max_worse": State(ids.WI_OPT_MAX_WORSE, "value"),
    },
    **background_job(ids.WI_OPT_START, cancel=ids.WI_OPT_CANCEL, bar=ids.WI_OPT_PROGRESS),
)
@answers(lambda message: {**OPTIMIZE_FAILED, "text": message})
def optimize(
    set_progress: Callable[[tuple[int, str]], None],
    start: Any,
    inputs_key: str | None,
    run_id: str | None,
    data: Any,
    algorithms: Any,
    budget: Any,
    max_moves: Any,
    objective: str | None,
    max_worse: Any,
) -> dict[str, Any]:
    """Runs in a worker process: the run's inputs come from the engine's cache (filled
    when the page showed the run), never from the database."""
    seconds = parse_positive(budget, "time budget", upper=optimizer.MAX_BUDGET)
    limit = optimizer.parse_limit(objective, max_worse)
    cap = optimizer.parse_max_moves(max_moves)
    engine, inputs, scenario = cached_scenario(inputs_key, run_id, data)
    evaluator = engine.evaluator(inputs, scenario_from_json(scenario))
    shown: list[tuple[int, str]] = []

    def report(progress: optimizer.Progress) -> None:
        update = (progress.percent, progress.label)
        if not shown or shown[-1] != update:  # one cache write per visible change
            shown.append(update)
            set_progress(update)

    outcome = optimizer.optimize(
        evaluator.topology,
        evaluator.model,
        list(algorithms or []),
        seconds,
        report,
        max_worse=limit,
        max_moves=cap,
    )
    return {
        "result": {"placement": outcome.placement, "best_wc": outcome.best_wc},
        "status": outcome.label,
        "apply_disabled": False,
        "queries": outcome.query_rows(),
        "text": no_update,
        "open": no_update,
    }


@callbacks.callback(
    output={"options": Output(ids.WI_SAVED, "options", allow_duplicate=True), **MESSAGE, **NOTE},
    inputs={"save": Input(ids.WI_SAVE, "n_clicks")},
    state={
        **SCENARIO,
        "name": State(ids.WI_SAVE_NAME, "value"),
    },
    prevent_initial_call=True,
)
@answers(lambda message: {"options": no_update, **failed(message)})
def save(
    save: Any, run_id: str | None, data: Any, windows: Any, name: str | None
) -> dict[str, Any]:
    app = context.current()
    inputs = run_inputs(run_id, windows)
    scenario = scenario_of(inputs, data, run_id)
    whatif_scenario.validate(app.engine, inputs, scenario)  # only valid scenarios
    with app.database.cursor() as cur:
        scenarios.save_scenario(cur, run_id or "", name or "", scenario)
        saved = scenarios.list_scenarios(cur, run_id or "")
    return {"options": saved_options(saved), **notify(f"saved scenario '{(name or '').strip()}'")}


@callbacks.callback(
    output={
        "rows": Output(ids.WI_COMPARE_TABLE, "data"),
        "columns": Output(ids.WI_COMPARE_TABLE, "columns"),
        **MESSAGE,
    },
    inputs={"compare": Input(ids.WI_COMPARE, "n_clicks")},
    state={
        **SCENARIO,
        "saved": State(ids.WI_SAVED, "value"),
        "estimator": State(shell_ids.ESTIMATOR, "value"),
    },
    prevent_initial_call=True,
)
@answers(lambda message: {"rows": no_update, "columns": no_update, "text": message, "open": True})
def compare(
    compare: Any,
    run_id: str | None,
    data: Any,
    windows: Any,
    saved: list[str] | None,
    estimator: str | None,
) -> dict[str, Any]:
    run = chosen_run(run_id)
    inputs = inputs_of(run, windows)
    named: list[tuple[str, Any]] = [("this scenario", scenario_of(inputs, data, run_id))]
    with context.current().database.cursor() as cur:
        for scenario_id in saved or []:
            stored = scenarios.load_scenario(cur, scenario_id)
            named.append((stored.name, stored.scenario))
    rows = whatif_scenario.compare_rows(
        context.current().engine, inputs, named, shown_estimator(run, estimator).name
    )
    columns = [{"name": k, "id": k} for k in dict.fromkeys(k for r in rows for k in r)]
    return {"rows": rows, "columns": columns, "text": no_update, "open": no_update}


@callbacks.callback(
    output={"download": Output(ids.WI_DOWNLOAD, "data"), **MESSAGE},
    inputs={"export": Input(ids.WI_EXPORT, "n_clicks")},
    state=SCENARIO,
    prevent_initial_call=True,
)
@answers(lambda message: {"download": no_update, "text": message, "open": True})
def export(export: Any, run_id: str | None, data: Any, windows: Any) -> dict[str, Any]:
    inputs = run_inputs(run_id, windows)
    scenario = scenario_of(inputs, data, run_id)
    text = whatif_scenario.export_topology(context.current().engine, inputs, scenario)
    content = {"content": text, "filename": f"{run_id}-scenario.yaml"}
    return {"download": content, "text": no_update, "open": no_update}
