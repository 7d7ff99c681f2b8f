"""``mace estimate`` text output names the chosen estimator through the registry."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from estimator import pathaware
from estimator.mace import Estimate
from estimator.model import Topology
from mace.cli import main


def _plus_one(topology: Topology, base: Estimate) -> Estimate:
    """A dummy third estimator: Mace plus a constant 1 s (upper bound moved with it)."""
    return dataclasses.replace(
        base,
        series=base.series + 1.0,
        upper=base.upper + 1.0,
        per_query={q: s + 1.0 for q, s in base.per_query.items()},
    )


def test_a_third_registered_estimator_names_its_worst_case(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], figure3_dir: Path
) -> None:
    """Figure 3 (w = 2 s): Mace 1, 5, 3, 2, 4 with eps 3.25 (tests/estimator/test_figure3.py),
    so plus-one's worst case is 6 at subinterval 1, its upper bound 5 + 2 + 3.25 + 1 and
    the lower bound stays Mace's 5."""
    monkeypatch.setitem(
        pathaware.ESTIMATORS,
        "plus1",
        pathaware.Estimator("plus-one", _plus_one, "plus-one + w + eps"),
    )
    topology, arrivals = figure3_dir / "topology.yaml", figure3_dir / "arrivals.csv"
    status = main(["estimate", str(topology), "--arrivals", str(arrivals), "--estimator", "plus1"])
    assert status == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == "  plus-one WC     6.0000 s at subinterval 1"
    assert lines[2] == "  latency bounds  [5.0000, 11.2500] s (eps 3.250000 s)"
    assert lines[-3:] == [
        "  per query (plus-one WC):",
        "    q1             6.0000 s",
        "  estimator       plus-one: chosen with --estimator",
    ]
