"""``mace plan``: plan selection, admission control and provisioning (paper section IX).

Three questions answered before anything is deployed, on files (a topology and
an arrival series) or on a stored run (``--db FILE [--run ID]``: the run's
topology with costs and selectivities fitted on its statistics, its last
placement, its arrivals and its stored latency objectives):

- ``select``: which of several alternative plans of one query to run;
- ``admit``: can a new query be added without breaking a latency objective;
- ``provision``: how many nodes (or how much capacity) an objective needs, and
  with ``--over-time`` how many per time window, against FUGU's threshold count.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mace import parallelism_command
from mace.errors import UsageError
from mace.options import add_max_intervals, max_intervals

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from estimator.arrivals import Arrivals
    from estimator.model import Topology
    from estimator.placement.planning import Objectives

DEFAULT_SEED = 0
DEFAULT_BUDGET = 1.0
DEFAULT_SAMPLE_SHARE = 0.08  # the paper's sample: 6k of 75k events (section VIII)
DEFAULT_SAMPLE_EVENTS = 5_000  # the paper found 500 events enough to rank its plans
DEFAULT_WINDOW = 300.0
DEFAULT_MAX_NODES = 64


def register(subparsers: argparse._SubParsersAction) -> None:
    from estimator.placement import ALGORITHMS
    from estimator.placement.planning import PLAN_CRITERIA

    plan = subparsers.add_parser(
        "plan",
        help="plan selection, admission control and provisioning for latency objectives",
        description="Answer planning questions with Mace before deploying: which plan to "
        "run (select), whether a query can be added (admit), how many nodes an objective "
        "needs (provision). Each works on files or on a stored run (--db FILE --run ID).",
    )
    actions = plan.add_subparsers(dest="action", metavar="ACTION", required=True)

    select = actions.add_parser(
        "select",
        help="rank alternative plans of one query by MaceWC, mean or p99 of Mace",
        description="Rank alternative plans of one query, each judged on one node holding "
        "its total capacity (as in the paper). Each plan file is a topology; a file with "
        "several queries gives one plan per query. As in the paper, each plan's costs and "
        "selectivities are measured on a sample: it runs in the simulator on the first "
        "--sample-share of the arrivals (with --db --query, the run's own plan is fitted "
        "on the same share of its recorded statistics).",
    )
    select.add_argument(
        "--plans", nargs="+", required=True, metavar="FILE", help="plan files (topologies)"
    )
    _add_source_options(select, topology=False)
    select.add_argument(
        "--query",
        help="with --db: the run's query the plans are alternatives of (its running plan "
        "joins the ranking)",
    )
    select.add_argument(
        "--sample-share",
        type=float,
        help=f"share of the arrivals (the first subintervals) each plan runs on in the "
        f"simulator to measure its statistics (default {DEFAULT_SAMPLE_SHARE:g})",
    )
    select.add_argument(
        "--sample-events",
        type=int,
        default=DEFAULT_SAMPLE_EVENTS,
        help=f"at most this many source events in the sample (default "
        f"{DEFAULT_SAMPLE_EVENTS:,}): the simulator's time grows with them",
    )
    select.add_argument(
        "--criterion",
        choices=PLAN_CRITERIA,
        default="mace_wc",
        help="rank by worst case (default), mean or p99 of Mace across time",
    )
    select.add_argument(
        "--json", action="store_true", help='print {"ranking": [...], "chosen"} as JSON'
    )
    select.set_defaults(run=run_select)

    admit = actions.add_parser(
        "admit",
        help="can a new query be added without breaking any latency objective?",
        description="Place the new query's operators with a placement algorithm (running "
        "operators stay put unless --replace) and compare every query's MaceWC with its "
        "objective. The query file holds 'query', its 'operators', an optional "
        "'placement' and its new 'sources' with their 'arrivals' lists.",
    )
    _add_source_options(admit, topology=True)
    admit.add_argument("--add", required=True, metavar="QUERY_FILE", help="the query to add")
    _add_objective(admit)
    admit.add_argument(
        "--algorithm",
        default="mace-hc",
        help=f"one of {', '.join(ALGORITHMS)}, or 'none' to keep the query file's placement "
        "(default mace-hc)",
    )
    admit.add_argument(
        "--replace",
        action="store_true",
        help="let the algorithm move the running operators too",
    )
    _add_search_options(admit)
    admit.add_argument(
        "--json",
        action="store_true",
        help='print {"admit", "placement", "per_query"} as JSON',
    )
    admit.set_defaults(run=run_admit)

    provision = actions.add_parser(
        "provision",
        help="fewest nodes (or least added capacity) that keep a latency objective",
        description="Nodes mode: the fewest identical nodes on which the placement "
        "algorithm meets the objective. Capacity mode: the least capacity to add to the "
        "current nodes, placement unchanged. --over-time: the fewest nodes per time window "
        "against FUGU's utilisation-threshold host count.",
    )
    _add_source_options(provision, topology=True)
    _add_objective(provision)
    provision.add_argument(
        "--mode",
        choices=("nodes", "capacity"),
        default="nodes",
        help="nodes (default): fewest nodes; capacity: least capacity added, placement kept",
    )
    provision.add_argument(
        "--node-capacity",
        type=float,
        help="capacity of each node in nodes mode (default: the largest current node's)",
    )
    provision.add_argument(
        "--max-nodes",
        type=int,
        default=DEFAULT_MAX_NODES,
        help=f"largest cluster tried (default {DEFAULT_MAX_NODES})",
    )
    provision.add_argument(
        "--algorithm", default="mace-hc", help="placement algorithm (default mace-hc)"
    )
    provision.add_argument(
        "--over-time",
        type=float,
        nargs="?",
        const=DEFAULT_WINDOW,
        metavar="WINDOW",
        help=f"hosts needed per window of WINDOW seconds (default {DEFAULT_WINDOW:g}), by "
        "Mace and by FUGU's utilisation threshold",
    )
    provision.add_argument(
        "--fugu-threshold",
        type=float,
        help="with --over-time: FUGU's utilisation threshold (default 0.85, the FUGU paper's)",
    )
    _add_search_options(provision, per="per node count tried")
    provision.add_argument(
        "--json",
        action="store_true",
        help='print {"mode", "nodes" or "added_capacity", "placement", "mace_wc", '
        '"per_query"} (and "timeline" with --over-time) as JSON',
    )
    provision.set_defaults(run=run_provision)

    parallelism_command.register(actions)


def _add_source_options(parser: argparse.ArgumentParser, *, topology: bool) -> None:
    if topology:
        parser.add_argument("topology", nargs="?", help="topology file (YAML or JSON); or use --db")
    parser.add_argument("--arrivals", help="arrival series file: source,interval,events")
    parser.add_argument("--db", help="DuckDB file written by mace ingest (instead of files)")
    parser.add_argument("--run", dest="run_id", help="with --db: run id (default: the last run)")
    add_max_intervals(parser)


def _add_objective(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--objective",
        action="append",
        metavar="[QUERY=]SECONDS",
        help="latency objective (per-query MaceWC): SECONDS for every query or "
        "QUERY=SECONDS, repeatable (default with --db: the run's stored objectives)",
    )


def _add_search_options(parser: argparse.ArgumentParser, per: str = "") -> None:
    parser.add_argument(
        "--budget",
        type=float,
        default=DEFAULT_BUDGET,
        help=f"search time budget in seconds{' ' + per if per else ''} "
        f"(default {DEFAULT_BUDGET:g})",
    )
    parser.add_argument(
        "--seed", type=int, default=DEFAULT_SEED, help=f"random seed (default {DEFAULT_SEED})"
    )


# ---------------------------------------------------------------------------
# inputs: files or a stored run
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class System:
    """What a plan command works on: topology (fitted statistics for a run), arrivals,
    stored objectives (none for files) and the run's statistics (None for files)."""

    label: str
    topology: Topology
    arrivals: Arrivals
    objectives: dict[str, float]
    operator_stats: pd.DataFrame | None


