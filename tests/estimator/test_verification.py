"""Verify each change: the model fitted before a placement change
against what was measured, on hand-computed runs (arrays, and a stored run)."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dashboard.core.data import Database, LazyProfile, load_run
from estimator.errors import ModelError
from estimator.evaluator import estimate
from estimator.fitting import fit_operator_stats
from estimator.model import topology_from_dict
from estimator.pathaware import Detail
from estimator.propagation import build_load_model, port_load
from estimator.runs import analyse
from estimator.verification import check_changes, verify_changes
from tests.dashboard.builders import write_small_run

# a and b (cost 0.1 each) on n1 (capacity 1); the change at interval 3 moves b to n2.
TOPOLOGY = topology_from_dict(
    {
        "name": "move",
        "nodes": [{"id": "n1", "capacity": 1.0}, {"id": "n2", "capacity": 1.0}],
        "sources": [{"id": "s"}],
        "operators": [
            {"id": "a", "query": "q", "inputs": ["s"], "cost": 0.1},
            {"id": "b", "query": "q", "inputs": ["a"], "cost": 0.1},
        ],
        "placement": {"a": "n1", "b": "n1"},
    }
)
OLD = {"a": "n1", "b": "n1"}
NEW = {"a": "n1", "b": "n2"}
COUNTS = np.full((1, 6), 6.0)


def _stats(costs: list[float]) -> pd.DataFrame:
    """Measured statistics: 6 events per interval through a and b at these costs."""
    rows = [
        (op, 0, p, 6, 6, cost * 6) for p, cost in enumerate(costs) for op in TOPOLOGY.operator_ids
    ]
    return pd.DataFrame(
        rows, columns=["operator", "port", "interval", "events_in", "events_out", "cpu_seconds"]
    )


def test_hand_computed_change() -> None:
    # the model is fitted on [0, 3): cost 0.1. n1 load 1.2 before -> CE 0.2, 0.4, 0.6;
    # after the move n1 load 0.6 -> CE 0.2, 0, 0 and n2 0.6 -> 0. Predicted worst case
    # 0.6 before, 0.2 after. The cost doubling after the change is not known to it.
    measured = np.array([0.3, 0.5, 0.7, 0.4, math.nan, 0.1])
    (check,) = check_changes(
        TOPOLOGY, _stats([0.1, 0.1, 0.1, 0.2, 0.2, 0.2]), COUNTS, [OLD, NEW], (0, 3), measured
    )
    assert (check.interval, check.version, check.before, check.after) == (3, 1, (0, 3), (3, 6))
    assert check.training == (0, 3)
    assert check.predicted_wc_before == pytest.approx(0.6)
    assert check.predicted_wc_after == pytest.approx(0.2)
    assert (check.measured_wc_before, check.measured_wc_after) == (0.7, 0.4)
    assert check.predicted_change == pytest.approx(0.2 / 0.6 - 1)
    assert check.measured_change == pytest.approx(0.4 / 0.7 - 1)
    assert check.moved == (("b", "n1", "n2"),)


def test_training_window_is_the_end_of_the_previous_period() -> None:
    # costs 0.2 in intervals 0-1, 0.1 in interval 2: trained on [2, 3) only the model says
    # 0.1, on the whole period it says 0.4 / 3 per event
    stats = _stats([0.2, 0.2, 0.1, 0.1, 0.1, 0.1])
    measured = np.full(6, 1.0)
    (last,) = check_changes(TOPOLOGY, stats, COUNTS, [OLD, NEW], (0, 3), measured, training=1)
    assert last.training == (2, 3)
    assert last.predicted_wc_before == pytest.approx(0.6)
    (whole,) = check_changes(TOPOLOGY, stats, COUNTS, [OLD, NEW], (0, 3), measured)
    cost = 0.5 / 3
    assert whole.predicted_wc_before == pytest.approx(3 * (12 * cost - 1))
    with pytest.raises(ModelError, match="training"):
        check_changes(TOPOLOGY, stats, COUNTS, [OLD, NEW], (0, 3), measured, training=0)


def test_several_changes_and_a_change_without_data_after_it() -> None:
    measured = np.array([0.3, 0.5, 0.7, 0.4, 0.2, 0.1])
    checks = check_changes(
        TOPOLOGY,
        _stats([0.1] * 6),
        COUNTS,
        [OLD, NEW, OLD],
        (0, 3, 9),
        measured,
        versions=[0, 4, 7],
    )
    assert [(c.interval, c.version, c.before, c.after) for c in checks] == [
        (3, 4, (0, 3), (3, 6)),
        (9, 7, (3, 6), (6, 6)),
    ]
    assert checks[1].training == (3, 6)
    assert checks[1].moved == (("b", "n2", "n1"),)
    assert math.isnan(checks[1].predicted_wc_after) and math.isnan(checks[1].measured_wc_after)
    assert checks[1].measured_wc_before == 0.4
    assert math.isnan(checks[1].measured_change)


def test_one_placement_means_no_change() -> None:
    assert check_changes(TOPOLOGY, _stats([0.1] * 6), COUNTS, [OLD], (0,), np.ones(6)) == []


def test_stored_run_with_a_placement_change(tmp_path: Path) -> None:
    # builders' small run (s = [5, 12, 5, 0, 10]; a, b on n2 (capacity 2), c on n1) with b
    # moved to n1 from t = 2. Fitted on [0, 2): a (0.75 + 1.2) / 17 per event, b 0.2, c 0.1.
    # Before: n2 predicted load (cost_a + 0.2) * 12 in interval 1 -> CE/C (that - 2) / 2.
    # After: n1 carries b and c, 0.3 * [5, 0, 10] from CE 0.2 -> 0.7, 0, 2.0.
    db = tmp_path / "change.duckdb"
    write_small_run(db, versions=[(2.0, {"a": "n2", "b": "n1", "c": "n1"})])
    database = Database(db)
    try:
        with database.cursor() as cur:
            run = load_run(cur, "small")
    finally:
        database.close()
    (check,) = verify_changes(run)
    cost_a = 1.95 / 17
    assert (check.interval, check.version, check.training) == (2, 1, (0, 2))
    assert check.predicted_wc_before == pytest.approx(((cost_a + 0.2) * 12 - 2) / 2)
    assert check.predicted_wc_after == pytest.approx(2.0)
    # measured system latency [0.3, 1.2, 1.0, -, 0.4]
    assert (check.measured_wc_before, check.measured_wc_after) == (1.2, 1.0)
    assert check.moved == (("b", "n2", "n1"),)


# the arrivals per sub-bucket (k = 4) of COUNTS: each interval's 6 events in its last
# quarter, except interval 4's, which are spread evenly
K = 4
PROFILE = np.zeros((1, 6, K))
PROFILE[0, :, K - 1] = 6.0
PROFILE[0, 4] = 1.5


def _by_hand(
    name: str, stats: pd.DataFrame, window: tuple[int, int], profile: np.ndarray | None
) -> np.ndarray:
    """What a user computes for ``name`` from the model fitted on ``window``: each
    version's node loads evaluated at w and, from the arrivals per sub-bucket, at w / k
    (the node profile, for burst-aware), the arrivals per sub-bucket themselves (for
    per-origin), and the fitted model's port work."""
    fitted = fit_operator_stats(TOPOLOGY, stats, window).topology
    n, w = len(TOPOLOGY.node_ids), TOPOLOGY.subinterval
    loads = np.zeros((n, 6))
    fine = np.zeros((n, 6, K))
    for placement, (lo, hi) in ((OLD, (0, 3)), (NEW, (3, 6))):
        version = fitted.with_placement(placement)
        loads[:, lo:hi] = estimate(version, COUNTS).dlts[:n, lo:hi]
        if profile is not None:
            finer = version.with_changes(subinterval=w / K)
            at_k = estimate(finer, profile.reshape(1, 6 * K)).dlts[:n].reshape(n, 6, K)
            fine[:, lo:hi] = at_k[:, lo:hi]
    by_source = name == "origin" and profile is not None
    detail = Detail(
        node_fine=None if profile is None or by_source else fine,
        port_work=port_load(fitted, build_load_model(fitted, COUNTS)),
        source_fine=profile if by_source else None,
    )
    return analyse(TOPOLOGY, loads, [OLD, NEW], (0, 3), name, detail).estimate


