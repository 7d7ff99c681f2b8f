"""Logic of the What-if page as plain functions (the page's callbacks only call these).

:func:`apply_edit` validates one form action and returns the new scenario JSON
(one handler per action, chosen from :data:`ACTIONS`); :func:`render` evaluates a
scenario with :class:`estimator.whatif.WhatIfEngine` and builds every figure and
text of the page. Both raise :class:`estimator.whatif.ScenarioError` with a message
for the user. Numbers come from the estimator; this module only lays them out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dashboard.core.timeaxis import Clock
from dashboard.shell.graph import elements, geometry
from dashboard.whatif import figures
from estimator.errors import ModelError
from estimator.loaders import dump_topology
from estimator.model import Topology
from estimator.whatif import (
    MAX_CAPACITY,
    MAX_RATE_SCALE,
    Evaluation,
    RunInputs,
    ScenarioError,
    WhatIfEngine,
    parse_factor,
    parse_positive,
    scenario_from_json,
    scenario_to_json,
)

MAX_ID_LENGTH = 64
NO_CHANGE = 1e-9
"""A worst case that moves by less than this (relative, at least 1 s) did not change."""
MAX_EDITS = 200


@dataclass(frozen=True)
class WhatIfView:
    """Everything the What-if page shows for one scenario, next to the current deployment."""

    latency_figure: dict[str, Any]
    query_figure: dict[str, Any]
    graph: elements.Graph
    table_rows: list[dict[str, Any]]
    node_options: list[str]
    operator_options: list[str]
    current_wc: float
    scenario_wc: float
    per_query: dict[str, tuple[float, float]]
    heading: str = "MaceWC"
    over: str = ""

    @property
    def summary(self) -> str:
        """The system's worst case, scenario against current, then each query whose
        worst case the scenario changes: the largest changes first."""
        change = self.scenario_wc - self.current_wc
        head = f"{self.heading}: scenario {self.scenario_wc:.4f} s, current {self.current_wc:.4f} s"
        if _same(self.current_wc, self.scenario_wc):
            head = f"{head}, no change to the worst case"
        else:
            head = f"{head}, change {change:+.4f} s{_percent(self.current_wc, change)}"
        return f"{head} · {self.query_summary}" + (f" · {self.over}" if self.over else "")

    @property
    def query_summary(self) -> str:
        """The queries whose worst case changes, the largest relative change first (at
        most :data:`SHOWN_QUERIES`, and how many more)."""
        changed = [(q, a, b) for q, (a, b) in self.per_query.items() if not _same(a, b)]
        if not changed:
            return "no query changes"
        changed.sort(key=lambda c: (-abs(c[2] - c[1]) / max(c[1], 1e-9), c[0]))
        shown = ", ".join(
            f"{q} {a:.2f} s → {b:.2f} s{_percent(a, b - a, digits=0)}"
            for q, a, b in changed[:SHOWN_QUERIES]
        )
        more = len(changed) - SHOWN_QUERIES
        return f"per query: {shown}" + (f" and {more} more" if more > 0 else "")


SHOWN_QUERIES = 3
"""The headline names at most this many changed queries."""


def _same(before: float, after: float) -> bool:
    """Two worst cases that differ by rounding only (:data:`NO_CHANGE`)."""
    return abs(after - before) <= NO_CHANGE * max(1.0, abs(before))


def _percent(before: float, change: float, digits: int = 1) -> str:
    return f" ({change / before:+.{digits}%})" if before > 0 else ""


def _scenario_nodes(inputs: RunInputs, data: Mapping[str, Any]) -> list[str]:
    removed = set(data.get("remove_nodes") or [])
    nodes = [n for n in inputs.topology.node_ids if n not in removed]
    return nodes + [n for n in (data.get("add_nodes") or {}) if n not in removed]


@dataclass(frozen=True)
class EditForm:
    """The What-if form's values when an edit button is pressed."""

    operator: str | None
    target: str | None
    cap_node: str | None
    cap_value: Any
    add_id: str | None
    add_cap: Any
    rate: Any
    factor: Any
    rows: list[dict[str, Any]] | None
    optimized: dict[str, Any] | None
    saved: list[str] | None