def load_system(args: argparse.Namespace, *, need_topology: bool = True) -> System | None:
    """The topology and arrivals from files, or a stored run's (None: select on files)."""
    topology_file = getattr(args, "topology", None)
    if args.db is not None:
        if topology_file is not None or args.arrivals is not None:
            raise UsageError("give either --db (a stored run) or a TOPOLOGY with --arrivals")
        return load_run_system(Path(args.db), args.run_id)
    if args.run_id is not None:
        raise UsageError("--run: needs --db")
    if args.arrivals is None:
        raise UsageError("--arrivals: required unless --db gives a stored run")
    if not need_topology:
        return None
    if topology_file is None:
        raise UsageError("TOPOLOGY: give a topology file (or --db FILE for a stored run)")
    from estimator.loaders import load_arrivals, load_topology

    topology = load_topology(topology_file)
    arrivals = load_arrivals(args.arrivals, topology, max_intervals=max_intervals(args))
    return System(topology.name, topology, arrivals, {}, None)


def load_run_system(db: Path, run_id: str | None) -> System:
    """A stored run: its topology on its last placement with costs and selectivities
    fitted on the whole run, its arrivals and its latency objectives."""
    from estimator.fitting import fit_operator_stats
    from mace.report_command import load_run_data

    data, goals = load_run_data(db, run_id)
    if data.intervals == 0:
        raise UsageError(f"run '{data.info.run_id}': no arrivals ingested yet")
    topology = data.topology
    if data.versions:
        topology = topology.with_placement(data.versions[-1].placement)
    if not data.operator_stats.empty:
        topology = fit_operator_stats(topology, data.operator_stats).topology
    label = f"run {data.info.run_id}"
    return System(label, topology, data.arrivals, dict(goals), data.operator_stats)


