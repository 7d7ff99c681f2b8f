"""The glossary defines every term the pages use, and the Help page's CE diagram shows
the hand-computed cumulative excess."""

from __future__ import annotations

import numpy as np
import pytest

from dashboard.help import figures as help_figures
from dashboard.shell.glossary import GLOSSARY, term

TERMS = ("Mace", "MaceWC", "DLTS", "CE/C", "w", "eps", "subinterval factor")


def test_every_term_has_a_definition():
    for name in (*TERMS, "estimated", "predicted", "measured"):
        assert name in GLOSSARY
        assert len(GLOSSARY[name].split()) >= 8, name
    assert all(definition.strip() for definition in GLOSSARY.values())


def test_term_carries_its_definition_as_hover_title():
    element = term("CE", "cumulative excess")
    assert element.children == "cumulative excess"
    assert element.title == GLOSSARY["CE"]
    with pytest.raises(KeyError):
        term("no such term")


def test_explainer_ce_matches_hand_computed_series():
    fig = help_figures.cumulative_excess_explainer()
    by_name = {trace.name: trace for trace in fig.data}
    # C = 1 CPU-s/s, w = 1 s, DLTS 0.5 1.8 1.6 0.4 0.3 1.5:
    # CE = max(0, CE + DLTS - 1) = 0, 0.8, 1.4, 0.8, 0.1, 0.6
    ce = by_name["CE (backlog carried over)"]
    assert np.allclose(ce.y, [0.0, 0.8, 1.4, 0.8, 0.1, 0.6])
    assert list(ce.x) == ["t1", "t2", "t3", "t4", "t5", "t6"]
    within = by_name["DLTS within C × w"].y
    above = by_name["DLTS above C × w (excess)"].y
    assert np.allclose(np.asarray(within) + np.asarray(above), help_figures.EXPLAINER_DLTS)
    assert np.allclose(above, [0.0, 0.8, 0.6, 0.0, 0.0, 0.5])
    assert list(by_name["capacity × w"].y) == [1.0] * 6


def test_explainer_uses_its_arguments():
    fig = help_figures.cumulative_excess_explainer([3.0, 6.0, 0.0], capacity=1.0, w=2.0)
    ce = next(t for t in fig.data if t.name.startswith("CE"))
    # the paper's Fig. 3 node N2: CE 1 then 5, then drained by 2
    assert np.allclose(ce.y, [1.0, 5.0, 3.0])