Edit = Callable[[Topology, list[str], dict[str, Any], Mapping[str, Any]], None]
"""An action handler: checks ``values`` and changes the scenario JSON in place."""


def _move(topology: Topology, nodes: list[str], current: dict[str, Any], v: Mapping) -> None:
    operator, node = v.get("operator"), v.get("node")
    if not operator:
        raise ScenarioError("move: select an operator")
    if operator not in topology.operator_by_id:
        raise ScenarioError(f"move: unknown operator '{operator}'")
    if not node:
        raise ScenarioError("move: select a target node")
    if node not in nodes:
        raise ScenarioError(f"move: unknown node '{node}'")
    current["placement"][operator] = node


def _rows(topology: Topology, nodes: list[str], current: dict[str, Any], rows: Any) -> None:
    if not rows:
        raise ScenarioError("placement table: it is empty")
    for k, row in enumerate(rows):
        operator, node = str(row.get("operator", "")), str(row.get("node", "")).strip()
        if operator not in topology.operator_by_id:
            raise ScenarioError(f"placement table row {k + 1}: unknown operator '{operator}'")
        if node not in nodes:
            raise ScenarioError(
                f"placement table row {k + 1}: unknown node '{node}' for '{operator}'"
            )
        current["placement"][operator] = node


def _table(topology: Topology, nodes: list[str], current: dict[str, Any], v: Mapping) -> None:
    _rows(topology, nodes, current, v.get("rows") or [])


def _placement(topology: Topology, nodes: list[str], current: dict[str, Any], v: Mapping) -> None:
    rows = [{"operator": k, "node": n} for k, n in (v.get("placement") or {}).items()]
    _rows(topology, nodes, current, rows)


def _capacity(topology: Topology, nodes: list[str], current: dict[str, Any], v: Mapping) -> None:
    node = v.get("node")
    if not node:
        raise ScenarioError("capacity: select a node")
    if node not in nodes:
        raise ScenarioError(f"capacity: unknown node '{node}'")
    value = parse_positive(v.get("capacity"), f"capacity of '{node}'", upper=MAX_CAPACITY)
    if node in current["add_nodes"]:
        current["add_nodes"][node] = value
    else:
        current["capacities"][node] = value


def _add_node(topology: Topology, nodes: list[str], current: dict[str, Any], v: Mapping) -> None:
    node = str(v.get("node") or "").strip()
    if (
        not node
        or len(node) > MAX_ID_LENGTH
        or not node.replace("-", "").replace("_", "").isalnum()
    ):
        raise ScenarioError(
            "add node: enter an id of letters, digits, '-' or '_' "
            f"(at most {MAX_ID_LENGTH} characters)"
        )
    if node in nodes or node in topology.operator_by_id or node in topology.source_ids:
        raise ScenarioError(f"add node: id '{node}' is already used")
    value = parse_positive(v.get("capacity"), f"capacity of '{node}'", upper=MAX_CAPACITY)
    if node in current["remove_nodes"]:
        current["remove_nodes"].remove(node)
        current["capacities"][node] = value
    else:
        current["add_nodes"][node] = value


def _remove_node(topology: Topology, nodes: list[str], current: dict[str, Any], v: Mapping) -> None:
    node = v.get("node")
    if not node:
        raise ScenarioError("remove node: select a node")
    if node not in nodes:
        raise ScenarioError(f"remove node: unknown node '{node}'")
    if len(nodes) == 1:
        raise ScenarioError("remove node: at least one node must remain")
    placement = {**dict(topology.placement), **current["placement"]}
    hosted = sorted(op for op, n in placement.items() if n == node)
    if hosted:
        raise ScenarioError(
            f"remove node: '{node}' still hosts {', '.join(hosted)}; move them first"
        )
    if node in current["add_nodes"]:
        del current["add_nodes"][node]
    else:
        current["remove_nodes"].append(node)
    current["capacities"].pop(node, None)


