"""Each request of :data:`tests.hostile.cases.HTTP_CASES` to the dashboard's server: the
expected status (never 500) and nothing logged; each input of
:data:`tests.hostile.cases.PAGE_CASES` to a page's server code: its one-line message."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from dashboard.app import create_app
from dashboard.core import data
from dashboard.core.data import Database, RunCache
from dashboard.whatif import link
from dashboard.whatif import scenario as whatif_scenario
from estimator.errors import MaceError
from estimator.whatif import RunInputs, WhatIfEngine
from tests.hostile.cases import (
    HTTP_CASES,
    PAGE_CASES,
    PROXY_HOST,
    SERVED_AT,
    HttpCase,
    PageCase,
)


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


@pytest.fixture
def inputs(small_db: Path) -> RunInputs:
    return data.inputs_for_run(WhatIfEngine(), RunCache(Database(small_db)).get("small"))


@pytest.mark.parametrize("case", PAGE_CASES, ids=[c.id for c in PAGE_CASES])
def test_hostile_page_input_gets_one_line(case: PageCase, inputs: RunInputs) -> None:
    with pytest.raises(MaceError) as raised:
        case.call(inputs)
    assert case.message in str(raised.value)
    assert len(str(raised.value).splitlines()) == 1


def test_a_links_edits_are_folded_once(inputs: RunInputs, monkeypatch: pytest.MonkeyPatch) -> None:
    """Adopting N edits applies a linear number of edits (not one fold of the log per
    edit); the log it gives is the one made edit by edit on the page."""
    pairs = [("capacity", {"node": "n2", "capacity": str(10 + k)}) for k in range(40)]
    applied = 0
    apply_edit = whatif_scenario.apply_edit

    def counted(*args: object) -> dict:
        nonlocal applied
        applied += 1
        return apply_edit(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(whatif_scenario, "apply_edit", counted)
    edits, problems = link.adopt_edits(inputs, pairs)
    assert problems == [] and len(edits) == len(pairs)
    assert applied <= 3 * len(pairs)
    monkeypatch.undo()
    expected: list[dict] = []
    for action, values in pairs:
        expected = whatif_scenario.add_edit(inputs, expected, action, values).edits
    assert edits == expected
