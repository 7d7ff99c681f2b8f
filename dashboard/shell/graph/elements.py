"""The operator graph as Cytoscape elements: machines, operators, sources and edges,
coloured per mode."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dashboard.shell.graph.geometry import (
    CHAR,
    EDITOR,
    FIT_PADDING,
    GAP_X,
    GAP_Y,
    LABEL_GAP,
    LINE,
    MACHINE_GAP,
    MACHINE_LABEL,
    PAD,
    SIZE,
    SOURCE_BAND,
    Arrangement,
    Frame,
    Plan,
    Sizes,
    arrange,
    box_width,
    machine_rows,
    row_height,
    row_layers,
    wrap,
)
from dashboard.shell.graph.style import (
    BLAME,
    CHANGE,
    MOVED,
    NEUTRAL,
    NEUTRAL_BORDER,
    NODE,
    UTILISATION,
    utilisation_color,
)
from dashboard.shell.theme import DRAINED, NO_SHARE, node_colors, share_color
from estimator.model import Topology


@dataclass(frozen=True)
class Graph:
    """The elements to draw and the zoom at which they fill their ``Frame``."""

    elements: list[dict[str, Any]]
    zoom: float


@dataclass(frozen=True)
class Utilisation:
    """Each node's load over its capacity (DLTS / (C * w)), mean and peak over the
    subintervals shown."""

    mean: Mapping[str, float]
    peak: Mapping[str, float]


@dataclass(frozen=True)
class Shares:
    """A backlog of ``total`` seconds (CE/C) on ``resource``, split among operators and
    sources (seconds each). For a path-aware explanation, ``path`` lists every node of
    the critical path (``resource`` is its dominant one), and a share may be negative:
    a node that drained part of the path's lag."""

    resource: str
    total: float
    operators: Mapping[str, float]
    sources: Mapping[str, float]
    path: tuple[str, ...] = ()

    def explains(self, machine: str) -> bool:
        """Whether ``machine`` is a node this backlog is explained on."""
        return self.total > 0 and (machine == self.resource or machine in self.path)


@dataclass(frozen=True)
class Baseline:
    """The current deployment a what-if scenario changes: placement and capacities."""

    placement: Mapping[str, str]
    capacities: Mapping[str, float]


@dataclass(frozen=True)
class Colouring:
    """What the graph can be coloured by (None: that mode is not offered)."""

    utilisation: Utilisation | None = None
    shares: Shares | None = None
    baseline: Baseline | None = None
    selected: str | None = None

    @property
    def modes(self) -> tuple[str, ...]:
        present = {
            NODE: True,
            UTILISATION: self.utilisation is not None,
            BLAME: self.shares is not None,
            CHANGE: self.baseline is not None,
        }
        return tuple(mode for mode, on in present.items() if on)


def utilisation(
    node_ids: Sequence[str], dlts: np.ndarray, capacities: Sequence[float] | np.ndarray, w: float
) -> Utilisation:
    """Mean and peak of DLTS / (C * w) per node (rows of ``dlts`` in ``node_ids``
    order); NaN subintervals (no data) are skipped, a node without data gets 0."""
    matrix = np.asarray(dlts, dtype=float).reshape(len(node_ids), -1)
    service = np.asarray(capacities, dtype=float) * w
    load = matrix / service[:, None]
    mean: dict[str, float] = {}
    peak: dict[str, float] = {}
    for k, node in enumerate(node_ids):
        row = load[k][np.isfinite(load[k])]
        mean[node] = float(row.mean()) if row.size else 0.0
        peak[node] = float(row.max()) if row.size else 0.0
    return Utilisation(mean, peak)


def _percent(value: float) -> str:
    return f"{value:.0%}"


