"""The What-if page's "Apply to the running system": when it is available and what to send.

The dashboard never talks to an engine: it leaves a placement request in the
database (:mod:`storage.placement_requests`) and the live simulator of
``mace demo``, which polls that table, applies it. Pure functions here; the
callbacks in :mod:`dashboard.whatif.apply` only read and write through them.
"""

from __future__ import annotations

from datetime import UTC, datetime

from estimator.model import Topology
from estimator.whatif import ScenarioError
from storage.placement_requests import APPLIED, PENDING, PlacementRequest

NO_LIVE_ENGINE = (
    "Not available: no live simulator listens to this dashboard (mace demo starts one "
    "together with the dashboard; mace serve only shows what ingestion stores)."
)

COUNTER_RUN = (
    "Not available for this run: it is measured by an engine's counters (Apache Flink). "
    "Moving a Flink operator to another slot-sharing group or TaskManager needs a savepoint "
    "and a redeployment of the job, which mace does not drive; redeploy it yourself and the "
    "collector records the new placement as a new version."
)

READY = (
    "Sends this scenario's placement to the live simulator: it moves the operators at its "
    "next step (their queued events follow them) and the Overview shows the new placement "
    "version once ingestion has read it. Capacity, node and load edits are not applied."
)


def availability(run_id: str | None, live_run: str | None, counters: bool) -> tuple[bool, str]:
    """Whether the button is enabled for the selected run, and the sentence saying why."""
    if not run_id:
        return False, "Select a run."
    if counters:
        return False, COUNTER_RUN
    if live_run is None:
        return False, NO_LIVE_ENGINE
    if run_id != live_run:
        return False, (
            f"Not available for this run: the live simulator runs '{live_run}'; "
            "select that run to change it."
        )
    return True, READY


def requested_placement(running: Topology, deployment: Topology) -> dict[str, str]:
    """The placement to request: the scenario's deployment, for the running system's
    operators, on nodes the running system has (ScenarioError otherwise)."""
    nodes = set(running.node_ids)
    placement = {op: deployment.placement[op] for op in running.operator_ids}
    for op, node in placement.items():
        if node not in nodes:
            raise ScenarioError(
                f"apply: operator '{op}' is placed on '{node}', a node the running system "
                "does not have (only moves between its nodes can be applied)"
            )
    if placement == dict(running.placement):
        raise ScenarioError("apply: this scenario moves no operator; nothing to apply")
    return placement


def request_status(request: PlacementRequest | None) -> str:
    """One line on the run's newest request."""
    if request is None:
        return ""
    label = f"Request #{request.request_id}"
    if request.status == PENDING:
        return f"{label} sent: waiting for the live simulator (it polls every few seconds)."
    if request.status == APPLIED and request.valid_from is not None:
        when = datetime.fromtimestamp(request.valid_from, UTC).strftime("%H:%M:%S UTC")
        return (
            f"{label} applied: the new placement is valid from {when}; the Overview shows "
            "it as a new placement version once ingestion has read it."
        )
    return f"{label} refused: {request.detail or 'no reason given'}"