def parse_objectives(
    values: Sequence[str] | None, queries: Sequence[str], stored: Mapping[str, float]
) -> Objectives:
    """``--objective`` values (SECONDS or QUERY=SECONDS) or, without any, the stored ones."""
    from estimator.model import MAX_MAGNITUDE

    if not values:
        if stored:
            return {q: s for q, s in stored.items() if q in queries}
        raise UsageError("--objective: give the latency objective, SECONDS or QUERY=SECONDS")
    common: float | None = None
    named: dict[str, float] = {}
    for value in values:
        query, _, text = value.rpartition("=")
        try:
            seconds = float(text)
        except ValueError:
            raise UsageError(f"--objective {value}: expected SECONDS or QUERY=SECONDS") from None
        if not 0 < seconds <= MAX_MAGNITUDE:
            raise UsageError(
                f"--objective {value}: must be a positive number of seconds, "
                f"at most {MAX_MAGNITUDE:g}"
            )
        if not query:
            common = seconds
        elif query not in queries:
            raise UsageError(
                f"--objective {value}: unknown query '{query}' (queries: {', '.join(queries)})"
            )
        else:
            named[query] = seconds
    if common is None:
        return named
    if not named:
        return common
    return {q: named.get(q, common) for q in queries}


def _check_search(args: argparse.Namespace, algorithms: Sequence[str]) -> None:
    if args.algorithm not in algorithms:
        raise UsageError(
            f"--algorithm: unknown algorithm '{args.algorithm}' "
            f"(expected one of {', '.join(algorithms)})"
        )
    if not math.isfinite(args.budget) or args.budget <= 0:
        raise UsageError(f"--budget: must be a positive number of seconds, got {args.budget}")
    if args.seed < 0:
        raise UsageError(f"--seed: must not be negative, got {args.seed}")


def _objective_text(objective: float | None) -> str:
    return "-" if objective is None else f"{objective:.4f}"


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


def json_text(document: Any) -> str:
    """Strict JSON (no ``Infinity`` or ``NaN``, which JSON has not): a number that is not
    finite, such as a latency that overflowed, is written as null."""

    def clean(value: Any) -> Any:
        if isinstance(value, float):
            return _finite_or_none(value)
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [clean(v) for v in value]
        return value

    return json.dumps(clean(document), allow_nan=False)