def _machine_labels(
    machine: str, capacity: float, colouring: Colouring, count: int
) -> dict[str, str]:
    """A machine's label per mode: its name, and a line of what the mode shows."""
    ops = "1 op" if count == 1 else f"{count} ops"
    labels = {NODE: f"{machine}\ncapacity {capacity:g} · {ops}"}
    if colouring.utilisation is not None:
        mean = colouring.utilisation.mean.get(machine, 0.0)
        peak = colouring.utilisation.peak.get(machine, 0.0)
        labels[UTILISATION] = f"{machine}\nmean {_percent(mean)} · peak {_percent(peak)}"
    if colouring.shares is not None:
        shares = colouring.shares
        if shares.path and shares.explains(machine):
            labels[BLAME] = f"{machine}\non the critical path"
        elif shares.explains(machine):
            labels[BLAME] = f"{machine}\nbottleneck: {shares.total:.3f} s"
        else:
            labels[BLAME] = machine
    if colouring.baseline is not None:
        before = colouring.baseline.capacities.get(machine)
        if before is None:
            labels[CHANGE] = f"{machine}\nnew · capacity {capacity:g}"
        elif before != capacity:
            labels[CHANGE] = f"{machine}\ncapacity {before:g} → {capacity:g}"
        else:
            labels[CHANGE] = f"{machine}\nunchanged"
    return labels


def _machine_colors(
    machine: str, capacity: float, colouring: Colouring, palette: Mapping[str, str]
) -> dict[str, tuple[str, str]]:
    """(fill, border) per mode of a machine's box."""
    colors = {NODE: (palette[machine], palette[machine])}
    if colouring.utilisation is not None:
        c = utilisation_color(colouring.utilisation.mean.get(machine, 0.0))
        colors[UTILISATION] = (c, c)
    if colouring.shares is not None:
        hot = colouring.shares.explains(machine)
        colors[BLAME] = (NEUTRAL, share_color(1.0) if hot else NEUTRAL_BORDER)
    if colouring.baseline is not None:
        changed = colouring.baseline.capacities.get(machine) != capacity
        colors[CHANGE] = (NEUTRAL, MOVED if changed else NEUTRAL_BORDER)
    return colors


def _share_text(seconds: float, total: float) -> str:
    return f"{seconds:.3f} s · {seconds / total:.0%}"


def _vertex_modes(
    vertex: str,
    base: list[str],
    machine: str | None,
    colouring: Colouring,
    palette: Mapping[str, str],
) -> tuple[dict[str, str], dict[str, str]]:
    """(colour, label) per mode of an operator (on ``machine``) or a source (None)."""
    text = "\n".join(base)
    color = {NODE: palette[machine] if machine else NEUTRAL}
    label = {NODE: text}
    if colouring.utilisation is not None:
        value = colouring.utilisation.mean.get(machine, 0.0) if machine else None
        color[UTILISATION] = NEUTRAL if value is None else utilisation_color(value)
        label[UTILISATION] = text
    shares = colouring.shares
    if shares is not None:
        table = shares.operators if machine else shares.sources
        seconds = float(table.get(vertex, 0.0))
        if seconds > 0 and shares.total > 0:
            color[BLAME] = share_color(seconds / shares.total)
            label[BLAME] = f"{text}\n{_share_text(seconds, shares.total)}"
        elif seconds < 0 and shares.total > 0:
            color[BLAME] = DRAINED
            label[BLAME] = f"{text}\n{_share_text(seconds, shares.total)}"
        else:
            color[BLAME], label[BLAME] = NO_SHARE, text
    baseline = colouring.baseline
    if baseline is not None:
        before = baseline.placement.get(vertex) if machine else None
        moved = machine is not None and before != machine
        color[CHANGE] = MOVED if moved else NEUTRAL
        origin = "new" if before is None else f"from {before}"
        label[CHANGE] = f"{text}\n{origin}" if moved else text
    return color, label


def _data(kind: str, ident: str, color: Mapping, label: Mapping, **extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"id": ident, "kind": kind, **extra}
    for mode in color:
        data[f"color_{mode}"] = color[mode]
        data[f"label_{mode}"] = label[mode]
    return data


