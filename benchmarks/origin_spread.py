"""Where the per-origin estimate still missed on held-out runs, and why.

The per-origin estimator (:mod:`estimator.origins`) spreads the work of each operator
port in a subinterval over its k sub-buckets like the work of the *node* the operator
runs on (the stored ``node_profile``). A node that runs operators of several queries
mixes sources that burst at different moments, so a query's work is put at the moments
of the node's other work. This study replays the same model with three spreads of the
same measured port work (``operator_stats``), through a plain compiled loop of the
model that takes each port's work per sub-bucket directly:

- ``node``: the product's spread (the loop reproduces ``origin_latency`` to 1e-9 s,
  checked on every run);
- ``port``: each port's own executions by stimulus sub-bucket (what the model assumes
  it knows; not stored);
- ``source``: each port like the arrivals of the sources upstream of it (stored as
  ``source_profile``), an operator fed by several sources mixing their shapes by the
  work of its ports in the subinterval.

For each it prints the system and per-query worst-case errors and how often the
measured latency exceeds the band without its empirical w/4 term, max(per-origin,
Mace) + (h + 2) w/k + eps. With ``--prediction`` it splits a prediction's error into
the estimator's and the fitting window's: the prediction fitted on the first 10%, 20%,
50% and 100% of the events, and the fitted load of the bottleneck's busy period.

    python -m benchmarks.origin_spread 3301/9/300 3407/13/300 3407/4/300 2101/6/300
    python -m benchmarks.origin_spread --prediction 2203/13/60

Each run is ``seed/nodes/seconds`` of the held-out generator of ``accuracy.py``. A
300 s run takes about 30 s and 3 to 5 GB of memory; runs are done one at a time.
"""

from __future__ import annotations

import argparse
import gc
from collections.abc import Mapping
from typing import Any

import numpy as np
from numba import njit

from benchmarks.accuracy import (
    fine_counts,
    first_events_stats,
    held_out_topology,
    measure_frames,
    node_fine_work,
    query_latency,
    run_case,
)
from estimator.burst import SUB_BUCKETS, sub_bucket_work
from estimator.evaluator import epsilon, estimate
from estimator.fitting import fit_operator_stats
from estimator.mace import estimate_from_dlts
from estimator.model import Topology
from estimator.origins import origin_latency
from estimator.pathaware import Detail, estimate_origin, hand_ons
from estimator.propagation import build_load_model, port_load
from estimator.runs import input_matrix, predicted_node_profile
from simulator.run import Result


@njit(cache=True)
def _late(
    fine: np.ndarray,
    row_op: np.ndarray,
    row_up: np.ndarray,
    node_of: np.ndarray,
    order: np.ndarray,
    caps: np.ndarray,
    delta: float,
) -> np.ndarray:
    """The per-origin model as a plain loop over every bucket (the rule of
    ``reference_replay`` in tests/estimator/test_origins.py), from each port row's work
    per bucket: lateness per operator and bucket."""
    rows, buckets = fine.shape
    ops, n = node_of.size, caps.size
    work = np.zeros((ops, buckets))
    for r in range(rows):
        work[row_op[r]] += fine[r]
    arriving = np.zeros((ops, buckets))
    owed = np.zeros((rows, buckets))
    ratio = np.zeros((rows, buckets))
    for r in range(rows):
        u = row_up[r]
        for s in range(buckets):
            if u >= 0 and work[u, s] > 0:
                owed[r, s] = fine[r, s]
                ratio[r, s] = fine[r, s] / work[u, s]
            else:
                arriving[row_op[r], s] += fine[r, s]
    tol = 1e-12 * max(fine.sum(), 1.0)
    pending = np.zeros((ops, buckets))
    finish = np.full((ops, buckets), -np.inf)
    first = np.zeros(n, dtype=np.int64)
    clock = np.zeros(n)
    remaining = 0.0
    step = 0
    while step < buckets or remaining > tol:
        if step < buckets:
            for o in range(ops):
                pending[o, step] += arriving[o, step]
                remaining += arriving[o, step]
        end = (step + 1) * delta
        clock[:] = step * delta
        top = min(step, buckets - 1)
        progressed = True
        while progressed:
            progressed = False
            for i in range(n):
                for s in range(first[i], top + 1):
                    if clock[i] >= end:
                        break
                    for o in order:
                        if node_of[o] != i or pending[o, s] <= 0 or clock[i] >= end:
                            continue
                        amount = pending[o, s]
                        served = min(amount, (end - clock[i]) * caps[i])
                        pending[o, s] = amount - served if amount - served > tol else 0.0
                        remaining -= amount - pending[o, s]
                        clock[i] += served / caps[i]
                        if served > tol:
                            finish[o, s] = max(finish[o, s], clock[i])
                        progressed = True
                        for r in range(rows):
                            if row_up[r] == o:
                                sent = min(served * ratio[r, s], owed[r, s])
                                owed[r, s] -= sent
                                pending[row_op[r], s] += sent
                                remaining += sent
                                first[node_of[row_op[r]]] = min(first[node_of[row_op[r]]], s)
        for i in range(n):
            s = first[i]
            while s < top and not np.any((node_of == i) & (pending[:, s] > 0)):
                s += 1
            first[i] = s
        step += 1
    return np.maximum(finish - (np.arange(buckets) + 1.0) * delta, 0.0)