# ---------------------------------------------------------------------------
# select
# ---------------------------------------------------------------------------


def run_select(args: argparse.Namespace) -> int:
    import numpy as np

    from estimator.placement.planning import rank_plans

    share = DEFAULT_SAMPLE_SHARE if args.sample_share is None else args.sample_share
    if not 0 < share <= 1:
        raise UsageError(f"--sample-share: must be in (0, 1], got {share}")
    if args.sample_events < 1:
        raise UsageError(f"--sample-events: must be at least 1, got {args.sample_events}")
    system = load_system(args, need_topology=False)
    if system is None and args.query is not None:
        raise UsageError("--query: needs --db (the query of a stored run)")
    plans = load_plans(args.plans)
    if system is None:
        from estimator.loaders import load_arrivals

        arrivals = load_arrivals(args.arrivals, max_intervals=max_intervals(args))
        where = str(args.arrivals)
    else:
        arrivals, where = system.arrivals, system.label
    own: dict[str, Topology] = {}
    if args.query is not None:
        assert system is not None
        own[args.query] = running_plan(system, args.query, set(plans))
    check_plans_read_the_same_sources({**own, **plans}, arrivals, where)
    sources = sorted({src for plan in plans.values() for src in plan.source_ids})
    sample = draw_sample(arrivals, sources, share, args.sample_events)
    fitted = {name: fitted_on_run(plan, system, sample.window) for name, plan in own.items()}
    with _progress(args, "running plans on the sample", "plans") as tick:
        for name, plan in plans.items():
            fitted[name] = sampled_plan(plan, sample, np.random.default_rng(DEFAULT_SEED))
            if tick:
                tick(len(fitted), len(plans))
    ranking = rank_plans(fitted, arrivals, criterion=args.criterion)
    document = {
        "ranking": [
            {"plan": s.name, "mace_wc": s.mace_wc, "mean": s.mean, "p99": s.p99} for s in ranking
        ],
        "chosen": ranking[0].name,
    }
    if args.json:
        print(json_text(document))
        return 0
    print(
        f"{len(ranking)} plans ranked by {args.criterion} of Mace across time on {where}, "
        f"each on one node with its total capacity; statistics measured on a sample of "
        f"{sample.events:,} events (in the first {_count(sample.window[1], 'subinterval')})"
        + (f", '{args.query}' on its own run" if args.query else ", plans run in the simulator")
    )
    capacities = {name: sum(n.capacity for n in plan.nodes) for name, plan in fitted.items()}
    if len(set(capacities.values())) > 1:
        print(
            "  note: the plans' files give them different total capacities ("
            + ", ".join(f"{name} {c:g}" for name, c in capacities.items())
            + ")"
        )
    print(f"  {'plan':<24}{'MaceWC':>12}{'mean':>12}{'p99':>12}   (seconds)")
    for score in ranking:
        mark = "  <- chosen" if score.name == document["chosen"] else ""
        print(f"  {score.name:<24}{score.mace_wc:12.4f}{score.mean:12.4f}{score.p99:12.4f}{mark}")
    return 0


@dataclass(frozen=True)
class Sample:
    """The first events of the arrivals: per source, event positions in subintervals
    (interval index plus a uniform offset, sorted), and the intervals they lie in."""

    positions: dict[str, np.ndarray]
    window: tuple[int, int]

    @property
    def events(self) -> int:
        return sum(p.size for p in self.positions.values())


