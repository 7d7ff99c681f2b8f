"""``mace explain`` on the hand-computed tandem run of tests/dashboard/builders.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mace.cli import main


def test_explain_json_on_the_tandem_run(
    tandem_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # n1 hosts a and c: loads [2.25, 2.4, ...] against C*w = 1 -> CE/C 1.25, 2.65 (worst,
    # first reached at interval 1), backlog since interval 0. Over [0, 1] a did 1.75 + 1.2
    # and c 0.5 + 1.2 of 4.65 CPU-s -> shares 2.65 * 2.95 / 4.65 and 2.65 * 1.7 / 4.65;
    # both read source s.
    assert main(["explain", "--db", str(tandem_db), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert {k: document[k] for k in ("run", "interval", "estimator", "resource", "busy_since")} == {
        "run": "tandem", "interval": 1, "estimator": "mace", "resource": "n1", "busy_since": 0,
    }  # fmt: skip
    assert document["ce_seconds"] == pytest.approx(2.65)
    assert document["contributions"] == pytest.approx(
        {"a": 2.65 * 2.95 / 4.65, "c": 2.65 * 1.7 / 4.65}
    )
    assert document["sources"] == pytest.approx({"s": 2.65})


def test_explain_text_and_mistakes(tandem_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "--db", str(tandem_db), "--interval", "3"]) == 0
    out = capsys.readouterr().out
    # interval 3: n1's load 0 drains the backlog to 1.65 s, still building since 0
    assert "subinterval 3: n1 is 1.6500 s behind (CE/C), building since subinterval 0" in out
    assert main(["explain", "--db", str(tandem_db), "--interval", "5"]) == 2
    assert "has subintervals 0..4" in capsys.readouterr().err
    assert main(["explain", "--db", str(tandem_db), "--estimator", "path"]) == 2
    assert "covers the mace estimator" in capsys.readouterr().err