@pytest.mark.parametrize("name", ["burst", "origin"])
def test_burst_and_origin_predict_with_the_arrival_profile(name: str) -> None:
    # the cost doubles after the change: a model fitted on anything but [0, 3) differs
    stats = _stats([0.1, 0.1, 0.1, 0.2, 0.2, 0.2])
    measured = np.full(6, 1.0)
    (check,) = check_changes(
        TOPOLOGY, stats, COUNTS, [OLD, NEW], (0, 3), measured, estimator=name, profile=PROFILE
    )
    expected = _by_hand(name, stats, (0, 3), PROFILE)
    assert check.predicted_wc_before == pytest.approx(expected[:3].max(), abs=1e-12)
    assert check.predicted_wc_after == pytest.approx(expected[3:].max(), abs=1e-12)
    # without the profile: as before, burst-aware is Mace's series, per-origin spreads
    # each subinterval evenly; the bursts at the end of each interval make a difference
    (even,) = check_changes(TOPOLOGY, stats, COUNTS, [OLD, NEW], (0, 3), measured, estimator=name)
    without = _by_hand(name, stats, (0, 3), None)
    assert even.predicted_wc_before == pytest.approx(without[:3].max(), abs=1e-12)
    assert even.predicted_wc_after == pytest.approx(without[3:].max(), abs=1e-12)
    assert check.predicted_wc_after > even.predicted_wc_after + 0.1
    if name == "burst":
        (mace,) = check_changes(TOPOLOGY, stats, COUNTS, [OLD, NEW], (0, 3), measured)
        assert (even.predicted_wc_before, even.predicted_wc_after) == (
            mace.predicted_wc_before,
            mace.predicted_wc_after,
        )


