"""Planning on the What-if page as plain functions: admit a query, provision for an
objective, compare alternative plans (the planning uses of the paper, section IX).

The numbers come from :mod:`estimator.placement.planning`; this module reads the
page's uploads and fields, runs the planner on the run's what-if deployment (the
scenario being edited) and lays the answer out as table rows and one-line messages.
Every user mistake raises :class:`estimator.errors.ScenarioError` naming it.
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from estimator.arrivals import Arrivals
from estimator.errors import ModelError, ScenarioError
from estimator.evaluator import estimate
from estimator.loaders import added_query_from_document, parse_document, topology_from_text
from estimator.model import Topology
from estimator.placement import ALGORITHMS
from estimator.placement.planning import (
    PLAN_CRITERIA,
    admit_query,
    fewest_nodes,
    least_added_capacity,
    objective_of,
    per_query_mace_wc,
    plans_by_query,
    rank_plans,
)
from estimator.whatif import (
    AddedQuery,
    RunInputs,
    WhatIfEngine,
    parse_positive,
    scenario_from_json,
    scenario_to_json,
)

MAX_UPLOAD_BYTES = 256 * 1024
"""Largest query or plan file taken (the page's requests stay under the server's limit)."""
MAX_PLANS = 4
MAX_OBJECTIVE = 86_400.0
MAX_PLANNING_BUDGET = 30.0
MAX_NODES = 64
PROVISION_MODES = ("nodes", "capacity")
AS_IN_FILE = "as-in-file"
"""Admission without a search: the new operators go where the query file places them."""


def _prefixed(what: str, exc: Exception) -> str:
    """The planner's message, saying once which planner refused."""
    text = str(exc)
    return text if text.startswith(what) else f"{what}: {text}"


def _seconds(value: float) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:.4f}"