def replay(topology: Topology, fine_rows: np.ndarray, k: int) -> np.ndarray:
    """Latency per query (rows in ``topology.queries``) and subinterval from each port
    row's work per bucket (rows x D*k)."""
    ops = list(topology.operators)
    index = topology.operator_index
    late = _late(
        np.ascontiguousarray(fine_rows),
        np.array([j for j, o in enumerate(ops) for _ in o.inputs], dtype=np.int64),
        np.array([index.get(u, -1) for o in ops for u in o.inputs], dtype=np.int64),
        np.array([topology.node_index[topology.placement[o.id]] for o in ops], dtype=np.int64),
        np.array([index[o] for o in topology.topological_order], dtype=np.int64),
        np.array([n.capacity for n in topology.nodes], dtype=float),
        topology.subinterval / k,
    )
    per_op = late.reshape(len(ops), -1, k).max(axis=2)
    read = {u for o in ops for u in o.inputs}
    zero = np.zeros(per_op.shape[1])
    return np.array(
        [
            np.max(
                [
                    zero,
                    *(per_op[index[o]] for o in topology.operators_of_query(q) if o not in read),
                ],
                axis=0,
            )
            for q in topology.queries
        ]
    )


def _shape(fine: np.ndarray) -> np.ndarray:
    """Each row's share of its subinterval per sub-bucket (1/k where the row has none)."""
    total = fine.sum(axis=2, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, fine / np.where(total > 0, total, 1.0), 1.0 / fine.shape[2])


def spreads(
    topology: Topology, result: Result, port_work: np.ndarray, k: int
) -> dict[str, np.ndarray]:
    """The three spreads of ``port_work`` (inputs x D), each rows x D*k."""
    intervals = port_work.shape[1]
    node_row = np.array(
        [
            topology.node_index[topology.placement[o.id]]
            for o in topology.operators
            for _ in o.inputs
        ]
    )
    node = port_work[:, :, None] * _shape(node_fine_work(result, intervals, k))[node_row]
    ex = result.telemetry.frames()["executions"]
    offsets = topology.input_offsets
    row = {
        (o.id, q): offsets[j] + q
        for j, o in enumerate(topology.operators)
        for q in range(len(o.inputs))
    }
    port = sub_bucket_work(
        np.array([row[(o, q)] for o, q in zip(ex["operator"], ex["port"], strict=True)]),
        ex["stimulus_time"].to_numpy() - topology.origin,
        ex["cpu_seconds"].to_numpy(),
        offsets[-1],
        topology.subinterval,
        k,
        intervals,
    )
    source_shape = dict(
        zip(topology.source_ids, _shape(fine_counts(result, intervals, k)), strict=True)
    )
    shape_of: dict[str, np.ndarray] = {}
    source = np.zeros_like(node)
    for op_id in topology.topological_order:
        op = topology.operator_by_id[op_id]
        mixed, weight = np.zeros((intervals, k)), np.zeros(intervals)
        for q, upstream in enumerate(op.inputs):
            r = offsets[topology.operator_index[op_id]] + q
            shape = source_shape[upstream] if upstream in source_shape else shape_of[upstream]
            source[r] = port_work[r][:, None] * shape
            mixed += source[r]
            weight += port_work[r]
        shape_of[op_id] = _shape((mixed / np.where(weight > 0, weight, 1.0)[:, None])[None])[0]
    return {
        "node": node.reshape(len(node), -1),
        "port": port.reshape(len(port), -1),
        "source": source.reshape(len(source), -1),
    }


def _pct(value: float) -> str:
    return f"{100 * value:+.2f}%"


def study(spec: str, k: int) -> dict[str, Any]:
    """The three spreads on one held-out run ``seed/nodes/seconds``."""
    seed, nodes, seconds = (int(x) for x in spec.split("/"))
    topology, model = held_out_topology(nodes, np.random.default_rng([seed, nodes]))
    result = run_case(topology, model, float(seconds), "stimulus", seed + nodes)
    measured = measure_frames(result)
    intervals = measured.latency.size
    port_work = input_matrix(topology, measured.stats, intervals)
    caps = np.array([topology.capacity_by_node[n] for n in topology.node_ids])
    w = topology.subinterval
    mace = estimate_from_dlts(
        measured.dlts, caps, list(topology.node_ids), w, epsilon(topology), {}
    )
    truth = {q: float(np.nanmax(s)) for q, s in query_latency(result, intervals).items()}
    lat = measured.latency
    valid = ~np.isnan(lat)
    margin = (hand_ons(topology) + 2) * w / k + mace.epsilon
    product = origin_latency(topology, port_work, node_fine_work(result, intervals, k), k)
    out: dict[str, Any] = {"run": spec, "lat_wc": float(np.nanmax(lat))}
    for name, fine in spreads(topology, result, port_work, k).items():
        latency = replay(topology, fine, k)
        if name == "node":
            out["loop_vs_product_s"] = float(np.abs(latency - product).max())
        series = latency.max(axis=0)
        excess = (lat - (np.maximum(series, mace.series) + margin))[valid]
        out[name] = {
            "error_wc": float(series.max() / np.nanmax(lat) - 1),
            "error_per_query": {
                q: float(latency[r].max() / truth[q] - 1) for r, q in enumerate(topology.queries)
            },
            "band_without_residual": float(np.mean(excess <= 1e-9)),
            "max_excess_s": float(max(0.0, excess.max())),
        }
    return out