def _load(topology: Topology, nodes: list[str], current: dict[str, Any], v: Mapping) -> None:
    current["rate_scale"] = parse_positive(v.get("rate_scale"), "rate scale", upper=MAX_RATE_SCALE)
    current["subinterval_factor"] = parse_factor(v.get("factor"))


def _reset(topology: Topology, nodes: list[str], current: dict[str, Any], v: Mapping) -> None:
    current.clear()
    current.update(scenario_to_json(scenario_from_json({})))


def _replace(topology: Topology, nodes: list[str], current: dict[str, Any], v: Mapping) -> None:
    current.clear()
    current.update(scenario_to_json(scenario_from_json(v.get("scenario") or {})))


ACTIONS: dict[str, Edit] = {
    "move": _move,
    "table": _table,
    "placement": _placement,
    "capacity": _capacity,
    "add_node": _add_node,
    "remove_node": _remove_node,
    "load": _load,
    "reset": _reset,
    "load_saved": _replace,
}
"""The page's actions: ``move`` (operator, node), ``table`` (rows of operator/node),
``placement`` (a whole placement, e.g. from the optimizer), ``capacity`` (node,
capacity), ``add_node`` (node, capacity), ``remove_node`` (node), ``load``
(rate_scale, factor), ``reset`` and ``load_saved`` (name, scenario: a saved scenario
replaces the current one)."""


def apply_edit(
    inputs: RunInputs, data: Mapping[str, Any] | None, action: str, values: Mapping[str, Any]
) -> dict[str, Any]:
    """The scenario JSON after one action of the page (see :data:`ACTIONS`);
    ScenarioError names a bad value."""
    handler = ACTIONS.get(action)
    if handler is None:
        raise ScenarioError(f"unknown action '{action}'")
    current = scenario_to_json(scenario_from_json(data or {}))
    handler(inputs.topology, _scenario_nodes(inputs, current), current, values)
    # validate the whole result against the run (unknown ids, stranded operators, a
    # subinterval factor longer than the run, ...)
    try:
        inputs.applied(scenario_from_json(current))
    except ModelError as exc:
        raise ScenarioError(str(exc)) from None
    return current


def _changed_placement(
    inputs: RunInputs, current: Mapping[str, Any], placement: Mapping[str, Any]
) -> dict[str, str]:
    """The operators whose node ``placement`` changes, against the scenario's placement."""
    where = {**dict(inputs.topology.placement), **current.get("placement", {})}
    return {
        str(op): str(node).strip()
        for op, node in placement.items()
        if where.get(op) != str(node).strip()
    }


def _normalized(
    inputs: RunInputs, current: Mapping[str, Any], action: str, values: Mapping[str, Any]
) -> dict[str, Any]:
    """An action's form values in the form an edit keeps: numbers parsed, and a table or
    an optimized placement reduced to the operators it moves (so that undoing an earlier
    move is not undone again by a later whole-table edit)."""
    v = dict(values)
    if action == "table":
        rows = v.get("rows") or []
        if not rows:
            raise ScenarioError("placement table: it is empty")
        # unknown operators and nodes are named by the handler, row by row
        apply_edit(inputs, current, "table", v)
        placement = {str(r.get("operator", "")): str(r.get("node", "")) for r in rows}
        return {"placement": _changed_placement(inputs, current, placement)}
    if action == "placement":
        return {"placement": _changed_placement(inputs, current, v.get("placement") or {})}
    if action == "capacity" and v.get("node"):
        v["capacity"] = parse_positive(
            v.get("capacity"), f"capacity of '{v['node']}'", upper=MAX_CAPACITY
        )
    if action == "add_node":
        v["node"] = str(v.get("node") or "").strip()
        if v["node"]:
            v["capacity"] = parse_positive(
                v.get("capacity"), f"capacity of '{v['node']}'", upper=MAX_CAPACITY
            )
    if action == "load":
        v["rate_scale"] = parse_positive(v.get("rate_scale"), "rate scale", upper=MAX_RATE_SCALE)
        v["factor"] = parse_factor(v.get("factor"))
    return v