def draw_sample(
    arrivals: Arrivals, sources: Sequence[str], share: float, max_events: int
) -> Sample:
    """The events of ``sources`` in the first ``share`` of the subintervals, at most the
    first ``max_events`` of them; events lie uniformly at random inside their subinterval."""
    import numpy as np

    from estimator.fitting import training_window

    start, stop = training_window(arrivals.intervals, share)
    rows = [arrivals.sources.index(s) for s in sources]
    counts = arrivals.counts[rows, start:stop].round().astype(np.int64)
    stop = min(stop, start + int(np.searchsorted(np.cumsum(counts.sum(axis=0)), max_events)) + 1)
    rng = np.random.default_rng(DEFAULT_SEED)
    positions = {}
    for k, source in enumerate(sources):
        slots = np.repeat(np.arange(start, stop), counts[k, : stop - start])
        positions[source] = np.sort(slots + rng.random(slots.size))
    every = np.concatenate([np.zeros(0), *positions.values()])
    if every.size > max_events:
        cut = np.partition(every, max_events - 1)[max_events - 1]
        positions = {s: p[p <= cut] for s, p in positions.items()}
    return Sample(positions, (start, stop))


def load_plans(paths: Sequence[str]) -> dict[str, Topology]:
    """Plans by name: a file's stem, or its query ids when it holds several queries."""
    from estimator.loaders import load_topology
    from estimator.placement.planning import plans_by_query

    plans: dict[str, Topology] = {}
    for path in paths:
        topology = load_topology(path)
        named = (
            {Path(path).stem: topology} if len(topology.queries) == 1 else plans_by_query(topology)
        )
        for name, plan in named.items():
            if name in plans:
                raise UsageError(f"{path}: a second plan named '{name}'")
            plans[name] = plan
    return plans


def sampled_plan(plan: Topology, sample: Sample, rng: Any) -> Topology:
    """The plan with costs and selectivities measured by running it in the simulator on
    the ``sample`` (the paper's trial run on a small sample, section IX-A).

    The plan runs on one node holding its total capacity; ports that saw no event keep
    their values.
    """
    import numpy as np
    import pandas as pd

    from estimator.fitting import fit_operator_stats
    from estimator.placement.planning import single_node
    from simulator.run import simulate

    w = plan.subinterval
    times = {s: sample.positions[s] * w + plan.origin for s in plan.source_ids}
    result = simulate(single_node(plan), times, rng=rng)
    runs = result.telemetry.executions.to_pandas()
    if runs.empty:
        return plan
    runs["interval"] = np.floor((runs["stimulus_time"] - plan.origin) / w).astype(np.int64)
    stats = (
        runs.groupby(["operator", "port", "interval"], observed=True)
        .agg(
            events_in=("outputs", "size"),
            events_out=("outputs", "sum"),
            cpu_seconds=("cpu_seconds", "sum"),
        )
        .reset_index()
    )
    stats["operator"] = stats["operator"].astype(str)
    return fit_operator_stats(plan, pd.DataFrame(stats)).topology


def running_plan(system: System, query: str, taken: set[str]) -> Topology:
    """The run's own plan of ``query`` on the nodes that host its operators."""
    from estimator.model import topology_from_dict
    from estimator.placement.planning import plans_by_query

    if query not in system.topology.queries:
        raise UsageError(
            f"--query: unknown query '{query}' in {system.label} "
            f"(queries: {', '.join(system.topology.queries)})"
        )
    if query in taken:
        raise UsageError(f"--query: a plan file is already named '{query}'")
    document = system.topology.to_dict()
    plan = plans_by_query(topology_from_dict({**document, "links": []}))[query]
    hosts = set(plan.placement.values())
    return topology_from_dict(
        {**plan.to_dict(), "nodes": [n for n in document["nodes"] if n["id"] in hosts]}
    )


def fitted_on_run(plan: Topology, system: System | None, window: tuple[int, int]) -> Topology:
    """``plan`` with statistics fitted on the run's recorded ``window``."""
    from estimator.fitting import fit_operator_stats

    stats = None if system is None else system.operator_stats
    if stats is None or stats.empty:
        return plan
    rows = stats[stats["operator"].isin(plan.operator_ids)]
    return fit_operator_stats(plan, rows, window).topology if len(rows) else plan


