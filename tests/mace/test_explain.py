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
    assert main(["explain", "--db", str(tandem_db), "--estimator", "burst"]) == 2
    assert "covers the mace and path estimators" in capsys.readouterr().err


def test_explain_path_covers_every_node_of_the_critical_path(
    tandem_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # builders.TANDEM_TOPOLOGY: path-aware lag 3.25 s at interval 1 (its worst). n2
    # released subinterval 1 at 5.25: it started on it when n1 released subinterval 0,
    # at 2.25, and worked 3.0 s (b) in 1 subinterval: +2.0; n1 was busy on [0, 0] with
    # 2.25 s (a 1.75, c 0.5) in 1 subinterval: +1.25. 1.25 + 2.0 = 3.25.
    assert main(["explain", "--db", str(tandem_db), "--estimator", "path", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["interval"] == 1 and document["estimator"] == "path"
    assert document["estimate_seconds"] == pytest.approx(3.25)
    n1, n2 = document["path"]
    assert (n1["resource"], n1["busy_since"], n1["busy_until"]) == ("n1", 0, 0)
    assert (n2["resource"], n2["busy_since"], n2["busy_until"]) == ("n2", 1, 1)
    assert n1["ce_seconds"] == pytest.approx(1.25) and n2["ce_seconds"] == pytest.approx(2.0)
    assert n1["contributions"] == pytest.approx({"a": 1.25 * 1.75 / 2.25, "c": 1.25 * 0.5 / 2.25})
    assert n2["contributions"] == pytest.approx({"b": 2.0})
    assert n1["sources"] == pytest.approx({"s": 1.25})
    assert n1["delay_seconds"] == n2["delay_seconds"] == 0.0
    # the Mace keys describe the dominant node of the path: n2
    assert (document["resource"], document["busy_since"]) == ("n2", 1)
    assert document["ce_seconds"] == pytest.approx(2.0)
    assert document["contributions"] == pytest.approx({"b": 2.0})
    assert main(["explain", "--db", str(tandem_db), "--estimator", "path", "--interval", "3"]) == 0
    out = capsys.readouterr().out
    assert "path-aware estimate 2.2500 s along n1 -> n2" in out
    assert "n2: +1.0000 s (busy on subintervals 1-3)" in out
