"""The What-if page's "Apply to the running system" block: a what-if answer
put into practice. The button sends
the scenario's placement as a request (:mod:`storage.placement_requests`) that the live
simulator of ``mace demo`` polls and applies; :mod:`dashboard.whatif.live` decides when it
is available."""

from __future__ import annotations

from typing import Any

import dash_bootstrap_components as dbc
from dash import Input, Output, html, no_update

from dashboard import context
from dashboard.shell import ids as shell_ids
from dashboard.shell.callbacks import Callbacks, answers
from dashboard.whatif import ids, live
from dashboard.whatif.common import MESSAGE, SCENARIO, run_inputs, scenario_of
from estimator.errors import MaceError
from estimator.whatif import ScenarioError, scenario_from_json
from storage import placement_requests

callbacks = Callbacks()


def live_apply_block() -> html.Div:
    """The button and the sentence saying what it does, or why it is not available."""
    return html.Div(
        [
            dbc.Button(
                "Apply to the running system",
                id=ids.WI_LIVE_APPLY,
                size="sm",
                color="primary",
                disabled=True,
                className="text-nowrap",
            ),
            html.Small(id=ids.WI_LIVE_STATUS, className="text-muted"),
        ],
        className="d-flex align-items-center gap-3 mb-2",
    )


def _live_state(run_id: str | None) -> tuple[bool, str]:
    """(enabled, the sentence shown under the button) for the selected run."""
    app = context.current()
    counters = False
    if run_id:
        try:
            counters = app.runs.get(run_id).info.counters
        except MaceError:
            return False, "Select a run."
    enabled, why = live.availability(run_id, app.live_run, counters)
    if enabled:
        with app.database.cursor() as cur:
            latest = placement_requests.latest_request(cur, run_id or "")
        why = live.request_status(latest) or why
    return enabled, why


@callbacks.callback(
    Output(ids.WI_LIVE_APPLY, "disabled"),
    Output(ids.WI_LIVE_STATUS, "children"),
    Input(shell_ids.RUN, "value"),
    Input(shell_ids.RUN_REFRESH, "n_intervals"),
)
@answers(lambda message: (True, message))
def live_state(run_id: str | None, _: Any) -> tuple[bool, str]:
    """The button is enabled only for the run a live simulator listens to."""
    enabled, why = _live_state(run_id)
    return not enabled, why


@callbacks.callback(
    output={"status": Output(ids.WI_LIVE_STATUS, "children", allow_duplicate=True), **MESSAGE},
    inputs={"apply": Input(ids.WI_LIVE_APPLY, "n_clicks")},
    state=SCENARIO,
    prevent_initial_call=True,
)
@answers(lambda message: {"status": no_update, "text": message, "open": True})
def apply_live(apply: Any, run_id: str | None, data: Any, windows: Any) -> dict[str, Any]:
    """Store the scenario's placement as a request to the live simulator."""
    enabled, why = _live_state(run_id)
    if not enabled:
        raise ScenarioError(why)
    inputs = run_inputs(run_id, windows)
    app = context.current()
    deployment, _ = app.engine.applied(
        inputs, scenario_from_json(scenario_of(inputs, data, run_id))
    )
    placement = live.requested_placement(inputs.topology, deployment)
    with app.database.cursor() as cur:
        placement_requests.request_placement(cur, run_id or "", placement)
        latest = placement_requests.latest_request(cur, run_id or "")
    return {"status": live.request_status(latest), "text": "", "open": False}