def check_plans_read_the_same_sources(
    plans: Mapping[str, Topology], arrivals: Arrivals, where: str
) -> None:
    """Alternative plans of one query read the same sources, all with arrivals."""
    reference: tuple[str, frozenset[str]] | None = None
    for name, plan in plans.items():
        sources = frozenset(plan.source_ids)
        missing = sorted(sources - set(arrivals.sources))
        if missing:
            raise UsageError(
                f"plan '{name}': reads source '{missing[0]}', which has no arrivals in {where}"
            )
        if reference is None:
            reference = (name, sources)
        elif sources != reference[1]:
            raise UsageError(
                f"plan '{name}' reads {', '.join(sorted(sources))} but plan '{reference[0]}' "
                f"reads {', '.join(sorted(reference[1]))}: a plan of another query"
            )


# ---------------------------------------------------------------------------
# admit
# ---------------------------------------------------------------------------


def run_admit(args: argparse.Namespace) -> int:
    import numpy as np

    from estimator.errors import ModelError
    from estimator.evaluator import estimate
    from estimator.loaders import load_added_query
    from estimator.placement import ALGORITHMS
    from estimator.placement.planning import admit_query, objective_of, per_query_mace_wc

    _check_search(args, [*ALGORITHMS, "none"])
    system = load_system(args)
    assert system is not None
    query, added = load_added_query(args.add)
    topology = system.topology
    if query in topology.queries:
        raise UsageError(f"{args.add}: query '{query}' already runs in {system.label}")
    queries = (*topology.queries, query)
    objectives = parse_objectives(args.objective, queries, system.objectives)
    before = per_query_mace_wc(estimate(topology, system.arrivals))
    try:
        decision = admit_query(
            topology,
            system.arrivals,
            added,
            objectives,
            algorithm=None if args.algorithm == "none" else args.algorithm,
            budget=args.budget,
            rng=np.random.default_rng(args.seed),
            move_existing=args.replace,
        )
    except ModelError as exc:  # the query does not fit the running topology
        raise ModelError(f"{args.add}: {exc}") from None
    per_query = {}
    for q in queries:
        objective = _finite_or_none(objective_of(objectives, q))
        after = decision.per_query[q]
        per_query[q] = {
            "before": before.get(q),
            "after": after,
            "objective": objective,
            "ok": q not in decision.violations,
        }
    document = {
        "admit": decision.admitted,
        "placement": dict(decision.topology.placement),
        "per_query": per_query,
    }
    if args.json:
        print(json_text(document))
        return 0
    verdict = "ADMIT" if decision.admitted else "REFUSE"
    already = [q for q in decision.violations if before.get(q, 0.0) > objective_of(objectives, q)]
    broken = [q for q in decision.violations if q not in already]
    reason = "every query keeps its objective"
    if not decision.admitted:
        reason = "breaks the objective of " + ", ".join(broken) if broken else "no new breach"
        if already:
            reason += f" ({', '.join(already)} already missed it before)"
    print(f"{verdict} query '{query}' on {system.label}: {reason}")
    print(f"  {'query':<20}{'before':>10}{'after':>10}{'objective':>11}  ok   (MaceWC, seconds)")
    for q, row in per_query.items():
        shown = "-" if row["before"] is None else f"{row['before']:.4f}"
        print(
            f"  {q:<20}{shown:>10}{row['after']:>10.4f}"
            f"{_objective_text(row['objective']):>11}  {'yes' if row['ok'] else 'NO'}"
        )
    new_ops = {str(op.get("id")) for op in added.operators}
    print("  placement:")
    for op_id, node in decision.topology.placement.items():
        was = topology.placement.get(op_id)
        note = "  (new)" if op_id in new_ops else ("" if was == node else f"  (was {was})")
        if op_id in new_ops or was != node:
            print(f"    {op_id:<20} {node}{note}")
    return 0


# ---------------------------------------------------------------------------
# provision
# ---------------------------------------------------------------------------