def prediction(spec: str, k: int) -> dict[str, Any]:
    """A prediction's error by the share of events it was fitted on, and the fitted load
    of the busy period that holds the worst case against the first-order effect of a
    load error on a backlog, delta * rho / (rho - 1)."""
    seed, nodes, seconds = (int(x) for x in spec.split("/"))
    topology, model = held_out_topology(nodes, np.random.default_rng([seed, nodes]))
    result = run_case(topology, model, float(seconds), "stimulus", seed + nodes)
    measured = measure_frames(result)
    intervals = measured.latency.size
    lat_wc = float(np.nanmax(measured.latency))
    frames = result.telemetry.frames()
    counts_fine = fine_counts(result, intervals, k)
    caps = np.array([topology.capacity_by_node[n] for n in topology.node_ids])
    w = topology.subinterval
    est = estimate_origin.apply(
        topology,
        estimate(topology, measured.counts),
        Detail(
            node_fine=node_fine_work(result, intervals, k),
            port_work=input_matrix(topology, measured.stats, intervals),
        ),
    )
    out: dict[str, Any] = {"run": spec, "estimate_error_wc": est.worst_case / lat_wc - 1}
    mace = estimate_from_dlts(measured.dlts, caps, list(topology.node_ids), w, 0.0, {})
    p = int(np.argmax(est.series))
    i = int(np.argmax(mace.ce_seconds[: len(caps), p]))
    start = p
    while start > 0 and mace.ce_seconds[i, start - 1] > 0:
        start -= 1
    for share in (0.1, 0.2, 0.5, 1.0):
        stats, _ = first_events_stats(frames, max(1, int(share * measured.events.sum())))
        fitted = fit_operator_stats(topology, stats, (0, 1)).topology
        load = build_load_model(fitted, measured.counts)
        node_fine = predicted_node_profile(fitted, load, counts_fine, [fitted.placement], [0])
        predicted = estimate_origin.apply(
            fitted,
            estimate(fitted, measured.counts),
            Detail(node_fine=node_fine, port_work=port_load(fitted, load)),
        )
        busy = slice(start, p + 1)
        rho = float(measured.dlts[i, busy].sum() / (caps[i] * w * (p + 1 - start)))
        delta = float(node_fine[i, busy].sum() / measured.dlts[i, busy].sum() - 1)
        out[f"fitted_on_{share:g}"] = {
            "error_wc": predicted.worst_case / lat_wc - 1,
            "busy_node": topology.node_ids[i],
            "busy_from": start,
            "busy_to": p,
            "rho": rho,
            "load_error": delta,
            "first_order": delta * rho / (rho - 1),
        }
    return out


def describe(entry: Mapping[str, Any]) -> str:
    """One run's lines."""
    if "estimate_error_wc" in entry:
        lines = [f"{entry['run']}: per-origin estimate {_pct(entry['estimate_error_wc'])}"]
        for key, e in entry.items():
            if key.startswith("fitted_on_"):
                lines.append(
                    f"  prediction fitted on {key[10:]} of the events: {_pct(e['error_wc'])}; "
                    f"{e['busy_node']} busy over subintervals {e['busy_from']}..{e['busy_to']} "
                    f"at rho {e['rho']:.3f}, fitted load {_pct(e['load_error'])}, "
                    f"first-order delta rho / (rho - 1) {_pct(e['first_order'])}"
                )
        return "\n".join(lines)
    lines = [
        f"{entry['run']}: LatWC {entry['lat_wc']:.3f} s "
        f"(loop vs product {entry['loop_vs_product_s']:.1e} s)"
    ]
    for name in ("node", "port", "source"):
        e = entry[name]
        queries = ", ".join(f"{q} {_pct(v)}" for q, v in e["error_per_query"].items())
        lines.append(
            f"  {name:6} system {_pct(e['error_wc'])}; {queries}; band without w/4 "
            f"{100 * e['band_without_residual']:.2f}%, largest excess {e['max_excess_s']:.3f} s"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="held-out runs as seed/nodes/seconds")
    parser.add_argument("--sub-buckets", type=int, default=SUB_BUCKETS, help="k")
    parser.add_argument(
        "--prediction", action="store_true", help="split the prediction's error instead"
    )
    args = parser.parse_args(argv)
    for spec in args.runs:
        if len(spec.split("/")) != 3 or not all(x.isdigit() for x in spec.split("/")):
            parser.error(f"run '{spec}': expected seed/nodes/seconds, e.g. 3301/9/300")
    for spec in args.runs:
        entry = (prediction if args.prediction else study)(spec, args.sub_buckets)
        print(describe(entry), flush=True)
        gc.collect()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
