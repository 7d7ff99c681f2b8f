"""Fitting selectivity and cost on one window and predicting another."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from estimator.arrivals import arrivals_from_matrix
from estimator.errors import ModelError
from estimator.evaluator import estimate
from estimator.fitting import fit_operator_stats, thread_cost, training_window
from estimator.propagation import build_load_model
from tests.estimator.helpers import chain


def measured_stats(topology, counts: np.ndarray, rng: np.random.Generator) -> pd.DataFrame:
    """Per-interval statistics an EPS would report: Poisson-thinned outputs, noisy costs."""
    model = build_load_model(topology, counts)
    rows = []
    for j, op in enumerate(topology.operators):
        for port in range(len(op.inputs)):
            events = np.round(model.input_series(j, port))
            outputs = rng.binomial((events * 4).astype(int), min(1.0, op.selectivity[port] / 4))
            cpu = events * op.cost[port] * rng.uniform(0.9, 1.1, size=events.size)
            for p in range(events.size):
                rows.append((op.id, port, p, events[p], outputs[p], cpu[p]))
    return pd.DataFrame(
        rows, columns=["operator", "port", "interval", "events_in", "events_out", "cpu_seconds"]
    )


def test_model_trained_on_one_window_predicts_another() -> None:
    rng = np.random.default_rng(7)
    truth = chain()
    counts = rng.poisson(lam=[[200.0], [60.0]], size=(2, 400)).astype(float)
    stats = measured_stats(truth, counts, rng)
    # Start from a wrong prior: every cost 10x, every selectivity 1.
    prior = truth.with_changes(
        operators=[
            {**o, "cost": np.multiply(o["cost"], 10).tolist(), "selectivity": 1.0}
            for o in truth.to_dict()["operators"]
        ]
    )
    fit = fit_operator_stats(prior, stats, window=training_window(400, 0.1))
    assert fit.unfitted == ()
    for op in fit.topology.operators:
        reference = truth.operator_by_id[op.id]
        np.testing.assert_allclose(op.cost, reference.cost, rtol=0.03)
        np.testing.assert_allclose(op.selectivity, reference.selectivity, rtol=0.1)
    test_window = arrivals_from_matrix(["a", "b"], counts[:, 200:] * 1.6)
    predicted = estimate(fit.topology, test_window)
    actual = estimate(truth, test_window)
    assert predicted.worst_case == pytest.approx(actual.worst_case, rel=0.1)
    assert estimate(prior, test_window).worst_case > 3 * actual.worst_case


def test_ports_without_events_keep_prior() -> None:
    stats = pd.DataFrame(
        [("parse", 0, 0, 10.0, 20.0, 0.2)],
        columns=["operator", "port", "interval", "events_in", "events_out", "cpu_seconds"],
    )
    fit = fit_operator_stats(chain(), stats)
    assert fit.topology.operator_by_id["parse"].cost == (0.02,)
    assert fit.topology.operator_by_id["filter"].cost == chain().operator_by_id["filter"].cost
    assert ("filter", 0) in fit.unfitted and ("join", 1) in fit.unfitted


def test_fitting_rejects_bad_frames() -> None:
    with pytest.raises(ModelError, match="missing column"):
        fit_operator_stats(chain(), pd.DataFrame({"operator": ["parse"]}))
    stats = pd.DataFrame(
        [("ghost", 0, 0, 1.0, 1.0, 1.0)],
        columns=["operator", "port", "interval", "events_in", "events_out", "cpu_seconds"],
    )
    with pytest.raises(ModelError, match="unknown operator 'ghost'"):
        fit_operator_stats(chain(), stats)
    with pytest.raises(ModelError, match="training fraction"):
        training_window(10, 0.0)