def _moves(placement: Mapping[str, str]) -> str:
    return ", ".join(f"{op} to {node}" for op, node in placement.items())


def _label(action: str, v: Mapping[str, Any]) -> str:
    """What an edit did, in the past tense (the edit list and the confirmation)."""
    if action == "move":
        return f"moved {v['operator']} to {v['node']}"
    if action == "capacity":
        return f"set the capacity of {v['node']} to {v['capacity']:g}"
    if action == "add_node":
        return f"added node {v['node']} (capacity {v['capacity']:g})"
    if action == "remove_node":
        return f"removed node {v['node']}"
    if action == "load":
        return f"set source rates x{v['rate_scale']:g}, subinterval factor {v['factor']}"
    if action in ("table", "placement"):
        what = "placement table" if action == "table" else "optimized placement"
        return f"{what}: moved {_moves(v['placement'])}"
    if action == "load_saved":
        return f"loaded scenario '{v['name']}'"
    return action


@dataclass(frozen=True)
class EditResult:
    """The edit log after an action, its scenario JSON, and what to tell the user."""

    edits: list[dict[str, Any]]
    note: str
    scenario: dict[str, Any]


def _deployment(inputs: RunInputs, scenario: Mapping[str, Any]) -> tuple[Any, list[Any]]:
    """What a scenario evaluates: its topology document and arrivals (to tell a no-op)."""
    topology, arrivals = inputs.applied(scenario_from_json(scenario))
    return topology.to_dict(), [arrivals.sources, arrivals.counts.tolist()]


