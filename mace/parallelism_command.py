"""``mace plan parallelism``: the fewest subtasks whose predicted worst case meets an
objective, beside the autoscaler's utilisation rule and its predicted worst case.

The search is greedy (:func:`estimator.parallelism.fewest_subtasks`): one subtask at a
time to the vertex whose extra subtask lowers the predicted worst case most. The
utilisation rule is the Flink Kubernetes Operator autoscaler's: each vertex sized to
be busy at most ``job.autoscaler.target.utilization`` (default 0.7) of the time on the
run's mean load. Both are judged by the same model, fitted on the run, over the run's
recorded arrivals (with pipeline delays for a real engine's run), so the user sees
when the rule misses the objective or spends more subtasks than it needs. On a real
engine's run an objective below the largest engine delay (:func:`estimator.delays.
delay_floor`) is out of reach of any deployment: the search is then skipped and the
command says why.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from mace.errors import UsageError
from mace.whatif_command import (
    add_run_options,
    add_set_option,
    load_fitted_run,
)

DEFAULT_MAX_TOTAL = 256


def register(actions: argparse._SubParsersAction) -> None:
    """Add ``parallelism`` to ``mace plan``'s actions."""
    from estimator.parallelism import TARGET_UTILIZATION

    plan = actions.add_parser(
        "parallelism",
        help="fewest subtasks meeting a latency objective, beside the autoscaler's rule",
        description="The fewest total subtasks (greedy: one at a time to the vertex whose "
        "extra subtask lowers the predicted worst case most) whose predicted worst case "
        "over the run's recorded arrivals meets --objective, beside the Flink Kubernetes "
        f"Operator autoscaler's rule (target utilisation {TARGET_UTILIZATION:g}, its "
        "default) and that rule's predicted worst case. See docs/commands/whatif.md.",
    )
    add_run_options(plan)
    plan.add_argument(
        "--objective",
        type=float,
        required=True,
        metavar="SECONDS",
        help="the system's worst-case latency to meet",
    )
    plan.add_argument(
        "--max-total",
        type=int,
        default=DEFAULT_MAX_TOTAL,
        metavar="N",
        help=f"stop the search at this many subtasks in all (default {DEFAULT_MAX_TOTAL})",
    )
    plan.add_argument(
        "--target-utilization",
        type=float,
        default=TARGET_UTILIZATION,
        help=f"the utilisation rule's target (default {TARGET_UTILIZATION:g}, the autoscaler's)",
    )
    add_set_option(plan, required=False)
    plan.add_argument("--json", action="store_true", help="print one JSON object")
    plan.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from dashboard.core.deployment import (
        deployment_json,
        figures,
        parse_edits,
        restart_figures,
        work_spread,
    )
    from estimator.delays import delay_floor
    from estimator.errors import ScenarioError
    from estimator.parallelism import (
        Edits,
        fewest_subtasks,
        predict,
        resolve,
        shape_of,
        utilisation_rule,
    )

    if not (math.isfinite(args.objective) and args.objective > 0):
        raise UsageError(f"--objective: must be a positive number of seconds, got {args.objective}")
    if args.max_total < 1:
        raise UsageError(f"--max-total: must be at least 1, got {args.max_total}")
    if not 0 < args.target_utilization <= 1:
        raise UsageError(f"--target-utilization: must be in (0, 1], got {args.target_utilization}")
    fitted = load_fitted_run(Path(args.db), args.run_id)
    topology = fitted.topology
    shape = shape_of(topology)
    base = parse_edits(args.edits or [], topology, shape)
    if base.parallelism:
        raise UsageError("--set: the plan chooses the parallelism; set slots, taskmanagers, cores")
    floor = delay_floor(fitted.current.delays)
    plan = None
    if floor is None or args.objective >= floor[1]:
        plan = fewest_subtasks(
            topology,
            shape,
            fitted.operator_dlts,
            args.objective,
            args.max_total,
            base,
            fitted.finish,
        )

    recorded = resolve(shape, Edits())

    def judged(parallelism: dict[str, int]) -> dict[str, Any]:
        edits = Edits(parallelism, base.capacity, base.slots, base.taskmanagers, base.cores)
        deployment = resolve(shape, edits)
        analysis = fitted.finish(predict(topology, shape, deployment, fitted.operator_dlts))
        entry = {"deployment": deployment_json(deployment), **figures(analysis)}
        entry["meets_objective"] = entry["system"]["wc"] <= args.objective
        entry["spread"] = work_spread(fitted, shape, deployment)
        # reaching it is a rescale (unless it is the recorded deployment): its restart
        restart = None if deployment == recorded else restart_figures(fitted, deployment)
        if restart is not None:
            restart["meets_objective"] = restart["system"]["wc"] <= args.objective
        entry["restart"] = restart
        return entry

    rule = utilisation_rule(topology, shape, fitted.operator_dlts, args.target_utilization)
    try:
        by_rule = judged(rule)
    except ScenarioError as exc:
        raise UsageError(f"the utilisation rule's deployment cannot be scheduled: {exc}") from None
    document: dict[str, Any] = {
        "run": fitted.run_id,
        "objective": args.objective,
        "delays": fitted.counters,
        "floor": None if floor is None else {"query": floor[0], "seconds": floor[1]},
        "search": "greedy" if plan is not None else "none: the objective is below the floor",
        "evaluations": 0 if plan is None else plan.evaluations,
        "recommended": None
        if plan is None
        else {**judged(plan.parallelism), "feasible": plan.feasible},
        "utilization_rule": {"target": args.target_utilization, **by_rule},
        "recorded": {
            "deployment": deployment_json(recorded),
            **figures(fitted.current),
        },
    }
    if args.json:
        print(json.dumps(document))
    else:
        print(format_plan(document))
    return 0