def test_the_profile_follows_the_training_window() -> None:
    # trained on [2, 3) only: the model's cost is interval 2's, 0.1, not the period's
    stats = _stats([0.2, 0.2, 0.1, 0.1, 0.1, 0.1])
    (check,) = check_changes(
        TOPOLOGY,
        stats,
        COUNTS,
        [OLD, NEW],
        (0, 3),
        np.ones(6),
        estimator="burst",
        training=1,
        profile=PROFILE,
    )
    expected = _by_hand("burst", stats, (2, 3), PROFILE)
    assert check.predicted_wc_before == pytest.approx(expected[:3].max(), abs=1e-12)
    assert check.predicted_wc_after == pytest.approx(expected[3:].max(), abs=1e-12)


@pytest.mark.parametrize("name", ["mace", "path"])
def test_mace_and_path_aware_ignore_the_profile(name: str) -> None:
    stats = _stats([0.1] * 6)
    args = (TOPOLOGY, stats, COUNTS, [OLD, NEW], (0, 3), np.ones(6))
    assert check_changes(*args, estimator=name, profile=PROFILE) == check_changes(
        *args, estimator=name
    )


def test_a_profile_of_the_wrong_shape_is_named() -> None:
    with pytest.raises(ModelError, match="arrival profile of shape"):
        check_changes(
            TOPOLOGY,
            _stats([0.1] * 6),
            COUNTS,
            [OLD, NEW],
            (0, 3),
            np.ones(6),
            estimator="burst",
            profile=PROFILE[:, :5],
        )


def test_a_stored_run_reads_its_arrival_profile_only_for_burst_and_origin(
    tmp_path: Path,
) -> None:
    db = tmp_path / "change.duckdb"
    write_small_run(db, versions=[(2.0, {"a": "n2", "b": "n1", "c": "n1"})])
    database = Database(db)
    try:
        with database.cursor() as cur:
            stored = load_run(cur, "small")
    finally:
        database.close()
    counts = stored.arrivals.for_topology(stored.topology)  # s = [5, 12, 5, 0, 10]
    profile = np.zeros((1, stored.intervals, K))
    profile[:, :, 0] = counts  # every interval's events in its first quarter
    reads: list[int] = []

    def read() -> np.ndarray:
        reads.append(1)
        return profile

    for name in ("mace", "path", "burst", "origin"):
        run = dataclasses.replace(stored, arrival_profile=LazyProfile(read), _derived={})
        reads.clear()
        (check,) = verify_changes(run, estimator=name)
        uses_profile = name in ("burst", "origin")
        assert len(reads) == int(uses_profile), name
        (expected,) = check_changes(
            run.topology,
            run.operator_stats,
            counts,
            [v.placement for v in run.versions],
            run.version_starts,
            run.measured_system().lat_max,
            estimator=name,
            profile=profile if uses_profile else None,
        )
        assert check == expected