def fold_edits(inputs: RunInputs, edits: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The scenario JSON of an edit log: its edits applied in order from no change (a
    pure function; ScenarioError names the first edit that does not apply)."""
    current = scenario_to_json(scenario_from_json({}))
    for k, edit in enumerate(edits):
        try:
            current = apply_edit(inputs, current, str(edit["action"]), edit["values"])
        except ScenarioError as exc:
            raise ScenarioError(
                f"edit {k + 1} ({edit.get('label', '')}) no longer applies: {exc}"
            ) from None
    return current


def add_edit(
    inputs: RunInputs,
    edits: Sequence[Mapping[str, Any]],
    action: str,
    values: Mapping[str, Any],
    current: Mapping[str, Any] | None = None,
) -> EditResult:
    """The log with one more edit, validated; an action that changes nothing is not kept
    and says so. ``current``: the log's scenario when the caller has it already (the log
    is then not folded again: adding N edits one by one stays linear)."""
    if action not in ACTIONS or action == "reset":
        raise ScenarioError(f"unknown action '{action}'")
    if len(edits) >= MAX_EDITS:
        raise ScenarioError(f"at most {MAX_EDITS} edits: save the scenario, then reset")
    before = dict(current) if current is not None else fold_edits(inputs, edits)
    kept = _normalized(inputs, before, action, values)
    kind = "placement" if action == "table" else action  # a table edit keeps its moves
    unchanged = EditResult(
        [dict(e) for e in edits], "nothing changed: no change to the worst case", before
    )
    if kind == "placement" and not kept["placement"]:
        return unchanged
    after = apply_edit(inputs, before, kind, kept)
    if _deployment(inputs, after) == _deployment(inputs, before):
        return unchanged
    label = _label(action, kept)
    edit = {"action": kind, "values": kept, "label": label}
    return EditResult([*map(dict, edits), edit], label, after)


def undo_edit(inputs: RunInputs, edits: Sequence[Mapping[str, Any]], k: int) -> EditResult:
    """The log without edit ``k`` (0-based); refused when a later edit depends on it."""
    if not 0 <= k < len(edits):
        raise ScenarioError(f"undo: there is no edit {k + 1}")
    rest = [dict(e) for j, e in enumerate(edits) if j != k]
    try:
        scenario = fold_edits(inputs, rest)
    except ScenarioError as exc:
        raise ScenarioError(
            f"undo '{edits[k].get('label', '')}': {exc}; undo that edit first"
        ) from None
    return EditResult(rest, f"undid: {edits[k].get('label', '')}", scenario)


def edits_for(store: Any, run_id: str | None) -> list[dict[str, Any]]:
    """The edit log of ``run_id`` in the page's session store (``{run id: [edit, ...]}``);
    a malformed entry counts as no edits, so another run's scenario never applies. The
    store comes from the browser: a log longer than the page lets one grow is refused
    (ScenarioError) before anything is folded."""
    if not run_id or not isinstance(store, Mapping):
        return []
    edits = store.get(run_id)
    if not isinstance(edits, list):
        return []
    if len(edits) > MAX_EDITS:
        raise ScenarioError(
            f"the scenario has {len(edits)} edits, more than the limit of {MAX_EDITS}: "
            "press Reset to start again"
        )
    kept = []
    for edit in edits:
        if not (
            isinstance(edit, Mapping)
            and isinstance(edit.get("action"), str)
            and isinstance(edit.get("values"), Mapping)
        ):
            return []
        kept.append(
            {
                "action": edit["action"],
                "values": dict(edit["values"]),
                "label": str(edit.get("label", "")),
            }
        )
    return kept


def with_edits(store: Any, run_id: str, edits: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The session store with ``run_id``'s edit log replaced (other runs kept)."""
    out = dict(store) if isinstance(store, Mapping) else {}
    if edits:
        out[run_id] = [dict(e) for e in edits]
    else:
        out.pop(run_id, None)
    return out


def _utilisation(result: Evaluation) -> elements.Utilisation:
    """Each node's predicted load over its capacity under the scenario."""
    estimate = result.estimate
    n = len(result.topology.node_ids)
    return elements.utilisation(
        result.topology.node_ids, estimate.dlts[:n], estimate.capacities[:n], estimate.subinterval
    )


@dataclass(frozen=True)
class Shown:
    """Where the page looks: the baseline window starts ``offset`` seconds after the
    run's start; the shared time picker's range (seconds since the start; None: the
    whole window, ``whole``: the picker shows the whole run) on the shared ``clock``."""

    offset: float = 0.0
    x_range: tuple[float, float] | None = None
    clock: Clock = field(default_factory=Clock)
    whole: bool = True

    def inside(self, evaluation: Evaluation) -> np.ndarray:
        """Which of ``evaluation``'s subintervals (of its own length) meet the range (all
        when the picker shows the whole run)."""
        starts = self.offset + evaluation.times
        if self.x_range is None or self.whole:
            return np.ones(starts.size, dtype=bool)
        lo, hi = self.x_range
        return (starts + evaluation.topology.subinterval > lo) & (starts < hi)


def _worst_in(series: np.ndarray, inside: np.ndarray) -> float:
    """The worst case of ``series`` over the subintervals ``inside``."""
    picked = series[inside[: series.size]]
    return float(picked.max()) if picked.size else 0.0


def _in_range(base: Evaluation, result: Evaluation, shown: Shown) -> tuple[Shown, str]:
    """What the figures cover, and what the headline says about it: the shown range, or
    the whole baseline window when the picker shows the whole run or its range does not
    meet the window."""
    if shown.whole or shown.x_range is None:
        return shown, ""
    base_in, result_in = shown.inside(base), shown.inside(result)
    if base_in.all() and result_in.all():  # the range holds the whole window
        return shown, ""
    if not base_in.any() or not result_in.any():
        note = "the time range lies outside the baseline window: worst cases over the window"
        return Shown(shown.offset, None, shown.clock), note
    return shown, f"worst cases over {shown.clock.span(*shown.x_range)}"