def operator_graph(
    topology: Topology,
    placement: Mapping[str, str],
    colouring: Colouring = Colouring(),
    frame: Frame = EDITOR,
) -> Graph:
    """Cytoscape elements: a box per machine holding its operators, the sources above,
    the edges, with positions that fit ``frame`` and a colour and a label per colour
    mode of ``colouring``. Operator data has ``node``
    (its machine) and ``query``; machine boxes have ``machine``."""
    machines = list(topology.node_ids)
    palette = node_colors(machines)
    modes = colouring.modes
    looks = {  # vertex -> (colour, label) per mode
        v: _vertex_modes(v, wrap(v), placement.get(v), colouring, palette)
        for v in (*topology.source_ids, *topology.operator_ids)
    }
    texts = [t for _, label in looks.values() for t in label.values()]
    lines = max((t.count("\n") + 1 for t in texts), default=1)
    longest = max((len(line) for t in texts for line in t.split("\n")), default=4)
    counts = dict.fromkeys(machines, 0)
    for op in topology.operators:
        counts[placement[op.id]] += 1
    capacity = topology.capacity_by_node
    machine_labels = {m: _machine_labels(m, capacity[m], colouring, counts[m]) for m in machines}
    sizes = Sizes(
        SIZE + LABEL_GAP + max(longest, 10) * CHAR + GAP_X,
        max(SIZE, lines * LINE) + GAP_Y,
        {
            m: max(len(line) for t in machine_labels[m].values() for line in t.split("\n")) * CHAR
            for m in machines
        },
    )
    arrangement = arrange(topology, placement, machines, sizes, frame)
    plan = arrangement.plan

    elements: list[dict[str, Any]] = []
    position: dict[str, tuple[float, float]] = {}
    row_of: dict[str, int] = {}  # machine -> grid row
    row_top: list[float] = []
    top = 0.0
    by_machine: dict[str, list[str]] = {m: [] for m in machines}
    for op in topology.operators:
        by_machine[placement[op.id]].append(op.id)
    for r, row in enumerate(machine_rows(machines, arrangement.per_row)):
        row_top.append(top)
        ops_top = top + SOURCE_BAND + MACHINE_LABEL + PAD
        left = 0.0
        for machine in row:
            row_of[machine] = r
            box = box_width(machine, plan, sizes)
            used = plan.columns.get(machine, 0) * sizes.slot_w - GAP_X
            inner_left = left + PAD + max(box - 2 * PAD - used, 0.0) / 2
            entry = _machine_element(machine, capacity[machine], colouring, palette, machine_labels)
            if not counts[machine]:  # a compound node takes its place from its children
                entry["classes"] += " empty"
                entry["data"]["width"] = round(box - 2 * PAD)
                entry["position"] = _xy((left + box / 2, ops_top + SIZE / 2))
            elements.append(entry)
            for op_id in by_machine[machine]:
                layer, column = plan.cell[op_id]
                position[op_id] = (
                    inner_left + column * sizes.slot_w + SIZE / 2,
                    ops_top + (layer - plan.span[machine][0]) * sizes.slot_h + SIZE / 2,
                )
            left += box + MACHINE_GAP
        top += row_height(row_layers(row, plan), sizes) + MACHINE_GAP

    # sources: above the row of their first consumer, over their consumers there
    wanted: dict[int, list[tuple[float, str]]] = {}
    for source in topology.source_ids:
        consumers = [op for op, _ in topology.downstream[source]]
        if not consumers:  # read by no operator: first in the top row
            wanted.setdefault(0, []).append((0.0, source))
            continue
        r = min(row_of[placement[c]] for c in consumers)
        xs = [position[c][0] for c in consumers if row_of[placement[c]] == r]
        wanted.setdefault(r, []).append((min(xs), source))
    for r, items in wanted.items():
        last = -math.inf
        for x, source in sorted(items):
            x = max(x, last + sizes.slot_w)
            position[source] = (x, row_top[r] + SIZE / 2)
            last = x

    for source in topology.source_ids:
        color, label = looks[source]
        elements.append(
            {
                "data": _data("source", source, color, label),
                "classes": "source",
                "position": _xy(position[source]),
            }
        )
    for op in topology.operators:
        machine = placement[op.id]
        color, label = looks[op.id]
        data = _data("operator", op.id, color, label, node=machine, query=op.query)
        elements.append(
            {
                "data": {**data, "parent": f"machine:{machine}"},
                "classes": "operator selected" if op.id == colouring.selected else "operator",
                "position": _xy(position[op.id]),
            }
        )
    for op in topology.operators:
        for upstream in dict.fromkeys(op.inputs):
            elements.append(_edge(upstream, op.id, plan, placement))
    zoom = arrangement.zoom(frame)
    if zoom >= 1.0:  # a small graph: keep it at zoom 1 in its box
        elements.extend(_frame_anchors(arrangement, frame, modes))
    return Graph(elements, zoom)


