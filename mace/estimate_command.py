"""``mace estimate``: Mace, bounds and bottlenecks for a topology and an arrival series."""

from __future__ import annotations

import argparse
import json

from estimator.arrivals import Arrivals
from estimator.auto import AUTO, DEFAULT, Choice
from estimator.loaders import load_arrivals, load_placement, load_topology
from estimator.mace import Estimate
from estimator.model import Topology
from estimator.pathaware import ESTIMATORS, Estimator, estimate_mace, estimator_by_name
from mace.options import add_max_intervals, max_intervals


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "estimate",
        help="estimate latency (Mace) for a topology and arrival series",
        description="Compute DLTS, cumulative excess, the Mace series, bounds and per-query "
        "estimates for a topology file and an arrival series (CSV or Parquet).",
    )
    parser.add_argument("topology", help="topology file (YAML or JSON)")
    parser.add_argument("--arrivals", required=True, help="arrival series: source,interval,events")
    parser.add_argument("--placement", help="placement file overriding the topology's placement")
    add_max_intervals(parser)
    parser.add_argument(
        "--estimator",
        choices=[AUTO, *sorted(ESTIMATORS)],
        default=DEFAULT,
        help="a registered estimator: "
        + ", ".join(f"{name} ({e.label})" for name, e in ESTIMATORS.items())
        + "; default auto, the most accurate one whose cost fits the interaction budget "
        "(printed with the reason)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the JSON object of docs/design.md, 'Command line'",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    topology = load_topology(args.topology)
    if args.placement:
        topology = topology.with_placement(load_placement(args.placement))
    arrivals = load_arrivals(args.arrivals, topology, max_intervals=max_intervals(args))
    if args.estimator == AUTO:
        choice, result = auto_estimate(topology, arrivals)
    else:
        choice = Choice(args.estimator, "chosen with --estimator")
        result = estimator_by_name(args.estimator)(topology, arrivals)
    chosen = estimator_by_name(choice.name)
    if args.json:
        used = {"name": choice.name, "label": chosen.label, "reason": choice.reason}
        print(json.dumps({**result.to_json(), "estimator_used": used}))
    else:
        print(format_summary(topology.name, result, chosen))
        print(f"  estimator       {chosen.label}: {choice.reason}")
    return 0


def auto_estimate(topology: Topology, arrivals: Arrivals) -> tuple[Choice, Estimate]:
    """The estimate :func:`estimator.auto.pick` chooses for ``arrivals`` on ``topology`` (a
    prediction: the model's port work, no node profile), with the reason; Mace's
    evaluation runs first and gives the backlog the replay's state is predicted from."""
    from estimator import auto
    from estimator.burst import SUB_BUCKETS

    base = estimate_mace(topology, arrivals)
    worst = float(base.series.max()) if base.series.size else 0.0
    size = auto.run_size(topology, base.series.size, None, port_work=True, mace_worst_s=worst)

    def compute(name: str) -> Estimate:
        return base if name == "mace" else estimator_by_name(name)(topology, arrivals)

    return auto.run_picked(size, SUB_BUCKETS, compute)


def format_summary(name: str, result: Estimate, estimator: Estimator = estimate_mace) -> str:
    """A readable report: worst case, bounds, quantiles, bottlenecks and per-query figures.

    ``estimator`` (a registered one) names the worst case; the lower bound is always Mace's."""
    summary = result.summary()
    heading = estimator.worst_case_heading
    worst = int(result.series.argmax()) if result.series.size else 0
    counts: dict[str, int] = {}
    for resource, value in zip(result.bottleneck, result.series, strict=True):
        if value > 0:
            counts[resource] = counts.get(resource, 0) + 1
    lines = [
        f"{name}: {result.series.size} subintervals of {result.subinterval:g} s",
        f"  {heading:<16}{result.worst_case:.4f} s at subinterval {worst}",
        f"  latency bounds  [{result.lower.max():.4f}, {result.upper.max():.4f}] s "
        f"(eps {result.epsilon:.6f} s)",
        f"  mean / p50 / p95 / p99  {summary['mean']:.4f} / {summary['p50']:.4f} / "
        f"{summary['p95']:.4f} / {summary['p99']:.4f} s",
        "  bottlenecks     "
        + (
            ", ".join(
                f"{r} ({n} subintervals)" for r, n in sorted(counts.items(), key=lambda kv: -kv[1])
            )
            or "none (no backlog)"
        ),
        f"  per query ({heading}):",
    ]
    for query, series in result.per_query.items():
        lines.append(f"    {query:<14} {float(series.max()) if series.size else 0.0:.4f} s")
    return "\n".join(lines)