def render(
    engine: WhatIfEngine,
    inputs: RunInputs,
    data: Mapping[str, Any] | None,
    selected: str | None = None,
    estimator: str = "mace",
    shown: Shown | None = None,
) -> WhatIfView:
    """Evaluate the scenario next to the current deployment with ``estimator`` and build
    the page's content: the time chart and the worst cases over the ``shown`` range
    (default: the whole baseline window, in seconds since the run's start)."""
    shown = shown or Shown()
    scenario = scenario_from_json(data or {})
    base = engine.evaluate(inputs, scenario_from_json({}), estimator)
    result = engine.evaluate(inputs, scenario, estimator)
    label = engine.label(estimator)
    placement = dict(result.topology.placement)
    covered, over = _in_range(base, result, shown)
    base_in, result_in = covered.inside(base), covered.inside(result)
    current_q = {q: _worst_in(s, base_in) for q, s in base.estimate.per_query.items()}
    scenario_q = {q: _worst_in(s, result_in) for q, s in result.estimate.per_query.items()}
    queries = list(inputs.topology.queries)
    return WhatIfView(
        latency_figure=figures.estimate_comparison_figure(
            shown.offset + base.times[base_in],
            base.estimate.series[base_in],
            result.estimate.series[result_in],
            shown.offset + result.times[result_in],
            label,
            covered.clock,
            covered.x_range,
        ),
        query_figure=figures.query_change_figure(
            queries, [current_q[q] for q in queries], [scenario_q[q] for q in queries], label
        ),
        graph=elements.operator_graph(
            result.topology,
            placement,
            elements.Colouring(
                utilisation=_utilisation(result),
                baseline=elements.Baseline(
                    inputs.topology.placement, inputs.topology.capacity_by_node
                ),
                selected=selected,
            ),
            geometry.EDITOR,
        ),
        table_rows=[
            {"operator": o.id, "query": o.query, "node": placement[o.id]}
            for o in result.topology.operators
        ],
        node_options=list(result.topology.node_ids),
        operator_options=list(result.topology.operator_ids),
        current_wc=_worst_in(base.estimate.series, base_in),
        scenario_wc=_worst_in(result.estimate.series, result_in),
        per_query={q: (current_q[q], scenario_q[q]) for q in queries},
        heading=engine.heading(estimator),
        over=over,
    )


def validate(engine: WhatIfEngine, inputs: RunInputs, data: Mapping[str, Any] | None) -> None:
    """Raise ScenarioError unless the scenario applies to the run (no evaluation)."""
    engine.applied(inputs, scenario_from_json(data or {}))


def export_topology(engine: WhatIfEngine, inputs: RunInputs, data: Mapping[str, Any] | None) -> str:
    """The scenario's deployment as a topology YAML file."""
    topology, _ = engine.applied(inputs, scenario_from_json(data or {}))
    return dump_topology(topology)


def compare_rows(
    engine: WhatIfEngine,
    inputs: RunInputs,
    named: Sequence[tuple[str, Mapping[str, Any]]],
    estimator: str = "mace",
) -> list[dict[str, Any]]:
    """One row per scenario: the worst case and per-query worst cases of ``estimator``,
    for the comparison table."""
    heading = engine.heading(estimator)
    rows = []
    for name, data in [("current", {}), *named]:
        try:
            result = engine.evaluate(inputs, scenario_from_json(data), estimator)
        except ScenarioError as exc:
            rows.append({"scenario": name, heading: f"invalid: {exc}"})
            continue
        row: dict[str, Any] = {"scenario": name, heading: round(result.estimate.worst_case, 4)}
        row.update({q: round(v, 4) for q, v in result.per_query_wc().items()})
        rows.append(row)
    return rows
