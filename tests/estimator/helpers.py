"""Small topologies for estimator tests, written as documents like users write them."""

from __future__ import annotations

from typing import Any

from estimator.model import Topology, topology_from_dict


def chain_document(**overrides: Any) -> dict[str, Any]:
    """Two sources feeding parse -> filter, and a two-input join of filter and b."""
    document: dict[str, Any] = {
        "name": "chain",
        "subinterval": 1.0,
        "nodes": [{"id": "n1", "capacity": 1.0}, {"id": "n2", "capacity": 2.0}],
        "sources": [{"id": "a"}, {"id": "b"}],
        "operators": [
            {"id": "parse", "query": "q1", "inputs": ["a"], "cost": 0.01, "selectivity": 2.0},
            {"id": "filter", "query": "q1", "inputs": ["parse"], "cost": 0.02, "selectivity": 0.25},
            {
                "id": "join",
                "query": "q2",
                "inputs": ["filter", "b"],
                "cost": [0.1, 0.05],
                "selectivity": [1.0, 0.5],
            },
        ],
        "placement": {"parse": "n1", "filter": "n1", "join": "n2"},
    }
    document.update(overrides)
    return document


def chain(**overrides: Any) -> Topology:
    return topology_from_dict(chain_document(**overrides))
