"""Each request of :data:`tests.hostile.cases.HTTP_CASES` to the dashboard's server: the
expected status (never 500) and nothing logged."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from dashboard.app import create_app
from tests.hostile.cases import HTTP_CASES, PROXY_HOST, SERVED_AT, HttpCase


@pytest.mark.parametrize("case", HTTP_CASES, ids=[c.id for c in HTTP_CASES])
def test_hostile_request_gets_its_status_and_no_log(
    case: HttpCase, small_db: Path, caplog: pytest.LogCaptureFixture
) -> None:
    app = create_app(
        small_db,
        credentials=("user", "secret") if case.authenticated else None,
        bind=SERVED_AT,
        extra_hosts=[PROXY_HOST],
    )
    headers = {"Host": f"{SERVED_AT[0]}:{SERVED_AT[1]}", **case.headers}
    with caplog.at_level(logging.WARNING):
        response = app.server.test_client().get("/", headers=headers)
    assert response.status_code == case.status, response.data[:200]
    assert caplog.records == []
