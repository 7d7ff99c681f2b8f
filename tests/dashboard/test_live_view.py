"""When "Apply to the running system" is available, what it sends and what it says."""

from __future__ import annotations

from datetime import datetime

import pytest

from dashboard.whatif import live as whatif_live
from estimator.model import topology_from_dict
from estimator.whatif import ScenarioError
from storage.placement_requests import PlacementRequest
from tests.dashboard.builders import SMALL_TOPOLOGY


@pytest.mark.parametrize(
    ("run_id", "live_run", "counters", "enabled", "says"),
    [
        (None, "demo", False, False, "Select a run."),
        ("demo", "demo", True, False, "measured by an engine's counters (Apache Flink)"),
        ("demo", None, False, False, "no live simulator listens"),
        ("old", "demo", False, False, "the live simulator runs 'demo'"),
        ("demo", "demo", False, True, "Sends this scenario's placement"),
    ],
)
def test_availability(
    run_id: str | None, live_run: str | None, counters: bool, enabled: bool, says: str
) -> None:
    got, why = whatif_live.availability(run_id, live_run, counters)
    assert got is enabled and says in why


def test_requested_placement_is_the_whole_placement_on_existing_nodes() -> None:
    running = topology_from_dict(SMALL_TOPOLOGY)
    moved = running.with_placement({"a": "n1", "b": "n2", "c": "n1"})
    assert whatif_live.requested_placement(running, moved) == {"a": "n1", "b": "n2", "c": "n1"}
    with pytest.raises(ScenarioError, match="moves no operator"):
        whatif_live.requested_placement(running, running)
    bigger = topology_from_dict(
        {
            **SMALL_TOPOLOGY,
            "nodes": [*SMALL_TOPOLOGY["nodes"], {"id": "n3", "capacity": 1.0}],  # type: ignore[misc]
            "placement": {"a": "n3", "b": "n2", "c": "n1"},
        }
    )
    with pytest.raises(ScenarioError, match="'a' is placed on 'n3', a node the running system"):
        whatif_live.requested_placement(running, bigger)


def test_request_status_lines() -> None:
    def request(status: str, valid_from: float | None, detail: str | None) -> PlacementRequest:
        return PlacementRequest(
            7, "r", {"a": "n1"}, datetime(2026, 1, 1), status, valid_from, detail
        )

    assert whatif_live.request_status(None) == ""
    assert "Request #7 sent: waiting" in whatif_live.request_status(request("pending", None, None))
    applied = whatif_live.request_status(request("applied", 3600.0 * 5 + 62, None))
    assert applied.startswith("Request #7 applied: the new placement is valid from 05:01:02 UTC")
    assert whatif_live.request_status(request("refused", None, "no such node")) == (
        "Request #7 refused: no such node"
    )
