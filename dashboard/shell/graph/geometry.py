"""Where the operator graph's boxes, operators and sources go: sizes, label wrapping,
rows of machines."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from estimator.model import Topology

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
FIT_PADDING = 20
MAX_WIDTH = 6  # operators side by side in one machine and layer, at most


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


@dataclass
class Plan:
    """Layers and slots for one width: operator -> (layer, column), per machine."""

    width: int
    cell: dict[str, tuple[int, int]] = field(default_factory=dict)
    span: dict[str, tuple[int, int]] = field(default_factory=dict)  # machine -> layers
    columns: dict[str, int] = field(default_factory=dict)  # machine -> columns used


def _plan(topology: Topology, placement: Mapping[str, str], width: int) -> Plan:
    """Each operator one layer below all of its inputs (sources are above layer 0),
    at most ``width`` operators of a machine per layer (the rest move down)."""
    plan = Plan(width)
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
class Sizes:
    slot_w: float
    slot_h: float
    label_w: Mapping[str, float]  # each machine's label width


@dataclass(frozen=True)
class Arrangement:
    plan: Plan
    per_row: int
    width: float
    height: float

    def zoom(self, frame: Frame) -> float:
        """The zoom that fits the drawing into the frame (never above 1: a small graph
        is not blown up)."""
        usable_w = frame.width - 2 * FIT_PADDING
        usable_h = frame.height - 2 * FIT_PADDING
        return min(usable_w / max(self.width, 1.0), usable_h / max(self.height, 1.0), 1.0)


def machine_rows(machines: Sequence[str], per_row: int) -> list[list[str]]:
    return [list(machines[k : k + per_row]) for k in range(0, len(machines), per_row)]


def row_layers(row: Sequence[str], plan: Plan) -> int:
    """Layers of the tallest box in a grid row (each box starts at its own first layer:
    the part of a query on a later machine is not drawn below an empty top)."""
    return max((hi - lo + 1 for m in row if m in plan.span for lo, hi in [plan.span[m]]), default=1)


def box_width(machine: str, plan: Plan, sizes: Sizes) -> float:
    """The outer width of a machine's box: its columns of operators, or its label."""
    inner = max(plan.columns.get(machine, 1) * sizes.slot_w - GAP_X, sizes.label_w[machine])
    return inner + 2 * PAD


def row_height(layers: int, sizes: Sizes) -> float:
    return SOURCE_BAND + MACHINE_LABEL + 2 * PAD + layers * sizes.slot_h - GAP_Y


def _measure(machines: Sequence[str], plan: Plan, per_row: int, sizes: Sizes) -> Arrangement:
    width = height = 0.0
    rows = machine_rows(machines, per_row)
    for row in rows:
        row_w = sum(box_width(m, plan, sizes) for m in row) + MACHINE_GAP * (len(row) - 1)
        width = max(width, row_w)
        height += row_height(row_layers(row, plan), sizes)
    return Arrangement(plan, per_row, width, height + MACHINE_GAP * (len(rows) - 1))


def _grid_widths(machines: int) -> list[int]:
    """Machines per grid row to try: every count up to 40, then a few (a graph of more
    machines is not read box by box anyway)."""
    counts = set(range(1, min(machines, 40) + 1))
    counts.update({machines, round(math.sqrt(machines) * 2)} if machines > 40 else set())
    return sorted(counts, reverse=True) or [1]


def arrange(
    topology: Topology,
    placement: Mapping[str, str],
    machines: Sequence[str],
    sizes: Sizes,
    frame: Frame,
) -> Arrangement:
    """The layer width and machines per grid row that show the graph largest in
    ``frame`` (up to zoom 1), then least tall, then in the fewest rows."""
    natural = _plan(topology, placement, max(len(topology.operators), 1))
    widest = max(natural.columns.values(), default=1)
    best: tuple[tuple[float, float, int], Arrangement] | None = None
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
