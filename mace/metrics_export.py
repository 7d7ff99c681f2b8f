"""What ``mace serve`` exposes at ``/metrics`` for Prometheus (and Grafana beside Flink's
own metrics): the product's estimates and predictions of the newest runs.

Per run and query, for the last complete subinterval (the newest stored one may still
be filling, so it is the one before it):

- ``mace_estimated_latency_seconds`` / ``mace_predicted_latency_seconds``: the
  estimator's latency from the measured work and from the model fitted on the run's
  training share applied to the arrivals;
- ``mace_predicted_band_lower_seconds`` / ``..._upper_seconds``: the predicted band
  (Theorem 3: Mace .. Mace + w + eps for Mace);
- ``mace_measured_latency_seconds``: the measured maximum, where the job reports one;
- ``mace_worst_case_latency_seconds{kind}``: MaceWC (and the predicted one) over the
  last ``window`` seconds;
- ``mace_objective_seconds`` and ``mace_objective_compliance_ratio`` (the share of
  measured subintervals of the window meeting it);
- ``mace_drift_state``: 1 while the measured latency is above the predicted band for
  at least k subintervals, -1 below it, 0 otherwise (:mod:`estimator.drift`);

and per node ``mace_node_ce_seconds`` (CE/C) and ``mace_bottleneck`` (1 on the node
whose CE/C is Mace). Labels reuse Flink's names: ``job_name`` (the topology's name, the
Flink job's name for a collected job) and ``operator_name`` (the operators on a node), so
a Grafana panel can put a prediction beside Flink's measured series with one query each.

The computation (:func:`run_metrics`) reads loaded runs only; :func:`mount` adds the
route to the Flask server under the app, behind the app's authentication.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from estimator.drift import ABOVE, DEFAULT_K, drift_events
from estimator.runs import DEFAULT_TRAINING_SHARE

if TYPE_CHECKING:
    import flask

    from dashboard.core.data import RunData

METRICS_PATH = "/metrics"
DEFAULT_WINDOW_SECONDS = 300.0
MAX_RUNS = 3
"""The newest runs exported (each one is kept loaded by the app's run cache)."""
PREFIX = "mace_"


@dataclass(frozen=True)
class Sample:
    """One gauge value: metric name (without the prefix), help text, labels, value."""

    name: str
    help: str
    labels: tuple[tuple[str, str], ...]
    value: float


HELP = {
    "estimated_latency_seconds": "Latency estimated from the measured work, last complete "
    "subinterval",
    "predicted_latency_seconds": "Latency predicted by the fitted model from the arrivals, "
    "last complete subinterval",
    "predicted_band_lower_seconds": "Lower edge of the predicted band (Mace)",
    "predicted_band_upper_seconds": "Upper edge of the predicted band",
    "measured_latency_seconds": "Measured maximum latency, last complete subinterval",
    "worst_case_latency_seconds": "Worst case over the window (kind=estimated: MaceWC)",
    "objective_seconds": "Latency objective of the query",
    "objective_compliance_ratio": "Share of measured subintervals of the window meeting "
    "the objective",
    "drift_state": "1: measured above the predicted band for k subintervals, -1: below, 0: inside",
    "node_ce_seconds": "Cumulative excess over capacity (CE/C) of a node, last complete "
    "subinterval",
    "bottleneck": "1 on the node whose CE/C is the estimate (the bottleneck)",
    "last_complete_subinterval_end_timestamp_seconds": "End of the subinterval the "
    "latencies are of",
}


def run_metrics(
    run: RunData,
    objectives: Mapping[str, float],
    *,
    window_seconds: float = DEFAULT_WINDOW_SECONDS,
    share: float = DEFAULT_TRAINING_SHARE,
) -> list[Sample]:
    """Every sample of one loaded run (none when it has no complete subinterval)."""
    from dashboard.core.report import analyses

    n = run.intervals
    if n < 2:
        return []
    last = n - 2  # the newest stored subinterval may still be filling
    width = max(1, round(window_seconds / run.subinterval))
    first = max(0, last - width + 1)
    result = analyses(run, share)
    estimated, predicted = result.estimated, result.predicted
    base = (("run_id", run.info.run_id), ("job_name", run.topology.name))
    window_label = ("window", f"{window_seconds:g}s")
    samples: list[Sample] = []

    def add(name: str, labels: tuple[tuple[str, str], ...], value: float) -> None:
        if math.isfinite(value):
            samples.append(Sample(name, HELP[name], base + labels, float(value)))

    end = run.info.origin + (last + 1) * run.subinterval
    add("last_complete_subinterval_end_timestamp_seconds", (), end)
    queries: dict[str, tuple[np.ndarray, ...]] = {
        q: (
            estimated.per_query[q],
            predicted.per_query[q],
            predicted.per_query_lower.get(q, predicted.per_query[q]),
            predicted.query_upper(q),
            run.latency[q].lat_max,
        )
        for q in run.topology.queries
    }
    for query, (est, pred, lower, upper, measured) in queries.items():
        labels = (("query", query),)
        add("estimated_latency_seconds", labels, est[last])
        add("predicted_latency_seconds", labels, pred[last])
        add("predicted_band_lower_seconds", labels, lower[last])
        add("predicted_band_upper_seconds", labels, upper[last])
        add("measured_latency_seconds", labels, measured[last])
        for kind, series in (("estimated", est), ("predicted", pred), ("measured", measured)):
            part = np.asarray(series[first : last + 1], dtype=float)
            if np.isfinite(part).any():
                add(
                    "worst_case_latency_seconds",
                    (*labels, ("kind", kind), window_label),
                    float(np.nanmax(part)),
                )
        objective = objectives.get(query)
        if objective is not None:
            add("objective_seconds", labels, objective)
            seen = np.asarray(measured[first : last + 1], dtype=float)
            seen = seen[np.isfinite(seen)]
            if seen.size:
                add(
                    "objective_compliance_ratio",
                    (*labels, window_label),
                    float(np.mean(seen <= objective + 1e-9)),
                )
        add("drift_state", labels, _drift_state(measured[: last + 1], lower, upper, last))
    hosted: dict[str, list[str]] = {}
    for operator, node in run.topology.placement.items():
        hosted.setdefault(node, []).append(operator)
    ce = np.asarray(estimated.ce_seconds, dtype=float)
    bottleneck = int(np.asarray(estimated.bottleneck)[last])
    for index, node in enumerate(estimated.node_ids):
        on_node = (("node", node), ("operator_name", ",".join(sorted(hosted.get(node, [])))))
        add("node_ce_seconds", on_node, ce[index, last])
        add("bottleneck", on_node, 1.0 if index == bottleneck else 0.0)
    return samples


def _drift_state(measured: np.ndarray, lower: np.ndarray, upper: np.ndarray, last: int) -> float:
    """1 / -1 while a drift event (above / below the predicted band) is still going at
    the last measured subinterval, else 0."""
    seen = np.asarray(measured, dtype=float)
    finite = np.flatnonzero(np.isfinite(seen))
    if finite.size == 0:
        return math.nan
    events = drift_events(seen, lower[: last + 1], upper[: last + 1], DEFAULT_K)
    ongoing = [e for e in events if e.end == finite[-1]]
    if not ongoing:
        return 0.0
    return 1.0 if ongoing[-1].direction == ABOVE else -1.0


class MaceCollector:
    """A ``prometheus_client`` collector: every scrape computes the samples of the newest
    runs (``runs()`` lists run ids oldest first, ``load`` and ``objectives`` read one)."""

    def __init__(
        self,
        runs: Callable[[], list[str]],
        load: Callable[[str], RunData],
        objectives: Callable[[str], Mapping[str, float]],
        window_seconds: float = DEFAULT_WINDOW_SECONDS,
    ):
        self.runs = runs
        self.load = load
        self.objectives = objectives
        self.window_seconds = window_seconds

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        from estimator.errors import MaceError

        families: dict[str, Any] = {}
        failed = 0
        for run_id in self.runs()[-MAX_RUNS:]:
            try:
                samples = run_metrics(
                    self.load(run_id), self.objectives(run_id), window_seconds=self.window_seconds
                )
            except MaceError:
                failed += 1  # a run that cannot be estimated yet (e.g. no arrivals)
                continue
            for sample in samples:
                if sample.name not in families:
                    labels = [k for k, _ in sample.labels]
                    families[sample.name] = GaugeMetricFamily(
                        PREFIX + sample.name, sample.help, labels=labels
                    )
                families[sample.name].add_metric([v for _, v in sample.labels], sample.value)
        yield from families.values()
        errors = GaugeMetricFamily(
            PREFIX + "runs_failed", "Newest runs whose metrics could not be computed"
        )
        errors.add_metric([], failed)
        yield errors


def mount(server: flask.Flask, collector: MaceCollector) -> None:
    """Serve ``collector`` at :data:`METRICS_PATH` on ``server`` (the app's Flask server:
    its ``before_request`` authentication applies)."""
    import flask
    from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)

    def metrics() -> flask.Response:
        return flask.Response(generate_latest(registry), mimetype=CONTENT_TYPE_LATEST)

    server.add_url_rule(METRICS_PATH, "mace_metrics", metrics)
