"""The operator graph (Cytoscape elements, stylesheet and legend), built by pure functions.

Operators sit inside their machine: each node of the deployment is a compound node
(a labelled box) holding its operators. Positions are computed here (a ``preset``
layout, no extra JavaScript): operators flow top to bottom in layers (an operator sits
below every input), at most a few side by side per machine, and the machines are
tiled in a grid. The layer width and the grid are chosen so that the whole graph fits
the box it is drawn in at about 1:1, which keeps the 12 px labels readable for the 75
operators of a five-query run; bigger graphs are fitted smaller and the labels come
back when zooming in.

Each element carries a colour and a label per colour mode (by node, by utilisation,
by share of a backlog, by what-if change), so switching modes only swaps the
stylesheet: no redraw, no new layout, the user's zoom stays.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dashboard.figures import DRAINED, NO_SHARE, node_colors, share_color
from estimator.model import Topology

NODE = "node"
UTILISATION = "utilisation"
BLAME = "blame"
CHANGE = "change"
MODE_LABELS = {
    NODE: "node",
    UTILISATION: "utilisation",
    BLAME: "share of the backlog",
    CHANGE: "what-if change",
}
"""The colour modes and the selector's text for each."""

FONT = 12  # labels, in model units (pixels at zoom 1)
SIZE = 18  # an operator's circle
LINE = 14  # height of one label line (13.3 measured)
CHAR = 6.0  # width of an average character of the label font (5.8 measured)
MAX_CHARS = 16  # a label line wraps after this many characters
LABEL_GAP = 5  # between a circle and its label (on its right)
GAP_X = 14
GAP_Y = 8
PAD = 10  # inside a machine's box (the Cytoscape "padding" of compound nodes)
MACHINE_LABEL = 2 * LINE + 8  # room above a box for its two-line label
MACHINE_GAP = 24  # between boxes
SOURCE_BAND = SIZE + 14  # room above a row of boxes for its sources
MAX_WIDTH = 6  # operators side by side in one machine and layer, at most
FIT_PADDING = 20
MIN_ZOOM = 0.2
MAX_ZOOM = 3.0
LAYOUT = {"name": "preset", "fit": True, "padding": FIT_PADDING, "animate": False}
"""Positions come with the elements; fitting them to the box happens on every draw."""

NEUTRAL = "#d9d9d9"
NEUTRAL_BORDER = "#9e9e9e"
MOVED = "#ff7f0e"
UTILISATION_STOPS = (
    (0.0, (217, 240, 211)),
    (0.6, (254, 224, 139)),
    (1.0, (244, 109, 67)),
    (1.5, (165, 0, 38)),
)
"""Utilisation (load over capacity) to colour: pale green when idle, orange at
capacity, dark red from 150% (more work arrives than the node can do)."""


@dataclass(frozen=True)
class Frame:
    """The box the graph is drawn in, in pixels. Its size is fixed: Cytoscape fits the
    graph to its box when the elements arrive, and a box resized at the same time is
    measured late (the fit would use the old size)."""

    width: float
    height: float

    @property
    def style(self) -> dict[str, str]:
        return {"width": "100%", "height": f"{self.height:.0f}px"}


WIDE = Frame(1360, 820)  # a full-width card (Overview)
EDITOR = Frame(900, 760)  # two thirds of the page (What-if editor)


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


def _hex(rgb: Sequence[float]) -> str:
    r, g, b = (round(c) for c in rgb)
    return f"#{r:02x}{g:02x}{b:02x}"


def utilisation_color(value: float) -> str:
    """The colour of a utilisation (1.0 = the node's capacity) on :data:`UTILISATION_STOPS`."""
    u = min(max(float(value), 0.0), UTILISATION_STOPS[-1][0]) if math.isfinite(value) else 0.0
    for (u0, c0), (u1, c1) in itertools.pairwise(UTILISATION_STOPS):
        if u <= u1:
            t = (u - u0) / (u1 - u0)
            return _hex([a + t * (b - a) for a, b in zip(c0, c1, strict=True)])
    return _hex(UTILISATION_STOPS[-1][1])


def wrap(text: str, width: int = MAX_CHARS) -> list[str]:
    """``text`` in lines of at most ``width`` characters, broken after ``_``, ``-``,
    ``.`` or a space where possible (identifiers such as ``q1_extract_demographics``)."""
    tokens: list[str] = []
    current = ""
    for char in text:
        current += char
        if char in "_-. ":
            tokens.append(current)
            current = ""
    if current:
        tokens.append(current)
    lines: list[str] = []
    line = ""
    for token in tokens:
        while len(token) > width:  # a long word: cut it
            if line:
                lines.append(line)
                line = ""
            lines.append(token[:width])
            token = token[width:]
        if len(line) + len(token) > width and line:
            lines.append(line)
            line = ""
        line += token
    if line:
        lines.append(line)
    return [ln.rstrip() for ln in lines] or [""]


# ---------------------------------------------------------------------------
# Layout
# ---------------------------------------------------------------------------