def run_provision(args: argparse.Namespace) -> int:
    import numpy as np

    from estimator.placement import ALGORITHMS
    from estimator.placement.planning import (
        fewest_nodes,
        least_added_capacity,
        objective_of,
    )

    _check_search(args, list(ALGORITHMS))
    if args.max_nodes < 1:
        raise UsageError(f"--max-nodes: must be at least 1, got {args.max_nodes}")
    if args.node_capacity is not None and not (
        math.isfinite(args.node_capacity) and args.node_capacity > 0
    ):
        raise UsageError(f"--node-capacity: must be a positive number, got {args.node_capacity}")
    if args.mode == "capacity" and args.node_capacity is not None:
        raise UsageError("--node-capacity: applies to --mode nodes (capacity mode keeps the nodes)")
    if args.over_time is not None and args.mode != "nodes":
        raise UsageError("--over-time: applies to --mode nodes")
    if args.over_time is not None and not (math.isfinite(args.over_time) and args.over_time > 0):
        raise UsageError(f"--over-time: the window must be positive seconds, got {args.over_time}")
    if args.fugu_threshold is not None:
        if args.over_time is None:
            raise UsageError("--fugu-threshold: applies with --over-time")
        if not 0 < args.fugu_threshold <= 1:
            raise UsageError(f"--fugu-threshold: must be in (0, 1], got {args.fugu_threshold}")
    system = load_system(args)
    assert system is not None
    topology, arrivals = system.topology, system.arrivals
    objectives = parse_objectives(args.objective, topology.queries, system.objectives)
    capacity = args.node_capacity or max(n.capacity for n in topology.nodes)
    rng = np.random.default_rng(args.seed)
    if args.mode == "nodes":
        with _progress(args, "provisioning", "node counts") as tick:
            plan = fewest_nodes(
                topology,
                arrivals,
                objectives,
                node_capacity=capacity,
                max_nodes=args.max_nodes,
                algorithm=args.algorithm,
                budget=args.budget,
                rng=rng,
                progress=(lambda count: tick(count, args.max_nodes)) if tick else None,
            )
    else:
        plan = least_added_capacity(topology, arrivals, objectives)
    per_query = {
        q: {
            "mace_wc": plan.per_query[q],
            "objective": _finite_or_none(objective_of(objectives, q)),
            "ok": q not in plan.violations,
        }
        for q in topology.queries
    }
    document: dict[str, Any] = {"mode": args.mode}
    if args.mode == "nodes":
        document["nodes"] = len(plan.topology.nodes)
    else:
        document["added_capacity"] = plan.added_capacity
        document["capacities"] = dict(plan.topology.capacity_by_node)
    document.update(
        {
            "feasible": plan.feasible,
            "placement": dict(plan.topology.placement),
            "mace_wc": max(plan.per_query.values(), default=0.0),
            "per_query": per_query,
        }
    )
    timeline = None
    if args.over_time is not None:
        timeline = _timeline(args, system, objectives, capacity, rng)
        document["timeline"] = timeline.rows()
    if args.json:
        print(json_text(document))
        return 0
    print(format_provision(document, system, args, capacity, plan.reason))
    if timeline is not None:
        print(format_timeline(timeline))
    return 0


def _timeline(
    args: argparse.Namespace,
    system: System,
    objectives: Objectives,
    capacity: float,
    rng: Any,
) -> Any:
    """Hosts per window of ``--over-time`` seconds (the tightest objective for every query)."""
    from estimator.placement.fugu import DEFAULT_THRESHOLD
    from estimator.placement.planning import hosts_over_time, objective_of

    topology = system.topology
    tightest = min(objective_of(objectives, q) for q in topology.queries)
    if not math.isfinite(tightest):
        raise UsageError("--over-time: give an objective (no query has one)")
    window = max(1, round(args.over_time / topology.subinterval))
    with _progress(args, "windows", "windows") as tick:
        return hosts_over_time(
            topology,
            system.arrivals,
            tightest,
            window,
            capacity,
            DEFAULT_THRESHOLD if args.fugu_threshold is None else args.fugu_threshold,
            max_nodes=args.max_nodes,
            algorithm=args.algorithm,
            budget=args.budget,
            rng=rng,
            progress=tick,
        )


