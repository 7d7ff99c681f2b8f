"""The What-if scenario's pinned baseline window and its link:
a window of a grown run gives exactly the baseline the run had when it was pinned, and
a link carries the run, the window and the edits, read back without trusting it."""

from __future__ import annotations

import base64
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashboard.core import data
from dashboard.core.data import Database, RunCache
from dashboard.whatif import link as whatif_link
from dashboard.whatif import scenario as whatif_scenario
from estimator.errors import ScenarioError
from estimator.whatif import WhatIfEngine
from tests.dashboard.builders import append_small_intervals


def _summary(db: Path, window: tuple[int, int] | None, edits: list[dict]) -> str:
    engine = WhatIfEngine()
    inputs = data.inputs_for_run(engine, RunCache(Database(db)).get("small"), window)
    return whatif_scenario.render(engine, inputs, whatif_scenario.fold_edits(inputs, edits)).summary


def test_a_window_of_a_grown_run_is_the_baseline_it_had_when_pinned(small_db: Path) -> None:
    move = [{"action": "move", "values": {"operator": "b", "node": "n1"}, "label": ""}]
    before = _summary(small_db, None, move)
    # hand-computed in test_views: b joins c on n1, MaceWC 0.846875 s -> 4.6 s
    assert before.startswith("MaceWC: scenario 4.6000 s, current 0.8469 s")
    append_small_intervals(small_db, [40, 40, 40])  # live data arrives: a heavier load
    grown = _summary(small_db, None, move)
    assert grown != before
    assert _summary(small_db, (0, 5), move) == before


def test_a_window_past_the_data_is_clipped_and_an_empty_one_refused(small_db: Path) -> None:
    assert _summary(small_db, (0, 99), []) == _summary(small_db, None, [])
    with pytest.raises(ScenarioError, match="no data in the baseline window"):
        _summary(small_db, (7, 9), [])


def test_baseline_label_names_the_window_and_the_newer_data() -> None:
    assert whatif_link.Baseline(0, 600, 600, 1.0).label == "baseline: 0:00–10:00 (pinned)"
    assert whatif_link.Baseline(0, 600, 4000, 1.0).label == (
        "baseline: 0:00–10:00 (pinned); the run's data now reaches 1:06:40"
    )
    assert whatif_link.Baseline(3, 5, 5, 2.0).label == "baseline: 0:06–0:10 (pinned)"


def test_window_store_ignores_malformed_entries() -> None:
    store = whatif_link.with_window({"other": [0, 3]}, "small", (0, 5))
    assert whatif_link.window_for(store, "small") == (0, 5)
    assert whatif_link.window_for(store, "other") == (0, 3)
    for bad in ([5, 5], [3, 1], [-1, 2], ["0", "5"], [True, 5], [0, 1, 2], "0-5", None):
        assert whatif_link.window_for({"small": bad}, "small") is None
    assert whatif_link.window_for(None, "small") is None


values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=8,
)


@settings(max_examples=100, deadline=None)
@given(
    run_id=st.text(min_size=1, max_size=20),
    window=st.none() | st.tuples(st.integers(0, 10**6), st.integers(1, 10**6)),
    edits=st.lists(
        st.fixed_dictionaries(
            {"action": st.text(max_size=12), "values": st.dictionaries(st.text(max_size=8), values)}
        ),
        max_size=5,
    ),
)
def test_a_link_reads_back_what_was_written(run_id, window, edits) -> None:
    if window is not None and window[0] >= window[1]:
        window = (window[1], window[0] + 1) if window[1] < window[0] + 1 else None
    text = whatif_link.encode_link(run_id, window, edits)
    assert text.replace("-", "").replace("_", "").isalnum()  # safe in a URL as it is
    link = whatif_link.decode_link(text)
    assert link.run_id == run_id
    assert link.window == window
    assert link.pairs == [(e["action"], e["values"]) for e in edits]


def _packed(raw: bytes) -> str:
    return base64.urlsafe_b64encode(zlib.compress(raw)).decode().rstrip("=")


@pytest.mark.parametrize(
    "text",
    [
        "garbage!",
        "AAAA",
        _packed(b"not json"),
        _packed(b"[1, 2]"),
        _packed(b'{"run": 3, "edits": []}'),
        _packed(b'{"run": "small", "edits": [["move"]]}'),
        _packed(b'{"run": "small", "edits": [], "window": [5, 2]}'),
        _packed(b'{"run": "small", "edits": [], "window": "0-5"}'),
        _packed(b"[" * 70000),  # expands past the limit
        "A" * (whatif_link.MAX_LINK_CHARS + 1),
    ],
)
def test_an_unreadable_link_is_refused_with_one_message(text: str) -> None:
    with pytest.raises(ScenarioError, match="the link's scenario cannot be read"):
        whatif_link.decode_link(text)


def test_adopting_a_link_keeps_the_edits_that_apply_and_names_the_others(small_db) -> None:
    engine = WhatIfEngine()
    inputs = data.inputs_for_run(engine, RunCache(Database(small_db)).get("small"))
    pairs = [
        ("move", {"operator": "b", "node": "n1"}),
        ("move", {"operator": "zz", "node": "n1"}),
        ("load_saved", {"scenario": {}}),  # no name: malformed
        ("capacity", {"node": "n1", "capacity": 4}),
    ]
    edits, problems = whatif_link.adopt_edits(inputs, pairs)
    assert [e["label"] for e in edits] == ["moved b to n1", "set the capacity of n1 to 4"]
    assert problems == [
        "the link's edit 2 (move) was left out: move: unknown operator 'zz'",
        "the link's edit 3 (load_saved) was left out: its values are malformed",
    ]


def test_settling_pins_a_new_run_once_and_re_pins_on_request(small_db: Path) -> None:
    """The rule the scenario view and the URL both apply when the page opens (no link):
    a run without a window gets its data so far; a pinned one keeps its window while
    data arrives, until re-pinned; other runs' windows are kept."""
    from dashboard.whatif.baseline import settle

    cache = RunCache(Database(small_db))
    edits = {"small": [{"action": "move", "values": {"operator": "b", "node": "n1"}}]}
    first = settle(None, False, cache.get("small"), edits, {"other": [0, 3]})
    assert first.changed and not first.problems
    assert first.windows == {"other": [0, 3], "small": [0, 5]}
    assert first.data is edits  # the edits are the session's, untouched

    append_small_intervals(small_db, [40, 40, 40])  # live data arrives
    grown = cache.get("small")
    again = settle(None, False, grown, first.data, first.windows)
    assert not again.changed and again.windows == first.windows
    repinned = settle(None, True, grown, first.data, first.windows)
    assert repinned.changed and repinned.windows == {"other": [0, 3], "small": [0, 8]}