@dataclass
class _Plan:
    """Layers and slots for one width: operator -> (layer, column), per machine."""

    width: int
    cell: dict[str, tuple[int, int]] = field(default_factory=dict)
    span: dict[str, tuple[int, int]] = field(default_factory=dict)  # machine -> layers
    columns: dict[str, int] = field(default_factory=dict)  # machine -> columns used


def _plan(topology: Topology, placement: Mapping[str, str], width: int) -> _Plan:
    """Each operator one layer below all of its inputs (sources are above layer 0),
    at most ``width`` operators of a machine per layer (the rest move down)."""
    plan = _Plan(width)
    used: dict[tuple[str, int], int] = {}
    by_id = topology.operator_by_id
    for op_id in topology.topological_order:
        layer = max((plan.cell[i][0] + 1 for i in by_id[op_id].inputs if i in plan.cell), default=0)
        machine = placement[op_id]
        while used.get((machine, layer), 0) >= width:
            layer += 1
        column = used.get((machine, layer), 0)
        used[(machine, layer)] = column + 1
        plan.cell[op_id] = (layer, column)
        lo, hi = plan.span.get(machine, (layer, layer))
        plan.span[machine] = (min(lo, layer), max(hi, layer))
        plan.columns[machine] = max(plan.columns.get(machine, 0), column + 1)
    return plan


@dataclass(frozen=True)
class _Sizes:
    slot_w: float
    slot_h: float
    label_w: Mapping[str, float]  # each machine's label width


@dataclass(frozen=True)
class _Arrangement:
    plan: _Plan
    per_row: int
    width: float
    height: float

    def zoom(self, frame: Frame) -> float:
        """The zoom that fits the drawing into the frame (never above 1: a small graph
        is not blown up)."""
        usable_w = frame.width - 2 * FIT_PADDING
        usable_h = frame.height - 2 * FIT_PADDING
        return min(usable_w / max(self.width, 1.0), usable_h / max(self.height, 1.0), 1.0)


def _rows(machines: Sequence[str], per_row: int) -> list[list[str]]:
    return [list(machines[k : k + per_row]) for k in range(0, len(machines), per_row)]


def _row_layers(row: Sequence[str], plan: _Plan) -> int:
    """Layers of the tallest box in a grid row (each box starts at its own first layer:
    the part of a query on a later machine is not drawn below an empty top)."""
    return max((hi - lo + 1 for m in row if m in plan.span for lo, hi in [plan.span[m]]), default=1)


def _box_width(machine: str, plan: _Plan, sizes: _Sizes) -> float:
    """The outer width of a machine's box: its columns of operators, or its label."""
    inner = max(plan.columns.get(machine, 1) * sizes.slot_w - GAP_X, sizes.label_w[machine])
    return inner + 2 * PAD


def _row_height(layers: int, sizes: _Sizes) -> float:
    return SOURCE_BAND + MACHINE_LABEL + 2 * PAD + layers * sizes.slot_h - GAP_Y


def _measure(machines: Sequence[str], plan: _Plan, per_row: int, sizes: _Sizes) -> _Arrangement:
    width = height = 0.0
    rows = _rows(machines, per_row)
    for row in rows:
        row_w = sum(_box_width(m, plan, sizes) for m in row) + MACHINE_GAP * (len(row) - 1)
        width = max(width, row_w)
        height += _row_height(_row_layers(row, plan), sizes)
    return _Arrangement(plan, per_row, width, height + MACHINE_GAP * (len(rows) - 1))


def _grid_widths(machines: int) -> list[int]:
    """Machines per grid row to try: every count up to 40, then a few (a graph of more
    machines is not read box by box anyway)."""
    counts = set(range(1, min(machines, 40) + 1))
    counts.update({machines, round(math.sqrt(machines) * 2)} if machines > 40 else set())
    return sorted(counts, reverse=True) or [1]


def _arrange(
    topology: Topology,
    placement: Mapping[str, str],
    machines: Sequence[str],
    sizes: _Sizes,
    frame: Frame,
) -> _Arrangement:
    """The layer width and machines per grid row that show the graph largest in
    ``frame`` (up to zoom 1), then least tall, then in the fewest rows."""
    natural = _plan(topology, placement, max(len(topology.operators), 1))
    widest = max(natural.columns.values(), default=1)
    best: tuple[tuple[float, float, int], _Arrangement] | None = None
    for width in range(min(widest, MAX_WIDTH), 0, -1):
        plan = natural if width >= widest else _plan(topology, placement, width)
        for per_row in _grid_widths(len(machines)):
            arrangement = _measure(machines, plan, per_row, sizes)
            zoom = arrangement.zoom(frame)
            score = (round(zoom, 2), -round(arrangement.height * zoom), per_row)
            if best is None or score > best[0]:
                best = (score, arrangement)
    assert best is not None
    return best[1]