def format_plan(document: dict[str, Any]) -> str:
    """Three lines: the recommendation (or why no deployment can meet the objective), the
    utilisation rule's, the recorded deployment."""
    from dashboard.core.deployment import deployment_text

    lines = [
        f"run {document['run']}: objective {document['objective']:g} s (system worst case, "
        "predicted over the recorded arrivals)"
    ]
    labels = {
        "recommended": "fewest subtasks (greedy)",
        "utilization_rule": f"utilisation rule {document['utilization_rule']['target']:g}",
        "recorded": "recorded",
    }
    for key, label in labels.items():
        entry = document[key]
        if entry is None:
            floor = document["floor"]
            lines.append(
                f"  {label}: none meets it: the engine delay of query {floor['query']}, "
                f"{floor['seconds']:.4f} s, is in every subinterval whatever the parallelism"
            )
            lines.append(
                "    it is the job's calm pipeline delay (bundle times, buffer timeouts, a "
                "source's discovery interval): see docs/flink.md, Engine delays"
            )
            continue
        if key == "recorded":
            lines.append(
                f"  {label}: worst {entry['system']['wc']:.4f} s; "
                f"{deployment_text(entry['deployment'])}"
            )
            continue
        lines.append(
            f"  {label}: {deployment_text(entry['deployment'])}; worst case after the "
            f"change {entry['system']['wc']:.4f} s{_verdict(entry['meets_objective'])}"
        )
        if entry["spread"] is not None:
            lines.append("    " + _spread_line(entry, document["objective"]))
        lines.append("    " + _restart_line(entry, document["recorded"]))
    if document["recommended"] is not None and not document["recommended"]["feasible"]:
        lines.append(
            "  no deployment within --max-total meets the objective: the best found is shown"
        )
    return "\n".join(lines)


def _verdict(meets: bool) -> str:
    return " meets it" if meets else " MISSES it"


def _spread_line(entry: dict[str, Any], objective: float) -> str:
    """The worst case after the change for every record's work lower and higher by the
    spread of a cost read from counters, and whether the higher one meets the objective."""
    spread = entry["spread"]
    low, high = spread["system"]["lower"], spread["system"]["higher"]
    return (
        f"with every record's work {spread['share']:.0%} lower / higher: {low:.4f} / "
        f"{high:.4f} s; the higher{_verdict(high <= objective)}"
    )


def _restart_line(entry: dict[str, Any], recorded: dict[str, Any]) -> str:
    """The one-time restart of reaching ``entry``'s deployment, or why there is none."""
    restart = entry["restart"]
    if restart is None:
        if entry["deployment"] == recorded["deployment"]:
            return "no restart: it is the recorded deployment"
        return "worst case including the restart: not predicted (no restart measured on this run)"
    return (
        f"worst case including the restart: {restart['system']['wc']:.4f} s"
        f"{_verdict(restart['meets_objective'])} (once: a {restart['downtime']:.2f} s stop, "
        f"the median of {restart['measured']} measured on this run, at its worst moment "
        f"tried, subinterval {restart['interval']})"
    )
