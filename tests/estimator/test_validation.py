"""Every validation error of topologies, placements and arrival series names the entry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from estimator.arrivals import arrivals_from_frame
from estimator.errors import ModelError
from estimator.loaders import load_arrivals, load_topology, topology_from_text
from estimator.model import topology_from_dict
from tests.estimator.helpers import chain, chain_document


def broken(mutate: Any) -> dict[str, Any]:
    document = chain_document()
    mutate(document)
    return document


CASES = [
    (
        "unknown input",
        lambda d: d["operators"][1].update(inputs=["nope"]),
        "operator 'filter': unknown input 'nope'",
    ),
    ("duplicate operator", lambda d: d["operators"][1].update(id="parse"), "duplicate id 'parse'"),
    (
        "duplicate node",
        lambda d: d["nodes"].append({"id": "n1", "capacity": 1}),
        "duplicate id 'n1'",
    ),
    ("node vs source id", lambda d: d["sources"].append({"id": "n2"}), "duplicate id 'n2'"),
    (
        "slots not a count",
        lambda d: d["nodes"][0].update(slots=2.5),
        "node 'n1' slots: expected an integer in [1, 1024], got 2.5",
    ),
    (
        "python workers",
        lambda d: d["nodes"][0].update(python_workers="per-core"),
        "node 'n1' python_workers: expected one of per-slot, shared, got 'per-core'",
    ),
    (
        "no slots",
        lambda d: d["nodes"][0].update(slots=0),
        "node 'n1' slots: expected an integer in [1, 1024], got 0",
    ),
    ("cycle", lambda d: d["operators"][0].update(inputs=["filter"]), "cycle through operator"),
    (
        "self loop",
        lambda d: d["operators"][1].update(inputs=["filter"]),
        "cycle through operator 'filter'",
    ),
    ("missing placement", lambda d: d["placement"].pop("join"), "operator 'join' has no node"),
    ("extra placement", lambda d: d["placement"].update(ghost="n1"), "unknown operator 'ghost'"),
    (
        "placement to unknown node",
        lambda d: d["placement"].update(join="n9"),
        "placed on unknown node 'n9'",
    ),
    (
        "cost ports",
        lambda d: d["operators"][2].update(cost=[0.1]),
        "operator 'join' cost: has 1 entries but the operator has 2",
    ),
    (
        "selectivity ports",
        lambda d: d["operators"][2].update(selectivity=[1, 1, 1]),
        "operator 'join' selectivity: has 3 entries",
    ),
    (
        "zero capacity",
        lambda d: d["nodes"][0].update(capacity=0),
        "node 'n1' capacity: must be positive",
    ),
    (
        "negative capacity",
        lambda d: d["nodes"][1].update(capacity=-2),
        "node 'n2' capacity: must be positive",
    ),
    (
        "infinite capacity",
        lambda d: d["nodes"][1].update(capacity=float("inf")),
        "node 'n2' capacity: must be finite",
    ),
    (
        "nan cost",
        lambda d: d["operators"][0].update(cost=float("nan")),
        "operator 'parse' cost: must be finite",
    ),
    (
        "zero cost",
        lambda d: d["operators"][0].update(cost=0),
        "operator 'parse' cost: must be positive",
    ),
    (
        "negative port cost",
        lambda d: d["operators"][2].update(cost=[0.1, -1]),
        "operator 'join' cost[1]: must be positive",
    ),
    (
        "negative selectivity",
        lambda d: d["operators"][1].update(selectivity=-0.5),
        "operator 'filter' selectivity: must not be negative",
    ),
    (
        "text capacity",
        lambda d: d["nodes"][0].update(capacity="fast"),
        "node 'n1' capacity: expected a number",
    ),
    ("no nodes", lambda d: d.update(nodes=[]), "at least one node"),
    ("zero subinterval", lambda d: d.update(subinterval=0), "subinterval: must be positive"),
    (
        "link to unknown node",
        lambda d: d.update(links=[{"from": "n1", "to": "n7"}]),
        "links[0]: unknown node 'n7'",
    ),
    (
        "link bandwidth",
        lambda d: d.update(links=[{"from": "n1", "to": "n2", "bandwidth": 0}]),
        "link n1->n2 bandwidth: must be positive",
    ),
    (
        "unknown model",
        lambda d: d["operators"][2].update(model="cubic"),
        "operator 'join': unknown model 'cubic'",
    ),
]


@pytest.mark.parametrize(("mutate", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_invalid_topology_names_entry(mutate: Any, message: str) -> None:
    with pytest.raises(ModelError, match=None) as info:
        topology_from_dict(broken(mutate))
    assert message in str(info.value)


def test_valid_topology_round_trips() -> None:
    topology = chain()
    again = topology_from_dict(topology.to_dict())
    assert again == topology
    assert topology.sinks == ("join",)
    assert topology.queries == ("q1", "q2")
    assert topology.topological_order == ("parse", "filter", "join")


def test_yaml_uses_safe_loader() -> None:
    text = "!!python/object/apply:os.system ['echo unsafe']"
    with pytest.raises(ModelError, match="not valid YAML"):
        topology_from_text(text)


def test_json_topology_file(tmp_path: Path) -> None:
    import json

    path = tmp_path / "t.json"
    path.write_text(json.dumps(chain_document()))
    assert load_topology(path) == chain()
    path.write_text("{not json")
    with pytest.raises(ModelError, match=r"t\.json: not valid JSON"):
        load_topology(path)


def test_topology_file_errors_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text("nodes: 3\n")
    with pytest.raises(ModelError, match=r"t\.yaml: topology: 'nodes' must be a list"):
        load_topology(path)


ARRIVAL_CASES = [
    (
        "missing column",
        pd.DataFrame({"source": ["a"], "interval": [0]}),
        "missing column(s) events",
    ),
    (
        "negative events",
        pd.DataFrame({"source": ["a"], "interval": [0], "events": [-1]}),
        "row 1: events must not be negative",
    ),
    (
        "nan events",
        pd.DataFrame({"source": ["a", "a"], "interval": [0, 1], "events": [1, float("nan")]}),
        "row 2: 'events' is not a finite number",
    ),
    (
        "fractional interval",
        pd.DataFrame({"source": ["a"], "interval": [0.5], "events": [1]}),
        "row 1: interval must be a non-negative integer",
    ),
    (
        "text interval",
        pd.DataFrame({"source": ["a"], "interval": ["x"], "events": [1]}),
        "row 1: 'interval' is not a finite number",
    ),
    (
        "unknown source",
        pd.DataFrame({"source": ["zz"], "interval": [0], "events": [1]}),
        "unknown source 'zz'",
    ),
    ("empty", pd.DataFrame({"source": [], "interval": [], "events": []}), "no rows"),
]


@pytest.mark.parametrize(
    ("frame", "message"), [c[1:] for c in ARRIVAL_CASES], ids=[c[0] for c in ARRIVAL_CASES]
)
def test_invalid_arrivals(frame: pd.DataFrame, message: str) -> None:
    with pytest.raises(ModelError) as info:
        arrivals_from_frame(frame, chain())
    assert message in str(info.value)


def test_arrivals_csv_and_parquet(tmp_path: Path) -> None:
    frame = pd.DataFrame({"source": ["b", "a", "a"], "interval": [2, 0, 2], "events": [5, 1, 3]})
    frame.to_csv(tmp_path / "arr.csv", index=False)
    frame.to_parquet(tmp_path / "arr.parquet")
    for name in ("arr.csv", "arr.parquet"):
        arrivals = load_arrivals(tmp_path / name, chain())
        assert arrivals.sources == ("a", "b")
        assert arrivals.counts.tolist() == [[1, 0, 3], [0, 0, 5]]
    (tmp_path / "bad.parquet").write_bytes(b"not parquet")
    with pytest.raises(ModelError, match=r"bad\.parquet: cannot read arrivals"):
        load_arrivals(tmp_path / "bad.parquet", chain())
