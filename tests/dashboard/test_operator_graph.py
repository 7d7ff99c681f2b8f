"""The operator graph's elements, layout, colour modes and legend as plain functions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashboard.shell.graph import elements as graph_elements
from dashboard.shell.graph import geometry, style
from dashboard.shell.theme import NO_SHARE, node_colors, share_color
from estimator.model import Topology, topology_from_dict
from simulator.workloads import workload_model
from tests.dashboard.builders import SMALL_TOPOLOGY

Element = Mapping[str, Any]


def by_kind(elements: Sequence[Element], kind: str) -> dict[str, Element]:
    return {e["data"]["id"]: e for e in elements if e["data"].get("kind") == kind}


def edges(elements: Sequence[Element]) -> set[tuple[str, str]]:
    return {(e["data"]["source"], e["data"]["target"]) for e in elements if "source" in e["data"]}


def test_operators_sit_inside_their_machine() -> None:
    topology = topology_from_dict(SMALL_TOPOLOGY)
    graph = graph_elements.operator_graph(
        topology, topology.placement, graph_elements.Colouring(selected="a")
    )
    machines = by_kind(graph.elements, "machine")
    operators = by_kind(graph.elements, "operator")
    assert set(machines) == {"machine:n1", "machine:n2"}
    assert machines["machine:n2"]["data"]["label_node"] == "n2\ncapacity 2 · 2 ops"
    assert {op: e["data"]["parent"] for op, e in operators.items()} == {
        "a": "machine:n2",
        "b": "machine:n2",
        "c": "machine:n1",
    }
    assert operators["a"]["data"]["node"] == "n2" and operators["a"]["data"]["query"] == "q1"
    assert "selected" in operators["a"]["classes"] and "selected" not in operators["b"]["classes"]
    colors = node_colors(topology.node_ids)
    assert operators["a"]["data"]["color_node"] == colors["n2"] != colors["n1"]
    assert by_kind(graph.elements, "source")["s"]["data"]["label_node"] == "s"
    assert edges(graph.elements) == {("s", "a"), ("a", "b"), ("s", "c")}
    # a small graph is not blown up: two invisible corners keep the fit at zoom 1
    assert graph.zoom == 1.0 and len(by_kind(graph.elements, "frame")) == 2


def test_clickstream_5q_is_readable_in_the_editor_and_the_overview() -> None:
    """The issue's run: 70 operators and 5 sources on 5 nodes fit their boxes at a zoom
    that renders the 12 px labels at 11 px or more (the browser test measures it)."""
    topology, _ = workload_model("clickstream-5q")
    assert len(topology.operators) == 70 and len(topology.node_ids) == 5
    for frame in (geometry.EDITOR, geometry.WIDE):
        graph = graph_elements.operator_graph(
            topology, topology.placement, graph_elements.Colouring(), frame
        )
        assert geometry.FONT * graph.zoom >= 11
        assert len(by_kind(graph.elements, "machine")) == 5
        assert len(by_kind(graph.elements, "operator")) == 70


def test_labels_wrap_at_separators() -> None:
    assert geometry.wrap("q1_extract_demographics", 16) == ["q1_extract_", "demographics"]
    assert geometry.wrap("q1_join", 16) == ["q1_join"]
    assert geometry.wrap("averyveryverylongname", 8) == ["averyver", "yverylon", "gname"]


@given(st.text(alphabet="ab_-. ", min_size=1, max_size=60), st.integers(1, 20))
def test_wrapped_lines_are_short_and_keep_the_text(text: str, width: int) -> None:
    lines = geometry.wrap(text, width)
    assert all(len(line) <= width for line in lines)
    # only the spaces a line ends with are dropped
    assert "".join(lines).replace(" ", "") == text.replace(" ", "")


@st.composite
def topologies(draw: st.DrawFn) -> Topology:
    """Random DAGs: each operator reads one to three earlier operators or sources, on
    one of up to six nodes."""
    sources = [f"s{k}" for k in range(draw(st.integers(1, 3)))]
    nodes = [f"n{k}" for k in range(draw(st.integers(1, 6)))]
    operators: list[dict[str, Any]] = []
    for k in range(draw(st.integers(1, 40))):
        upstream = sources + [o["id"] for o in operators]
        inputs = draw(st.lists(st.sampled_from(upstream), min_size=1, max_size=3, unique=True))
        ops = {"id": f"op{k}", "query": f"q{k % 3}", "inputs": inputs}
        operators.append({**ops, "cost": [0.1] * len(inputs), "selectivity": [1.0] * len(inputs)})
    placement = {o["id"]: draw(st.sampled_from(nodes)) for o in operators}
    return topology_from_dict(
        {
            "name": "random",
            "subinterval": 1.0,
            "nodes": [{"id": n, "capacity": 1.0} for n in nodes],
            "sources": [{"id": s} for s in sources],
            "operators": operators,
            "placement": placement,
        }
    )


@settings(max_examples=60, deadline=None)
@given(topologies(), st.sampled_from([geometry.EDITOR, geometry.WIDE, geometry.Frame(300, 300)]))
def test_layout_keeps_machines_apart_and_flows_down(
    topology: Topology, frame: geometry.Frame
) -> None:
    """Machines' operators never overlap another machine's, no two vertices share a
    place, and an operator sits below each input on its machine."""
    graph = graph_elements.operator_graph(
        topology, topology.placement, graph_elements.Colouring(), frame
    )
    pos = {e["data"]["id"]: (e["position"]["x"], e["position"]["y"]) for e in graph.elements
           if e["data"].get("kind") in ("operator", "source")}  # fmt: skip
    assert len(set(pos.values())) == len(pos)
    spans: dict[str, tuple[float, float, float, float]] = {}
    for op in topology.operators:
        x, y = pos[op.id]
        x0, x1, y0, y1 = spans.get(topology.placement[op.id], (x, x, y, y))
        spans[topology.placement[op.id]] = (min(x0, x), max(x1, x), min(y0, y), max(y1, y))
    boxes = list(spans.values())
    for k, a in enumerate(boxes):
        for b in boxes[k + 1 :]:
            overlap_x = a[0] <= b[1] and b[0] <= a[1]
            overlap_y = a[2] <= b[3] and b[2] <= a[3]
            assert not (overlap_x and overlap_y)
    for op in topology.operators:
        for upstream in op.inputs:
            if topology.placement.get(upstream) == topology.placement[op.id]:
                assert pos[upstream][1] < pos[op.id][1]
    assert 0 < graph.zoom <= 1.0


def test_a_bigger_graph_is_fitted_smaller_never_past_the_zoom_limits() -> None:
    topology, _ = workload_model("clickstream-5q", nodes=13)
    graph = graph_elements.operator_graph(
        topology, topology.placement, graph_elements.Colouring(), geometry.EDITOR
    )
    assert style.MIN_ZOOM < graph.zoom < 1.0
    assert not by_kind(graph.elements, "frame")


def test_utilisation_is_mean_and_peak_of_load_over_capacity() -> None:
    dlts = np.array([[0.5, 1.5, np.nan], [0.0, 0.0, 0.0]])
    result = graph_elements.utilisation(["n1", "n2"], dlts, [1.0, 2.0], 0.5)
    # n1: 0.5 / 0.5 = 1.0, 1.5 / 0.5 = 3.0 (NaN skipped); n2 idle
    assert result.mean == {"n1": pytest.approx(2.0), "n2": 0.0}
    assert result.peak == {"n1": pytest.approx(3.0), "n2": 0.0}


def test_utilisation_colours_run_from_idle_to_overloaded() -> None:
    assert style.utilisation_color(0.0) == style.utilisation_color(-1.0) == "#d9f0d3"
    assert style.utilisation_color(1.0) == "#f46d43"
    assert style.utilisation_color(1.5) == style.utilisation_color(9.0) == "#a50026"
    assert style.utilisation_color(float("nan")) == style.utilisation_color(0.0)


def test_colour_modes_carry_a_colour_and_label_for_every_element() -> None:
    topology = topology_from_dict(SMALL_TOPOLOGY)  # a, b on n2; c on n1; source s
    moved = {**topology.placement, "c": "n3"}
    scenario = topology_from_dict(
        {
            **SMALL_TOPOLOGY,
            "nodes": [
                {"id": "n1", "capacity": 1.0},
                {"id": "n2", "capacity": 4.0},
                {"id": "n3", "capacity": 1.0},
            ],
            "placement": moved,
        }
    )
    colouring = graph_elements.Colouring(
        utilisation=graph_elements.Utilisation({"n1": 0.0, "n2": 1.0, "n3": 0.5}, {"n2": 2.0}),
        shares=graph_elements.Shares("n2", 0.6, {"a": 0.2, "b": 0.4}, {"s": 0.6}),
        baseline=graph_elements.Baseline(topology.placement, topology.capacity_by_node),
    )
    assert colouring.modes == (style.NODE, style.UTILISATION, style.BLAME, style.CHANGE)
    graph = graph_elements.operator_graph(scenario, moved, colouring)
    for element in graph.elements:
        if "source" in element["data"]:
            continue
        for mode in colouring.modes:
            assert f"color_{mode}" in element["data"] and f"label_{mode}" in element["data"]
    ops = {k: e["data"] for k, e in by_kind(graph.elements, "operator").items()}
    machines = {k: e["data"] for k, e in by_kind(graph.elements, "machine").items()}
    # utilisation: the operator takes its machine's colour, the box says mean and peak
    assert ops["a"]["color_utilisation"] == style.utilisation_color(1.0)
    assert machines["machine:n2"]["label_utilisation"] == "n2\nmean 100% · peak 200%"
    # blame: shares of the 0.6 s backlog on n2, the bottleneck's box outlined
    assert ops["b"]["color_blame"] == share_color(0.4 / 0.6)
    assert ops["b"]["label_blame"] == "b\n0.400 s · 67%"
    assert ops["c"]["color_blame"] == NO_SHARE and ops["c"]["label_blame"] == "c"
    assert machines["machine:n2"]["label_blame"] == "n2\nbottleneck: 0.600 s"
    assert machines["machine:n2"]["border_blame"] == share_color(1.0)
    # change: c moved to the new n3, n2's capacity went from 2 to 4
    assert ops["c"]["color_change"] == style.MOVED and ops["c"]["label_change"] == "c\nfrom n1"
    assert ops["a"]["color_change"] == style.NEUTRAL and ops["a"]["label_change"] == "a"
    assert machines["machine:n3"]["label_change"] == "n3\nnew · capacity 1"
    assert machines["machine:n2"]["label_change"] == "n2\ncapacity 2 → 4"
    assert machines["machine:n1"]["label_change"] == "n1\nunchanged"
    assert "added" in by_kind(graph.elements, "machine")["machine:n3"]["classes"]


def test_an_empty_machine_is_a_box_of_its_own() -> None:
    topology = topology_from_dict(
        {**SMALL_TOPOLOGY, "nodes": [*SMALL_TOPOLOGY["nodes"], {"id": "n3", "capacity": 1.0}]}  # type: ignore[list-item]
    )
    graph = graph_elements.operator_graph(topology, topology.placement)
    empty = by_kind(graph.elements, "machine")["machine:n3"]
    assert "empty" in empty["classes"] and "position" in empty and empty["data"]["width"] > 0
    assert empty["data"]["label_node"] == "n3\ncapacity 1 · 0 ops"


def test_stylesheet_reads_the_chosen_mode() -> None:
    sheet = style.stylesheet(style.UTILISATION)
    styles = {rule["selector"]: rule["style"] for rule in sheet}
    assert styles["node"]["label"] == "data(label_utilisation)"
    assert styles[".operator, .source"]["background-color"] == "data(color_utilisation)"
    assert styles[".machine"]["border-color"] == "data(border_utilisation)"
    assert ".machine.added" not in styles and ".machine.added" in {
        rule["selector"] for rule in style.stylesheet(style.CHANGE)
    }


def test_legend_says_what_each_mode_means() -> None:
    topology = topology_from_dict(SMALL_TOPOLOGY)
    elements = graph_elements.operator_graph(topology, topology.placement).elements
    colors = node_colors(topology.node_ids)
    assert [(i.text, i.color) for i in style.legend(style.NODE, elements)] == [
        ("n1", colors["n1"]),
        ("n2", colors["n2"]),
        ("source", style.NEUTRAL),
    ]
    scale, note = style.legend(style.UTILISATION, elements)
    assert (scale.text, scale.after) == ("0%", "150% and more") and len(scale.gradient) > 2
    assert "backlog grows" in note.text
    assert [i.text for i in style.legend(style.BLAME, elements)][1] == "no share"
    assert style.legend(style.CHANGE, elements)[0].color == style.MOVED


def test_a_tap_picks_an_operator_or_a_machine() -> None:
    """A tapped operator is the one to move, a tapped machine box where to (What-if)."""
    graph = graph_elements.operator_graph(
        topology_from_dict(SMALL_TOPOLOGY), {"a": "n1", "b": "n2", "c": "n1"}
    )
    data = {e["data"]["id"]: e["data"] for e in graph.elements}
    assert graph_elements.tapped(data["a"]) == graph_elements.Tap(operator="a")
    assert graph_elements.tapped(data["machine:n2"]) == graph_elements.Tap(machine="n2")
    assert graph_elements.tapped(data["s"]) == graph_elements.Tap()  # a source moves nowhere
    for other in (None, {}, {"kind": "machine"}, {"kind": "operator", "id": 3}, "a"):
        assert graph_elements.tapped(other) == graph_elements.Tap()  # type: ignore[arg-type]
