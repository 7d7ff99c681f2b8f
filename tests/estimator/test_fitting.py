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


def _thread_rows(served: list[float], busy: list[float]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "operator": "op",
            "port": 0,
            "interval": range(len(served)),
            "events_in": served,
            "events_out": served,
            "cpu_seconds": busy,
        }
    )


def test_a_thread_serving_a_queue_costs_its_capacity_over_its_rate() -> None:
    """Calm for 15 s at 20 records/s, then 300 offered a second for 20 s while the
    thread serves 125, and it goes on serving 125 a second into the queue left: from 5 s
    into the burst the queue holds more than 2 s of records at every second's end, and
    the thread's cost is 1 / 125. Its busy time (a Python operator's thread, mostly
    idle while its worker works) says nothing of it."""
    served = [20.0] * 15 + [125.0] * 25
    offered = pd.Series([20.0] * 15 + [300.0] * 20 + [20.0] * 5)
    busy = [0.4] * 15 + [0.3] * 25
    rows = _thread_rows(served, busy)
    assert thread_cost(rows, 1.0, offered) == pytest.approx(1 / 125)
    # without the offered records, the busy time is all there is: 20 ms a record at
    # 20 a second, 2.4 ms at 125, a falling line, so no reading
    assert thread_cost(rows, 1.0) is None


def test_a_thread_without_a_queue_is_read_from_its_busy_time() -> None:
    # busy = 4 ms a record + 0.2 s a second: full at 200 records a second, 5 ms each
    rates = [20.0, 40.0, 60.0, 80.0, 100.0, 120.0]
    served = [r for r in rates for _ in range(5)]
    busy = [0.004 * r + 0.2 for r in served]
    rows = _thread_rows(served, busy)
    assert thread_cost(rows, 1.0, pd.Series(served)) == pytest.approx(0.005)
    saturated = _thread_rows([180.0] * 20, [0.95] * 20)
    assert thread_cost(saturated, 1.0) == pytest.approx(1 / 180)
