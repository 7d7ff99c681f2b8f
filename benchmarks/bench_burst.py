"""Benchmark the burst-aware and per-origin estimators against Mace's full evaluation,
in the same run.

Prints one JSON line with, as medians: ``mace_eval_s`` (arrivals to Mace, bottlenecks
and per-query figures, as in bench_estimator.py), ``burst_eval_s`` (Mace's evaluation
plus the burst refinement from a stored (head, rise, tail) profile: what ``mace
estimate``/``report`` would pay once ingestion stores the profile), ``burst_refine_s``
(the refinement alone) and ``ratio`` (burst_eval_s / mace_eval_s). ``fine_eval_s`` is
the predicted node profile from arrivals binned per sub-bucket
(:func:`estimator.runs.predicted_node_profile`, what ``mace report``'s *predicted*
computes from the stored source_profile) plus the profile reduction: the cost of a
*prediction* with the burst profile; ``fine_eval_reference_s`` the same profile from one
Mace evaluation at w / k (how it was computed before, timed in the same run) and
``fine_max_abs_diff`` the largest difference between the two profiles (CPU-seconds).
``origin_eval_s`` is Mace's evaluation plus the per-origin replay from the stored data
(the node profile and the work of every operator port, as ``mace report --estimator
origin`` has them), ``origin_replay_s`` the replay alone, ``origin_even_s`` the replay
without a profile (a prediction from a run without source_profile),
``origin_source_s`` the replay with each port spread like its sources' events (the
stored source_profile, what a run ingested with one gets) and ``origin_ratio``
origin_eval_s / mace_eval_s; ``backlogged_share`` is the share of subintervals where
Mace is above 0 (the replay skips only subintervals with nothing pending anywhere).
``origin_refused`` is the estimator's one-line refusal when the backlog window needs
more replay state than its limit (then no ``origin_*`` timings), else null.

    python benchmarks/bench_burst.py --ops 4000 --nodes 400 --intervals 3600
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from benchmarks.bench_estimator import median_seconds, on_off_arrivals, random_topology
from estimator.burst import SUB_BUCKETS, BurstProfile, burst_from_profile, burst_profile
from estimator.errors import ModelError
from estimator.evaluator import PlacementEvaluator
from estimator.mace import Estimate
from estimator.model import topology_from_dict
from estimator.pathaware import Detail, estimate_origin
from estimator.propagation import bind, build_load_model, compile_topology, port_load
from estimator.runs import predicted_node_profile


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=4000)
    parser.add_argument("--nodes", type=int, default=400)
    parser.add_argument("--intervals", type=int, default=3600)
    parser.add_argument("--sources", type=int, default=5)
    parser.add_argument("--sub-buckets", type=int, default=SUB_BUCKETS)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--busiest",
        type=float,
        help="scale every node's capacity so that the busiest node's mean load is this "
        "(e.g. 0.85, the held-out runs' load; default: the capacities as generated, "
        "which overload some nodes)",
    )
    parser.add_argument(
        "--no-fine-reference",
        action="store_true",
        help="skip fine_eval_s and its reference (an evaluation at w / k, which needs about "
        "20 GB at full scale and k = 32): the timings of the estimators only",
    )
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    k = args.sub_buckets
    topology = random_topology(args.ops, args.nodes, args.sources, rng)
    arrivals = on_off_arrivals(args.sources, args.intervals, rng)
    counts = arrivals.for_topology(topology)
    if args.busiest is not None:
        load = PlacementEvaluator(topology, build_load_model(topology, counts)).node_dlts
        factor = float(load.mean(axis=1).max()) / args.busiest
        document = topology.to_dict()
        document["nodes"] = [
            {**node, "capacity": node["capacity"] * factor} for node in document["nodes"]
        ]
        topology = topology_from_dict(document)
    # Arrivals per sub-bucket: each subinterval's events spread over k sub-buckets at random.
    split = rng.dirichlet(np.ones(k), size=counts.shape)
    fine_counts = (counts[:, :, None] * split).reshape(counts.shape[0], -1)
    coefficients = compile_topology(topology)
    fine_topology = topology.with_changes(subinterval=topology.subinterval / k)
    node_ids = list(topology.node_ids)
    query_rows = {
        q: np.isin(node_ids, [topology.placement[o] for o in topology.operators_of_query(q)])
        for q in topology.queries
    }
    caps = np.array([topology.capacity_by_node[n] for n in node_ids])

    def mace() -> Estimate:
        return PlacementEvaluator(topology, bind(coefficients, counts)).estimate()

    n = len(node_ids)

    model = bind(coefficients, counts)
    per_bucket = fine_counts.reshape(counts.shape[0], args.intervals, k)

    def fine_work() -> np.ndarray:
        return predicted_node_profile(topology, model, per_bucket, [topology.placement], [0])

    def fine_reference() -> np.ndarray:
        fine = PlacementEvaluator(fine_topology, bind(coefficients, fine_counts)).estimate()
        return fine.dlts[:n].reshape(n, args.intervals, k)

    def fine_profile() -> BurstProfile:
        return burst_profile(fine_work(), caps * topology.subinterval)

    def fine_profile_reference() -> BurstProfile:
        return burst_profile(fine_reference(), caps * topology.subinterval)

    profile = fine_profile()
    base = mace()
    stored = Detail(
        node_fine=fine_work(), port_work=port_load(topology, bind(coefficients, counts))
    )
    predicted = Detail(port_work=stored.port_work)
    by_source = Detail(port_work=stored.port_work, source_fine=per_bucket)

    def origin_replay() -> object:
        return estimate_origin.apply(topology, base, stored)

    def origin() -> object:
        return estimate_origin.apply(topology, mace(), stored)

    def origin_even() -> object:
        return estimate_origin.apply(topology, base, predicted)

    def origin_source() -> object:
        return estimate_origin.apply(topology, base, by_source)

    def refine() -> object:
        return burst_from_profile(base, profile, query_rows)

    def burst() -> object:
        return burst_from_profile(mace(), profile, query_rows)

    mace()
    burst()
    try:
        origin_replay()
        refused = None
    except ModelError as error:  # a backlog window past the replay's state limit
        refused = str(error)
    mace_s = median_seconds(mace, args.repeats)
    burst_s = median_seconds(burst, args.repeats)
    result: dict[str, object] = {
        "ops": args.ops,
        "nodes": args.nodes,
        "intervals": args.intervals,
        "sub_buckets": k,
        "busiest": args.busiest,
        "mace_eval_s": mace_s,
        "burst_eval_s": burst_s,
        "burst_refine_s": median_seconds(refine, args.repeats),
        "backlogged_share": float(np.mean(base.series > 0)),
        "origin_refused": refused,
    }
    if not args.no_fine_reference:
        timed = max(1, args.repeats // 3)
        result["fine_eval_s"] = median_seconds(fine_profile, timed)
        result["fine_eval_reference_s"] = median_seconds(fine_profile_reference, timed)
        result["fine_max_abs_diff"] = float(np.abs(fine_work() - fine_reference()).max())
    result["ratio"] = burst_s / mace_s
    if refused is None:
        timed = max(1, args.repeats // 3)
        origin_s = median_seconds(origin, timed)
        result["origin_eval_s"] = origin_s
        result["origin_replay_s"] = median_seconds(origin_replay, timed)
        result["origin_even_s"] = median_seconds(origin_even, timed)
        result["origin_source_s"] = median_seconds(origin_source, timed)
        result["origin_ratio"] = origin_s / mace_s
    print(json.dumps(result))


if __name__ == "__main__":
    main()
