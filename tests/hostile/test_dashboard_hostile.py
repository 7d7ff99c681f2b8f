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


def test_failed_runs_are_listed_and_a_run_too_long_to_read_is_one_line(tmp_path: Path) -> None:
    """Data health lists the runs ingestion marked as failed; a run whose window is
    refused (a stray row stored before run lengths were bounded) is not selected by
    default, and its page says why in one line."""
    from datetime import datetime

    from dashboard import context
    from dashboard.health import page as health_page
    from dashboard.overview import callbacks as overview
    from dashboard.shell import layout
    from storage.db import connect
    from storage.writes import record_run_failure
    from tests.dashboard.builders import write_small_run
    from tests.hostile.cases import _store_with_a_stray_row

    path = _store_with_a_stray_row(tmp_path)  # run "small", too long to read
    write_small_run(path, "other")
    con = connect(path)
    try:
        at = datetime(2026, 1, 2, 3, 4, 5)
        record_run_failure(con, "broken", "topology.yaml: not UTF-8 (byte 0xff)", "f", at)
    finally:
        con.close()
    app = create_app(path)
    with app.server.test_request_context("/"):
        _, chosen, message = layout._run_options(context.current())
        assert (chosen, message) == ("other", "")
        answer = health_page.update("small", 0)
        failed, columns = answer[2], answer[3]
        assert failed == [
            {"run": "broken", "reason": "topology.yaml: not UTF-8 (byte 0xff)",
             "failed_at": str(at)}
        ]  # fmt: skip
        assert [c["id"] for c in columns] == ["run", "reason", "failed_at"]
        answer = overview.update("small", None, 0, "mace", None, 5, None, "run", "UTC")
        assert "more than the limit" in answer[4] and answer[5] is True
        assert len(answer[4].splitlines()) == 1