def upload_text(contents: str | None, filename: str | None) -> str:
    """The text of a ``dcc.Upload`` file (``data:...;base64,...``), size-bounded."""
    name = filename or "the file"
    if not contents:
        raise ScenarioError(f"{name}: empty upload")
    _, _, payload = contents.partition(",")
    if len(payload) * 3 // 4 > MAX_UPLOAD_BYTES:
        raise ScenarioError(f"{name}: larger than {MAX_UPLOAD_BYTES // 1024} KiB")
    try:
        return base64.b64decode(payload, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        raise ScenarioError(f"{name}: not a UTF-8 text file") from None


def _fmt(filename: str) -> str:
    return "json" if filename.lower().endswith(".json") else "yaml"


def added_query_from_text(text: str, where: str = "query file") -> AddedQuery:
    """A query file given as text, in the format of ``mace plan admit --add``
    (:func:`estimator.loaders.added_query_from_document`)."""
    if len(text.encode("utf-8")) > MAX_UPLOAD_BYTES:
        raise ScenarioError(f"{where}: larger than {MAX_UPLOAD_BYTES // 1024} KiB")
    try:
        _, query = added_query_from_document(
            parse_document(text, fmt=_fmt(where), where=where), where
        )
    except ModelError as exc:
        raise ScenarioError(str(exc)) from None
    return query


def parse_objective(value: Any, what: str = "objective") -> float:
    """A latency objective in seconds from a form field (positive, bounded)."""
    return parse_positive(value, f"{what} (s)", upper=MAX_OBJECTIVE)


def _deployment(
    engine: WhatIfEngine, inputs: RunInputs, scenario: Mapping[str, Any] | None
) -> tuple[Topology, Arrivals]:
    return engine.applied(inputs, scenario_from_json(scenario or {}))


@dataclass(frozen=True)
class AdmissionView:
    """The decision, one row per query (before, after, objective, ok), the new
    operators' placement, and the scenario that adds the query."""

    admitted: bool
    message: str
    rows: list[dict[str, Any]]
    placement: list[dict[str, str]]
    scenario: dict[str, Any]
    query: str


def _query_name(query: AddedQuery) -> str:
    names = list(dict.fromkeys(str(op.get("query", "")) for op in query.operators))
    return ", ".join(n for n in names if n) or "the new query"


def admission(
    engine: WhatIfEngine,
    inputs: RunInputs,
    scenario: Mapping[str, Any] | None,
    query: AddedQuery,
    objectives: Mapping[str, float],
    *,
    new_objective: float | None = None,
    algorithm: str = "mace-hc",
    budget: float = 1.0,
    seed: int = 0,
) -> AdmissionView:
    """Would adding ``query`` to the scenario's deployment keep every objective?

    The running operators stay put; the new ones are placed by ``algorithm`` (or as
    the file says with :data:`AS_IN_FILE`).
    ``objectives`` are the run's stored ones; ``new_objective`` applies to the new
    query's operators' query ids."""
    current = scenario_to_json(scenario_from_json(scenario or {}))
    if current["subinterval_factor"] != 1:
        raise ScenarioError(
            "admit: the scenario merges subintervals; set the subinterval factor back to 1 "
            "(the query's arrivals count events per run subinterval)"
        )
    if current.get("add_query"):
        raise ScenarioError("admit: the scenario already adds a query; undo that edit first")
    if algorithm != AS_IN_FILE and algorithm not in ALGORITHMS:
        raise ScenarioError(f"admit: unknown placement algorithm '{algorithm}'")
    topology, arrivals = _deployment(engine, inputs, scenario)
    new_queries = list(dict.fromkeys(str(op.get("query", "")) for op in query.operators))
    clash = [q for q in new_queries if q in topology.queries]
    if clash:
        raise ScenarioError(f"admit: query '{clash[0]}' is already running")
    goals = {q: s for q, s in objectives.items() if q in topology.queries}
    if new_objective is not None:
        goals.update(dict.fromkeys(new_queries, new_objective))
    before = per_query_mace_wc(estimate(topology, arrivals))
    try:
        decision = admit_query(
            topology,
            arrivals,
            query,
            goals,
            algorithm=None if algorithm == AS_IN_FILE else algorithm,
            budget=budget,
            rng=np.random.default_rng(seed),
        )
    except ModelError as exc:
        raise ScenarioError(_prefixed("admission", exc)) from None
    rows = []
    for q, after in decision.per_query.items():
        goal = objective_of(goals, q)
        rows.append(
            {
                "query": q + (" (new)" if q in new_queries else ""),
                "before (s)": _seconds(before[q]) if q in before else "-",
                "after (s)": _seconds(after),
                "objective (s)": _seconds(goal) if math.isfinite(goal) else "none",
                "ok": "yes" if after <= goal else "NO",
            }
        )
    new_ops = [str(op["id"]) for op in query.operators]
    placement = {op: decision.topology.placement[op] for op in new_ops}
    name = _query_name(query)
    if decision.admitted:
        message = f"admitted: {name} fits; every query keeps its objective"
    else:
        broken = "; ".join(
            f"{q} {decision.per_query[q]:.4f} s > {objective_of(goals, q):.4f} s"
            for q in decision.violations
        )
        message = f"refused: adding {name} breaks the objective of {broken}"
    added = AddedQuery(query.operators, placement, query.sources)
    proposed = scenario_to_json(scenario_from_json({**current}))
    proposed["add_query"] = {
        "operators": [dict(op) for op in added.operators],
        "placement": dict(added.placement),
        "sources": {s: list(v) for s, v in added.sources.items()},
    }
    return AdmissionView(
        admitted=decision.admitted,
        message=message,
        rows=rows,
        placement=[{"operator": op, "node": node} for op, node in placement.items()],
        scenario=proposed,
        query=name,
    )


@dataclass(frozen=True)
class ProvisionView:
    """What the objective needs (nodes or added capacity), per-query rows, the proposed
    nodes that host operators, and the proposal as a scenario of the run (to load only
    when ``feasible``)."""

    feasible: bool
    message: str
    rows: list[dict[str, Any]]
    nodes: list[dict[str, Any]]
    scenario: dict[str, Any]
    label: str


def scenario_for(
    base: Topology, proposed: Topology, keep: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The scenario JSON turning the run's deployment ``base`` into ``proposed``'s nodes,
    capacities and placement (``keep``'s load changes and added query are kept)."""
    current = scenario_to_json(scenario_from_json(keep or {}))
    have = base.capacity_by_node
    want = proposed.capacity_by_node
    current["add_nodes"] = {n: c for n, c in want.items() if n not in have}
    current["remove_nodes"] = [n for n in base.node_ids if n not in want]
    current["capacities"] = {n: c for n, c in want.items() if n in have and have[n] != c}
    current["placement"] = {
        op: node for op, node in proposed.placement.items() if base.placement.get(op) != node
    }
    return scenario_to_json(scenario_from_json(current))


def provisioning(
    engine: WhatIfEngine,
    inputs: RunInputs,
    scenario: Mapping[str, Any] | None,
    objective: float,
    *,
    mode: str = "nodes",
    node_capacity: float = 1.0,
    algorithm: str = "mace-hc",
    budget: float = 1.0,
    seed: int = 0,
    progress: Callable[[int], None] | None = None,
) -> ProvisionView:
    """The fewest nodes of ``node_capacity`` (mode ``nodes``), or the least capacity to
    add to the scenario's nodes keeping its placement (mode ``capacity``), with which
    every query's MaceWC meets ``objective`` seconds (``progress(K)`` before the
    search on K nodes)."""
    if mode not in PROVISION_MODES:
        raise ScenarioError(f"provision: unknown mode '{mode}' (nodes or capacity)")
    if algorithm not in ALGORITHMS:
        raise ScenarioError(f"provision: unknown placement algorithm '{algorithm}'")
    topology, arrivals = _deployment(engine, inputs, scenario)
    try:
        if mode == "nodes":
            plan = fewest_nodes(
                topology,
                arrivals,
                objective,
                node_capacity=node_capacity,
                max_nodes=MAX_NODES,
                algorithm=algorithm,
                budget=budget,
                rng=np.random.default_rng(seed),
                progress=progress,
            )
        else:
            plan = least_added_capacity(topology, arrivals, objective)
    except ModelError as exc:
        raise ScenarioError(_prefixed("provisioning", exc)) from None
    wc = max(plan.per_query.values(), default=0.0)
    if mode == "nodes":
        count = len(plan.topology.nodes)
        label = f"{count} node{'s' * (count != 1)} of capacity {node_capacity:g}"
        if plan.feasible:
            message = f"{label} meet the objective of {objective:g} s (MaceWC {wc:.4f} s)"
        else:
            message = (
                f"no node count of capacity {node_capacity:g} meets {objective:g} s: "
                f"{plan.reason} (best MaceWC {wc:.4f} s); try larger nodes, a looser "
                "objective or a longer budget"
            )
    else:
        label = f"+{plan.added_capacity:.4g} CPU-s/s"
        message = (
            f"add {plan.added_capacity:.4g} CPU-s/s in total to meet {objective:g} s "
            f"with the placement unchanged (MaceWC {wc:.4f} s)"
        )
    before = per_query_mace_wc(estimate(topology, arrivals))
    rows = [
        {
            "query": q,
            "now (s)": _seconds(before.get(q, math.nan)),
            "proposed (s)": _seconds(after),
            "objective (s)": _seconds(objective),
            "ok": "yes" if after <= objective else "NO",
        }
        for q, after in plan.per_query.items()
    ]
    hosted: dict[str, list[str]] = {}
    for op, node in plan.topology.placement.items():
        hosted.setdefault(node, []).append(op)
    nodes = [
        {
            "node": n.id,
            "capacity": round(n.capacity, 4),
            "operators": ", ".join(hosted.get(n.id, [])) or "-",
        }
        for n in plan.topology.nodes
        if n.id in hosted or mode == "capacity"
    ]
    proposal = scenario_for(inputs.topology, plan.topology, scenario)
    return ProvisionView(plan.feasible, message, rows, nodes, proposal, label)


@dataclass(frozen=True)
class PlanRanking:
    rows: list[dict[str, Any]]
    chosen: str
    message: str


CURRENT_PLAN = "running plan"


def plan_ranking(
    inputs: RunInputs,
    query: str | None,
    files: Sequence[tuple[str, str]],
    criterion: str = "mace_wc",
) -> PlanRanking:
    """Rank the run's plan of ``query`` (costs fitted on the run) and the uploaded
    alternative plans of the same query (``files``: name, text), each on one node of
    its total capacity fed with the run's arrivals, by ``criterion``."""
    topology = inputs.topology
    if not query:
        raise ScenarioError("compare plans: select a query")
    if query not in topology.queries:
        raise ScenarioError(f"compare plans: unknown query '{query}'")
    if criterion not in PLAN_CRITERIA:
        raise ScenarioError(f"compare plans: unknown criterion '{criterion}'")
    if not files:
        raise ScenarioError("compare plans: upload at least one alternative plan file")
    if len(files) > MAX_PLANS:
        raise ScenarioError(f"compare plans: at most {MAX_PLANS} plan files at a time")
    try:
        plans = {f"{CURRENT_PLAN} ({query})": plans_by_query(topology)[query]}
    except ModelError as exc:
        raise ScenarioError(f"compare plans: {exc}") from None
    for name, text in files:
        if len(text.encode("utf-8")) > MAX_UPLOAD_BYTES:
            raise ScenarioError(f"{name}: larger than {MAX_UPLOAD_BYTES // 1024} KiB")
        try:
            plan = topology_from_text(text, fmt=_fmt(name), where=name)
        except ModelError as exc:
            raise ScenarioError(str(exc)) from None
        others = [q for q in plan.queries if q != query]
        if others:
            raise ScenarioError(f"{name}: a plan of query '{others[0]}', not of '{query}'")
        missing = [s for s in plan.source_ids if s not in inputs.arrivals.sources]
        if missing:
            raise ScenarioError(f"{name}: source '{missing[0]}' is not a source of the run")
        if name in plans:
            raise ScenarioError(f"{name}: uploaded twice")
        plans[name] = plan
    try:
        ranking = rank_plans(plans, inputs.arrivals, criterion=criterion)
    except ModelError as exc:
        raise ScenarioError(f"compare plans: {exc}") from None
    rows = [
        {
            "rank": k + 1,
            "plan": s.name,
            "MaceWC (s)": _seconds(s.mace_wc),
            "mean (s)": _seconds(s.mean),
            "p99 (s)": _seconds(s.p99),
        }
        for k, s in enumerate(ranking)
    ]
    chosen = ranking[0].name
    criterion_name = {"mace_wc": "MaceWC", "mean": "mean Mace", "p99": "p99 of Mace"}[criterion]
    return PlanRanking(rows, chosen, f"chosen: {chosen} (lowest {criterion_name})")


@dataclass(frozen=True)
class PlanningDefaults:
    objective: str
    capacity: str
    queries: list[str]


def defaults(
    engine: WhatIfEngine, inputs: RunInputs, objectives: Mapping[str, float]
) -> PlanningDefaults:
    """The planning fields' defaults for a run: the tightest stored objective (else the
    current MaceWC, what the deployment achieves today), its largest node capacity."""
    if objectives:
        objective = min(objectives.values())
    else:
        objective = engine.evaluate(inputs, scenario_from_json({})).estimate.worst_case
    capacity = max(inputs.topology.capacity_by_node.values())
    return PlanningDefaults(
        objective=f"{objective:.4g}" if objective > 0 else "1",
        capacity=f"{capacity:g}",
        queries=list(inputs.topology.queries),
    )


def stored_objectives(data: Any) -> dict[str, float]:
    """The run's objectives from the page's store (anything malformed is dropped)."""
    if not isinstance(data, Mapping):
        return {}
    return {
        str(q): float(v)
        for q, v in data.items()
        if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v > 0
    }
