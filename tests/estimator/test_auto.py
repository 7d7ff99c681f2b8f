"""The ``auto`` picker (estimator.auto): per-origin when the port work is known and the
predicted replay fits the budget, else burst-aware with a node profile, else Mace; every
choice says why."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from estimator.auto import (
    STATE_BUDGET_BYTES,
    TIME_BUDGET_S,
    RunSize,
    pick,
    predicted_bytes,
    predicted_seconds,
)

K = 32
DEMO = RunSize(
    operators=40,
    ports=40,
    nodes=13,
    intervals=3600,
    subinterval=1.0,
    sub_buckets=32,
    port_work=True,
    mace_worst_s=2.0,
)
FULL = replace(DEMO, operators=4000, ports=4000, nodes=400)


def test_an_hour_of_a_13_node_run_gets_per_origin_with_its_reason() -> None:
    choice = pick(DEMO, K)
    assert choice.name == "origin"
    assert "node profile at w/32" in choice.reason
    assert f"within the {TIME_BUDGET_S:g} s budget" in choice.reason
    by_source = pick(replace(DEMO, source_profile=True), K)
    assert "the sources' arrival profile at w/32" in by_source.reason


def test_a_run_too_large_for_the_budget_falls_back_and_says_why() -> None:
    choice = pick(FULL, K)
    assert choice.name == "burst"
    assert "per-origin would take about" in choice.reason
    assert "4000 ports x 3600 subintervals" in choice.reason
    assert "burst-aware from the node profile instead" in choice.reason
    without_profile = pick(replace(FULL, sub_buckets=0), K)
    assert without_profile.name == "mace"
    assert "no node profile" in without_profile.reason


def test_a_long_backlog_falls_back_on_the_state_budget() -> None:
    choice = pick(replace(DEMO, mace_worst_s=1e6), K)
    assert choice.name == "burst"
    assert "MiB of replay state" in choice.reason


def test_without_port_work_per_origin_is_not_picked() -> None:
    choice = pick(replace(DEMO, port_work=False), K)
    assert choice.name == "burst"
    assert "work of each operator port is not measured" in choice.reason


def test_placement_versions_multiply_the_predicted_time() -> None:
    assert predicted_seconds(replace(DEMO, versions=3), K) == 3 * predicted_seconds(DEMO, K)


sizes = st.builds(
    RunSize,
    operators=st.integers(1, 5000),
    ports=st.integers(1, 8000),
    nodes=st.integers(1, 500),
    intervals=st.integers(1, 10_000),
    subinterval=st.sampled_from([0.5, 1.0, 2.0]),
    sub_buckets=st.sampled_from([0, 8, 32]),
    port_work=st.booleans(),
    mace_worst_s=st.floats(0.0, 1e5),
    versions=st.integers(1, 4),
)


@given(sizes, st.floats(1e-4, 10.0))
def test_per_origin_is_picked_exactly_when_it_is_possible_and_fits(
    size: RunSize, budget: float
) -> None:
    """Against the rule written out: per-origin iff port work, time and state fit; the
    fallback is burst-aware iff there is a node profile; a reason is always given."""
    choice = pick(size, K, time_budget_s=budget)
    fits = (
        size.port_work
        and predicted_seconds(size, K) <= budget
        and predicted_bytes(size, K) <= STATE_BUDGET_BYTES
    )
    if fits:
        assert choice.name == "origin"
    else:
        assert choice.name == ("burst" if size.sub_buckets else "mace")
    assert choice.reason


@given(sizes, st.integers(1, 100))
def test_the_predicted_cost_grows_with_the_run(size: RunSize, more: int) -> None:
    longer = replace(size, intervals=size.intervals + more)
    assert predicted_seconds(longer, K) > predicted_seconds(size, K)
    backlog = replace(size, mace_worst_s=size.mace_worst_s + more)
    assert predicted_bytes(backlog, K) >= predicted_bytes(size, K)


def test_a_refused_replay_runs_the_fallback() -> None:
    """run_picked computes the picked estimator; when per-origin raises its refusal, the
    fallback is computed instead and the refusal is in the reason; other errors pass."""
    from estimator.auto import run_picked
    from estimator.errors import ModelError

    asked: list[str] = []

    def compute(name: str) -> str:
        asked.append(name)
        if name == "origin":
            raise ModelError("per-origin: a backlog window of 9 s needs more than 8 GiB")
        return name

    choice, result = run_picked(DEMO, K, compute)
    assert asked == ["origin", "burst"] and result == "burst"
    assert choice.reason.startswith("per-origin refused the run (per-origin: a backlog")
    choice, result = run_picked(FULL, K, compute)
    assert asked[-1] == "burst" and choice.name == "burst"