# ---------------------------------------------------------------------------
# Elements
# ---------------------------------------------------------------------------


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
    sizes = _Sizes(
        SIZE + LABEL_GAP + max(longest, 10) * CHAR + GAP_X,
        max(SIZE, lines * LINE) + GAP_Y,
        {
            m: max(len(line) for t in machine_labels[m].values() for line in t.split("\n")) * CHAR
            for m in machines
        },
    )
    arrangement = _arrange(topology, placement, machines, sizes, frame)
    plan = arrangement.plan

    elements: list[dict[str, Any]] = []
    position: dict[str, tuple[float, float]] = {}
    row_of: dict[str, int] = {}  # machine -> grid row
    row_top: list[float] = []
    top = 0.0
    by_machine: dict[str, list[str]] = {m: [] for m in machines}
    for op in topology.operators:
        by_machine[placement[op.id]].append(op.id)
    for r, row in enumerate(_rows(machines, arrangement.per_row)):
        row_top.append(top)
        ops_top = top + SOURCE_BAND + MACHINE_LABEL + PAD
        left = 0.0
        for machine in row:
            row_of[machine] = r
            box = _box_width(machine, plan, sizes)
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
        top += _row_height(_row_layers(row, plan), sizes) + MACHINE_GAP

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
    upstream: str, downstream: str, plan: _Plan, placement: Mapping[str, str]
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
    arrangement: _Arrangement, frame: Frame, modes: Sequence[str]
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


# ---------------------------------------------------------------------------
# Style and legend
# ---------------------------------------------------------------------------


def stylesheet(mode: str) -> list[dict[str, Any]]:
    """The Cytoscape stylesheet of colour mode ``mode`` (every element carries the
    data fields it reads)."""
    return [
        {
            "selector": "node",
            "style": {
                "label": f"data(label_{mode})",
                "font-size": FONT,
                "text-wrap": "wrap",
                "min-zoomed-font-size": 7,
                "color": "#222",
            },
        },
        {
            "selector": ".operator, .source",
            "style": {
                "background-color": f"data(color_{mode})",
                "width": SIZE,
                "height": SIZE,
                "text-valign": "center",
                "text-halign": "right",
                "text-margin-x": LABEL_GAP,
                "border-width": 1,
                "border-color": "#666",
            },
        },
        {"selector": ".source", "style": {"shape": "diamond"}},
        {
            "selector": ".machine",
            "style": {
                "shape": "round-rectangle",
                "background-color": f"data(color_{mode})",
                "background-opacity": 0.16,
                "border-width": 2,
                "border-color": f"data(border_{mode})",
                "text-valign": "top",
                "text-halign": "center",
                "text-margin-y": -4,
                "font-weight": "bold",
                "padding": f"{PAD}px",
            },
        },
        {
            "selector": ".machine.empty",
            "style": {"width": "data(width)", "height": SIZE * 2, "text-valign": "center"},
        },
        *(
            [{"selector": ".machine.added", "style": {"border-style": "dashed", "border-width": 3}}]
            if mode == CHANGE
            else []
        ),
        {
            "selector": ".selected",
            "style": {
                "border-width": 4,
                "border-color": "#000",
                "width": SIZE + 6,
                "height": SIZE + 6,
            },
        },
        {"selector": ".frame", "style": {"opacity": 0, "events": "no", "width": 1, "height": 1}},
        {
            "selector": "edge",
            "style": {
                "curve-style": "unbundled-bezier",
                "control-point-distances": "data(bow)",
                "control-point-weights": 0.5,
                "target-arrow-shape": "triangle",
                "width": 1.5,
                "line-color": "#b0b0b0",
                "target-arrow-color": "#b0b0b0",
                "arrow-scale": 0.9,
            },
        },
    ]


@dataclass(frozen=True)
class LegendItem:
    """One entry of a graph legend: a swatch (``color``; a ``gradient`` of colours for
    a scale) and its text."""

    text: str
    color: str = ""
    gradient: tuple[str, ...] = ()
    after: str = ""  # the text at the end of a gradient
    dashed: bool = False


def legend(mode: str, elements: Sequence[Mapping[str, Any]]) -> list[LegendItem]:
    """What the colours of ``mode`` mean on the graph ``elements``."""
    if mode == NODE:
        return [
            LegendItem(e["data"]["machine"], e["data"][f"color_{NODE}"])
            for e in elements
            if e.get("data", {}).get("kind") == "machine"
        ] + [LegendItem("source", NEUTRAL)]
    if mode == UTILISATION:
        stops = tuple(utilisation_color(u) for u in (0.0, 0.3, 0.6, 0.8, 1.0, 1.25, 1.5))
        return [
            LegendItem("0%", gradient=stops, after="150% and more"),
            LegendItem(
                "mean load over capacity (DLTS / C·w); above 100% more work arrives than "
                "the node can do, so its backlog grows"
            ),
        ]
    if mode == BLAME:
        return [
            LegendItem(
                "small share",
                gradient=tuple(share_color(t / 4) for t in range(5)),
                after="the whole backlog",
            ),
            LegendItem("no share", NO_SHARE),
            LegendItem("drained part of a path's lag (negative share)", DRAINED),
            LegendItem("the bottleneck node, or the critical path's nodes (red border)"),
        ]
    if mode == CHANGE:
        return [
            LegendItem("moved by the scenario (label: where from)", MOVED),
            LegendItem("where it is now", NEUTRAL),
            LegendItem("new node", dashed=True, color=MOVED),
        ]
    return []


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