def format_provision(
    document: Mapping[str, Any],
    system: System,
    args: argparse.Namespace,
    capacity: float,
    reason: str,
) -> str:
    """The provisioning answer as text: the size, the per-query table and the placement."""
    found = "" if document["feasible"] else f"\n  NO deployment meets the objective: {reason}"
    if document["mode"] == "nodes":
        head = (
            f"{system.label}: {_count(document['nodes'], 'node')} of capacity {capacity:g} "
            f"(tried up to {args.max_nodes}, {args.algorithm} placement){found}"
        )
    else:
        head = (
            f"{system.label}: add {document['added_capacity']:.4f} capacity in all, "
            f"placement unchanged{found}"
        )
    lines = [head, f"  {'query':<20}{'MaceWC':>10}{'objective':>11}  ok   (seconds)"]
    for q, row in document["per_query"].items():
        lines.append(
            f"  {q:<20}{row['mace_wc']:>10.4f}{_objective_text(row['objective']):>11}"
            f"  {'yes' if row['ok'] else 'NO'}"
        )
    if document["mode"] == "capacity":
        lines.append("  capacities:")
        for node in system.topology.nodes:
            new = document["capacities"][node.id]
            change = "" if new == node.capacity else f"  (was {node.capacity:g})"
            lines.append(f"    {node.id:<20} {new:.4f}{change}")
    else:
        lines.append("  placement:")
        by_node: dict[str, list[str]] = {}
        for op_id, node_id in document["placement"].items():
            by_node.setdefault(node_id, []).append(op_id)
        for node_id, ops in by_node.items():
            lines.append(f"    {node_id:<8} {', '.join(ops)}")
    return "\n".join(lines)


def format_timeline(timeline: Any) -> str:
    """Hosts per window, Mace against FUGU, and the machine-hours of each."""
    mace_hours, fugu_hours = timeline.machine_hours()
    lines = [
        f"hosts over time: windows of {timeline.window_length[0] * timeline.subinterval:g} s, "
        f"objective {timeline.objective:g} s, nodes of capacity {timeline.node_capacity:g}, "
        f"FUGU threshold {timeline.fugu_threshold:g}",
        f"  {'start (s)':>10}{'Mace hosts':>12}{'MaceWC':>11}{'FUGU hosts':>12}{'FUGU MaceWC':>13}",
    ]
    missed = False
    for row in timeline.rows():
        marks = [
            "*" if value > timeline.objective else " "
            for value in (row["mace_wc"], row["fugu_mace_wc"])
        ]
        missed = missed or "*" in marks
        lines.append(
            f"  {row['start']:>10g}{row['mace_hosts']:>12}{row['mace_wc']:>10.4f}{marks[0]}"
            f"{row['fugu_hosts']:>12}{row['fugu_mace_wc']:>12.4f}{marks[1]}"
        )
    if missed:
        lines.append("  * above the objective")
    saved = fugu_hours - mace_hours
    lines.append(
        f"  machine-hours: Mace {mace_hours:.4f}, FUGU {fugu_hours:.4f} "
        f"({'saves' if saved >= 0 else 'costs'} {abs(saved):.4f} with Mace)"
    )
    return "\n".join(lines)


class _progress:
    """A tqdm bar on stderr (text output on a terminal only): ``tick(done, total)``."""

    def __init__(self, args: argparse.Namespace, desc: str, unit: str):
        self.enabled = not args.json and sys.stderr.isatty()
        self.desc, self.unit = desc, unit
        self.bar: Any = None

    def __enter__(self) -> Callable[[int, int], None] | None:
        if not self.enabled:
            return None
        from tqdm import tqdm

        self.bar = tqdm(desc=self.desc, unit=self.unit, leave=False, file=sys.stderr)
        return self.tick

    def tick(self, done: int, total: int) -> None:
        self.bar.total = total
        self.bar.n = done
        self.bar.refresh()

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.close()
