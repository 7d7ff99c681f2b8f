"""Run analysis helpers: the one rule for placement versions over intervals, per-query
Mace with a placement that changes over time, and node loads from measured rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from estimator.mace import per_query_max
from estimator.model import first_interval_from, topology_from_dict, version_at, version_starts
from estimator.runs import measured_node_dlts


@pytest.mark.parametrize(
    ("valid_from", "first"),
    [
        (102.0, 2),  # exactly origin + 2w: interval 2 starts with the new placement
        (102.0 - 1e-6, 2),  # just before the boundary: still from interval 2
        (102.0 + 1e-6, 3),  # just after it: interval 2 started under the old placement
        (99.0, 0),  # before the origin: from interval 0
    ],
)
def test_first_interval_at_a_version_boundary(valid_from: float, first: int) -> None:
    assert first_interval_from(valid_from, 100.0, 1.0) == first


def test_boundary_survives_float_rounding() -> None:
    """0.0 + 3 * 0.3 is 0.8999999999999999 < 0.9: comparing times said interval 3 still
    ran the old placement, while 0.9 s is the start of interval 3."""
    assert 3 * 0.3 < 0.9
    starts = version_starts([0.0, 0.9], 0.0, 0.3)
    assert starts == (0, 3)
    assert [version_at(starts, k) for k in range(5)] == [0, 0, 0, 1, 1]


def test_version_at_with_several_versions() -> None:
    starts = version_starts([100.0, 102.0, 102.5, 104.0], 100.0, 1.0)
    assert starts == (0, 2, 3, 4)
    assert [version_at(starts, k) for k in range(6)] == [0, 0, 1, 2, 3, 3]


def test_per_query_max_with_a_fixed_and_a_moving_mask() -> None:
    ce = np.array([[1.0, 0.0, 3.0], [2.0, 5.0, 0.5]])
    np.testing.assert_array_equal(per_query_max(ce, np.array([True, False])), [1.0, 0.0, 3.0])
    moving = np.array([[True, True, False], [False, True, False]])
    np.testing.assert_array_equal(per_query_max(ce, moving), [1.0, 5.0, 0.0])


def test_measured_node_dlts_follow_versions_and_skip_unknown_rows() -> None:
    topology = topology_from_dict(
        {
            "name": "t",
            "nodes": [{"id": "n1", "capacity": 1.0}, {"id": "n2", "capacity": 1.0}],
            "sources": [{"id": "s"}],
            "operators": [
                {"id": "a", "query": "q", "inputs": ["s"], "cost": 0.1, "selectivity": 1.0},
                {"id": "b", "query": "q", "inputs": ["a"], "cost": 0.1, "selectivity": 1.0},
            ],
            "placement": {"a": "n1", "b": "n2"},
        }
    )
    cpu = pd.DataFrame(
        {
            "operator": ["a", "b", "a", "b", "zz", "a"],
            "interval": [0, 0, 1, 1, 0, 7],
            "cpu": [0.1, 0.2, 0.3, 0.4, 9.0, 9.0],
        }
    )
    moved = [{"a": "n1", "b": "n2"}, {"a": "n2", "b": "n2"}]
    dlts = measured_node_dlts(topology, cpu, moved, (0, 1), 2)
    np.testing.assert_allclose(dlts, [[0.1, 0.0], [0.2, 0.7]])