def _machine_element(
    machine: str,
    capacity: float,
    colouring: Colouring,
    palette: Mapping[str, str],
    labels: Mapping[str, Mapping[str, str]],
) -> dict[str, Any]:
    colors = _machine_colors(machine, capacity, colouring, palette)
    data = _data(
        "machine",
        f"machine:{machine}",
        {m: c[0] for m, c in colors.items()},
        labels[machine],
        machine=machine,
        **{f"border_{m}": c[1] for m, c in colors.items()},
    )
    added = colouring.baseline is not None and machine not in colouring.baseline.capacities
    return {"data": data, "classes": "machine added" if added else "machine"}


def _edge(
    upstream: str, downstream: str, plan: Plan, placement: Mapping[str, str]
) -> dict[str, Any]:
    """An edge; one that skips layers down a column bows to the left, clear of the
    operators it passes."""
    bow = 0.0
    if upstream in plan.cell and placement[upstream] == placement[downstream]:
        (l0, c0), (l1, c1) = plan.cell[upstream], plan.cell[downstream]
        if c0 == c1 and l1 - l0 > 1:
            bow = 10.0 + 6.0 * (l1 - l0)
    return {
        "data": {
            "id": f"{upstream}->{downstream}",
            "source": upstream,
            "target": downstream,
            "bow": bow,
        }
    }


def _xy(point: tuple[float, float]) -> dict[str, float]:
    return {"x": round(point[0], 1), "y": round(point[1], 1)}


def _frame_anchors(
    arrangement: Arrangement, frame: Frame, modes: Sequence[str]
) -> list[dict[str, Any]]:
    """Two invisible corners of a ``frame``-sized box around the drawing, so that
    fitting a small graph into its box does not blow it up past zoom 1."""
    half_w = max(frame.width - 2 * FIT_PADDING, arrangement.width) / 2
    half_h = max(frame.height - 2 * FIT_PADDING, arrangement.height) / 2
    cx, cy = arrangement.width / 2, arrangement.height / 2
    blank = dict.fromkeys(modes, "#ffffff")
    empty = dict.fromkeys(modes, "")
    return [
        {
            "data": _data("frame", f"frame:{k}", blank, empty),
            "classes": "frame",
            "position": _xy((cx + sx * half_w, cy + sy * half_h)),
            "selectable": False,
            "grabbable": False,
        }
        for k, (sx, sy) in enumerate(((-1, -1), (1, 1)))
    ]


@dataclass(frozen=True)
class Tap:
    """What a tap on the graph picked (``tapNodeData``): an operator, or a machine box."""

    operator: str | None = None
    machine: str | None = None


def tapped(data: Mapping[str, Any] | None) -> Tap:
    """The operator or the machine of a tapped element (a source or anything else:
    neither)."""
    if not isinstance(data, Mapping):
        return Tap()
    kind, ident, machine = data.get("kind"), data.get("id"), data.get("machine")
    if kind == "operator" and isinstance(ident, str):
        return Tap(operator=ident)
    if kind == "machine" and isinstance(machine, str):
        return Tap(machine=machine)
    return Tap()
