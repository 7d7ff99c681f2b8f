"""Placement requests: stored pending, listed oldest first, settled once."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage.db import connect
from storage.errors import StorageError
from storage.placement_requests import (
    APPLIED,
    PENDING,
    REFUSED,
    latest_request,
    pending_requests,
    request_placement,
    settle_request,
)


def test_requests_round_trip_and_settle_once(tmp_path: Path) -> None:
    con = connect(tmp_path / "m.duckdb")
    assert latest_request(con, "r") is None
    first = request_placement(con, "r", {"b": "n2", "a": "n1"})
    second = request_placement(con, "r", {"a": "n2", "b": "n2"})
    request_placement(con, "other", {"a": "n1"})
    assert [(q.request_id, q.placement, q.status) for q in pending_requests(con, "r")] == [
        (first, {"a": "n1", "b": "n2"}, PENDING),
        (second, {"a": "n2", "b": "n2"}, PENDING),
    ]
    settle_request(con, first, 1234.5)
    settle_request(con, second, None, "operator 'a' moved to unknown node 'n2'")
    settle_request(con, second, 99.0)  # already settled: stays refused
    assert pending_requests(con, "r") == []
    latest = latest_request(con, "r")
    assert latest is not None and latest.request_id == second
    assert (latest.status, latest.valid_from, latest.detail) == (
        REFUSED,
        None,
        "operator 'a' moved to unknown node 'n2'",
    )
    rows = con.execute(
        "SELECT status, valid_from FROM placement_requests WHERE request_id = ?", [first]
    ).fetchall()
    assert rows == [(APPLIED, 1234.5)]
    with pytest.raises(StorageError, match="the placement is empty"):
        request_placement(con, "r", {})
    con.close()
