"""Fitting selectivity and cost on one window and predicting another."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from estimator.arrivals import arrivals_from_matrix
from estimator.errors import ModelError
from estimator.evaluator import estimate
from estimator.fitting import (
    UNMEASURED,
    ThreadCost,
    counts_fixed_time,
    fit_operator_stats,
    fluid_served,
    served_rate,
    thread_cost,
    training_window,
    without_lumps,
)
from estimator.model import Topology, topology_from_dict
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


def test_records_without_measured_time_keep_the_topologys_cost_and_say_so() -> None:
    """A Flink metric fetcher slower than the training window: records came in, no busy
    time did. The cost stays the topology's, read as such, not as CPU per record."""
    stats = pd.DataFrame(
        [("parse", 0, 0, 10.0, 20.0, 0.2), ("filter", 0, 0, 20.0, 10.0, 0.0)],
        columns=["operator", "port", "interval", "events_in", "events_out", "cpu_seconds"],
    )
    fit = fit_operator_stats(chain(), stats)
    readings = {p.operator: (p.cost, p.reading) for p in fit.ports}
    assert readings["parse"] == (pytest.approx(0.02), "cpu per record")
    assert readings["filter"] == (chain().operator_by_id["filter"].cost[0], UNMEASURED)


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
    read = thread_cost(rows, 1.0, offered)
    assert read is not None and read.reading == "queued"
    assert read.cost == pytest.approx(1 / 125, rel=1e-3)
    # without the offered records, the busy time is all there is: 20 ms a record at
    # 20 a second, 2.4 ms at 125, a falling line; the least a block shows is what is left
    assert thread_cost(rows, 1.0) == ThreadCost(pytest.approx(0.3 / 125), "least busy per record")
    # the calm part alone (blocks of one rate) has no line to read: None, the plain ratio
    assert thread_cost(rows[rows["interval"] < 15], 1.0, offered) is None


def test_a_thread_without_a_queue_is_read_from_its_busy_time() -> None:
    # busy = 4 ms a record + 0.2 s a second: full at 200 records a second, 5 ms each
    rates = [20.0, 40.0, 60.0, 80.0, 100.0, 120.0]
    served = [r for r in rates for _ in range(5)]
    busy = [0.004 * r + 0.2 for r in served]
    rows = _thread_rows(served, busy)
    read = thread_cost(rows, 1.0, pd.Series(served))
    assert read == ThreadCost(pytest.approx(0.005), "busy-time line")
    saturated = _thread_rows([180.0] * 20, [0.95] * 20)
    assert thread_cost(saturated, 1.0) == ThreadCost(pytest.approx(1 / 180), "saturated")


def _plain_fluid(offered: list[float], rate: float) -> list[float]:
    """One first-come-first-served server of ``rate`` records per subinterval, by hand."""
    queue, out = 0.0, []
    for arriving in offered:
        queue += arriving
        out.append(min(queue, rate))
        queue -= out[-1]
    return out


@settings(max_examples=60, deadline=None)
@given(
    offered=st.lists(st.floats(0, 500), min_size=1, max_size=40),
    rates=st.lists(st.floats(0.5, 400), min_size=1, max_size=4),
)
def test_fluid_served_is_a_first_come_first_served_server(
    offered: list[float], rates: list[float]
) -> None:
    served = fluid_served(np.array(offered), np.array(rates))
    for row, rate in zip(served, rates, strict=True):
        assert row == pytest.approx(_plain_fluid(offered, rate), abs=1e-6)


@settings(max_examples=40, deadline=None)
@given(
    rate=st.floats(50, 400),
    overload=st.floats(1.3, 4.0),
    calm=st.integers(5, 30),
    burst=st.integers(6, 30),
    lump=st.integers(1, 4),
)
def test_a_served_rate_is_read_back_from_a_queue_even_when_served_in_lumps(
    rate: float, overload: float, calm: int, burst: int, lump: int
) -> None:
    """A server of ``rate`` fed a burst of ``overload`` x its rate, whose counter shows
    what it served only every ``lump`` subintervals (a Python operator's bundles): the
    fitted rate is the server's, within 2% plus what half a lump of lag makes of the
    burst (counted at a lump's end, records look served that much later). A queue no
    longer than a few lumps looks like lumps read late, and is not asked for."""
    assume((overload - 1) * burst >= 3 * lump)
    offered = [0.2 * rate] * calm + [overload * rate] * burst + [0.2 * rate] * (3 * burst)
    true = _plain_fluid(offered, rate)
    shown = [0.0] * len(true)
    for k in range(0, len(true), lump):  # all of a lump counted at its last subinterval
        shown[min(k + lump, len(true)) - 1] = sum(true[k : k + lump])
    fitted = served_rate(np.array(offered), np.array(shown))
    assert fitted == pytest.approx(rate, rel=0.02 + 0.5 * (lump - 1) / burst)


@settings(max_examples=40, deadline=None)
@given(
    offered=st.lists(st.floats(0, 300), min_size=10, max_size=60),
    lag=st.integers(0, 2),
)
def test_an_operator_that_keeps_up_has_no_served_rate(offered: list[float], lag: int) -> None:
    """Served = offered, counted up to ``lag`` subintervals late: no server rate
    explains that better than a server without limit does."""
    shown = [0.0] * lag + offered[: len(offered) - lag]
    shown[-1] += sum(offered[len(offered) - lag :])
    assert served_rate(np.array(offered), np.array(shown)) is None


def _thread_topology() -> Topology:
    """One operator on a thread of a TaskManager (a node with a host), fed by source s."""
    return topology_from_dict(
        {
            "name": "threads",
            "subinterval": 1.0,
            "nodes": [
                {"id": "op-threads", "capacity": 1.0, "host": "tm"},
                {"id": "tm", "capacity": 2.0},
            ],
            "sources": [{"id": "s"}],
            "operators": [{"id": "op", "query": "q", "inputs": ["s"], "cost": 0.001}],
            "placement": {"op": "op-threads"},
        }
    )


@pytest.mark.parametrize(
    ("fixed", "per_record", "waits"),
    [
        (0.2, 0.002, True),  # 0.2 s a second whatever comes: 12 ms a record at 20/s, 3.7 at 120
        (0.0, 0.004, False),  # work only: 4 ms a record at every load
    ],
)
def test_a_thread_whose_busy_time_is_not_its_work_is_told(
    fixed: float, per_record: float, waits: bool
) -> None:
    rates = [20.0, 40.0, 60.0, 80.0, 100.0, 120.0]
    served = [r for r in rates for _ in range(10)]
    rows = _thread_rows(served, [fixed + per_record * r for r in served])
    fit = fit_operator_stats(_thread_topology(), rows, None, np.array([served]))
    (port,) = fit.ports
    low, high = port.busy_per_record or (0.0, 0.0)
    assert low == pytest.approx((fixed + per_record * 30) / 30)  # rates 20 and 40
    assert high == pytest.approx((fixed + per_record * 110) / 110)  # rates 100 and 120
    assert port.waits is waits
    assert port.reading == "busy-time line"


@settings(max_examples=60, deadline=None)
@given(
    blocks=st.lists(st.tuples(st.floats(1, 300), st.floats(0.01, 0.85)), min_size=3, max_size=12)
)
def test_a_thread_cost_read_from_busy_time_is_never_above_a_blocks_busy_time_per_record(
    blocks: list[tuple[float, float]],
) -> None:
    """Busy time per record of any block is at least the cost (busy = c * records + f,
    f >= 0): a cost read from busy time alone never exceeds the least busy time per
    record a block shows, and without rates a line can lean on (the busiest block's
    under twice the calmest's) there is no reading."""
    served = [rate for rate, _ in blocks for _ in range(5)]
    busy = [share for _, share in blocks for _ in range(5)]
    read = thread_cost(_thread_rows(served, busy), 1.0)
    rates = [rate for rate, _ in blocks]
    if max(rates) < 2 * min(rates):
        assert read is None
    else:
        assert read is not None
        assert read.cost <= min(share / rate for rate, share in blocks) * (1 + 1e-9)


def test_a_line_through_noisy_blocks_is_capped_at_the_least_busy_time_per_record() -> None:
    # blocks (records/s, busy share): (20, 0.2), (45, 0.62), (50, 0.45); by hand, the
    # least-squares line has slope 11.06 ms and intercept below 0, so it reads 11.06 ms
    # a record, above the 9 ms the third block shows: the cost is 9 ms
    blocks = [(20.0, 0.2), (45.0, 0.62), (50.0, 0.45)]
    served = [rate for rate, _ in blocks for _ in range(5)]
    busy = [share for _, share in blocks for _ in range(5)]
    read = thread_cost(_thread_rows(served, busy), 1.0)
    assert read == ThreadCost(pytest.approx(0.009), "least busy per record")


def test_a_thread_with_measured_work_costs_its_work() -> None:
    """A calm window: busy 0.4 s a second at 20 records/s (20 ms a record, mostly the
    wait for a bundle) while its Python worker spent 3 ms a record: the record costs
    its work. So it does when the worker spent 30 ms a record, more than the busy time
    shows (a thread can be idle while its worker works), and where a queue shows a
    served rate of 125 records/s (8 ms a record) while the worker spent 2 ms a record:
    that rate holds the thread's wait for an interpreter its neighbours share, which
    the worker's node models. Without the worker's time the busy time is all there is,
    and the served rate is the cost."""
    calm = _thread_rows([20.0] * 15, [0.4] * 15).assign(work_seconds=0.06)
    fit = fit_operator_stats(_thread_topology(), calm, None, np.array([[20.0] * 15]))
    (port,) = fit.ports
    assert (port.cost, port.reading) == (pytest.approx(0.003), "worker time per record")
    overhead = calm.assign(work_seconds=0.6)
    (port,) = fit_operator_stats(_thread_topology(), overhead, None).ports
    assert (port.cost, port.reading) == (pytest.approx(0.03), "worker time per record")
    not_measured = calm.assign(work_seconds=np.nan)
    (port,) = fit_operator_stats(_thread_topology(), not_measured, None).ports
    assert (port.cost, port.reading) == (pytest.approx(0.02), "busy time per record")
    served = [20.0] * 15 + [125.0] * 25
    offered = np.array([[20.0] * 15 + [300.0] * 20 + [20.0] * 5])
    rows = _thread_rows(served, [0.4] * 15 + [0.3] * 25)
    (port,) = fit_operator_stats(_thread_topology(), rows, None, offered).ports
    assert (port.cost, port.reading) == (pytest.approx(1 / 125, rel=1e-3), "queued")
    measured = rows.assign(work_seconds=[0.002 * n for n in served])
    (port,) = fit_operator_stats(_thread_topology(), measured, None, offered).ports
    assert (port.cost, port.reading) == (pytest.approx(0.002), "worker time per record")


def test_a_thread_without_busy_time_costs_its_workers_time() -> None:
    """A Python operator chained behind a legacy source: Flink measures no busy time for
    its thread (0 once ingested), while its worker spent 3 ms a record: the record costs
    that, not the topology's prior."""
    blind = _thread_rows([20.0] * 15, [0.0] * 15).assign(work_seconds=0.06)
    (port,) = fit_operator_stats(_thread_topology(), blind, None).ports
    assert (port.cost, port.reading, port.busy_per_record) == (
        pytest.approx(0.003),
        "worker time per record",
        None,
    )
    unmeasured = blind.assign(work_seconds=np.nan)
    (port,) = fit_operator_stats(_thread_topology(), unmeasured, None).ports
    assert port.reading == UNMEASURED


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(1, 200), st.floats(0.001, 0.9), st.one_of(st.none(), st.floats(0, 2))
        ),
        min_size=1,
        max_size=30,
    )
)
def test_measured_work_is_the_cost_of_a_thread_without_a_queue(
    rows: list[tuple[int, float, float | None]],
) -> None:
    """Against a plain computation: with work measured, the cost is the work over the
    records of the intervals that measured it between bundle finishes (after the first
    interval with work, up to the last, where three or more have work; the second
    interval with work left out too where its work per record is 3 times the rest's or
    more), whatever busy time alone reads (a full thread's rate included: its busy time
    is waiting for the work done outside it)."""
    frame = pd.DataFrame(
        {
            "operator": "op", "port": 0, "interval": range(len(rows)),
            "events_in": [float(n) for n, _, _ in rows],
            "events_out": [float(n) for n, _, _ in rows],
            "cpu_seconds": [b for _, b, _ in rows],
            "work_seconds": [np.nan if w is None else w for _, _, w in rows],
        }
    )  # fmt: skip
    (alone,) = fit_operator_stats(_thread_topology(), frame.drop(columns="work_seconds")).ports
    (port,) = fit_operator_stats(_thread_topology(), frame).ports
    finishes = [k for k, (_, _, w) in enumerate(rows) if w is not None and w > 0]
    if len(finishes) >= 3:
        span = [k for k in range(len(rows)) if finishes[0] < k <= finishes[-1]]
        second, rest = finishes[1], [k for k in span if k != finishes[1]]
        rest_work = sum(rows[k][2] or 0.0 for k in rest)
        rest_records = sum(rows[k][0] for k in rest)
        if rest_records > 0 and (rows[second][2] or 0.0) >= 3.0 * rows[second][0] * (
            rest_work / rest_records
        ):
            span = rest
        rows = [rows[k] for k in span]
    measured = [(n, w) for n, _, w in rows if w is not None]
    work = sum(w for _, w in measured) / sum(n for n, _ in measured) if measured else 0.0
    if work <= 0:
        assert (port.cost, port.reading) == (alone.cost, alone.reading)
    else:
        assert (port.cost, port.reading) == (pytest.approx(work), "worker time per record")


def test_records_served_about_as_offered_are_not_a_queue() -> None:
    """The training window of a fan-out run (counts as measured, a Python operator at
    15 records a second, far below its rate): a server of the peak offered rate fits
    them, keeping a record or two waiting now and then. That is no queue, and its rate
    (about 15 a second, 67 ms a record against 3 ms of work) no measure of the thread;
    the prediction fitted on it was 46 times the measured worst case."""
    offered = np.array([12, 16, 17, 15, 13, 12, 18], dtype=float)
    served = np.array([12, 14, 16, 15, 13, 14, 16], dtype=float)
    assert served_rate(offered, served) is None


def test_a_full_thread_whose_work_is_measured_elsewhere_costs_its_work() -> None:
    """A thread busy 95% of every second at 200 records a second is full: it serves
    200 a second, 5 ms a record of its time. Its Python worker spent 1.5 ms on each:
    the thread was waiting, not working, and the record costs its work. Without the
    worker's time, the full thread's rate is all there is."""
    full = _thread_rows([200.0] * 20, [0.95] * 20)
    (port,) = fit_operator_stats(_thread_topology(), full, None).ports
    assert (port.cost, port.reading) == (pytest.approx(1 / 200), "saturated")
    (port,) = fit_operator_stats(_thread_topology(), full.assign(work_seconds=0.3), None).ports
    assert (port.cost, port.reading) == (pytest.approx(0.0015), "worker time per record")


def test_a_lump_of_worker_time_is_no_subintervals_work() -> None:
    """Ten calm seconds at 20 records/s, 3 ms a record of worker time, and a restart's
    second in which the collector charged 9.3 s to 5 records. On a host of 2 cores no
    worker does more than 4 s of work and waiting in a second: that second is left
    unmeasured, and a record costs 3 ms, not (0.6 + 9.3) / 205 = 48 ms. A second of
    3.9 s is kept."""
    served = [20.0] * 10 + [5.0]
    work = [0.06] * 10 + [9.3]
    topology = topology_from_dict(
        {
            "name": "one worker",
            "subinterval": 1.0,
            "nodes": [
                {"id": "op-threads", "capacity": 1.0, "host": "python-worker@tm"},
                {"id": "python-worker@tm", "capacity": 1.0},
                {"id": "tm", "capacity": 2.0},
            ],
            "sources": [{"id": "s"}],
            "operators": [{"id": "op", "query": "q", "inputs": ["s"], "cost": 0.001}],
            "placement": {"op": "op-threads"},
        }
    )
    frame = _thread_rows(served, [0.5] * len(served)).assign(work_seconds=work)
    kept = without_lumps(topology, frame)
    assert kept["work_seconds"].isna().tolist() == [False] * 10 + [True]
    (port,) = fit_operator_stats(topology, frame).ports
    assert (port.cost, port.reading) == (pytest.approx(0.003), "worker time per record")
    below = frame.assign(work_seconds=[0.06] * 10 + [3.9])
    assert without_lumps(topology, below)["work_seconds"].notna().all()
    # a thread whose host is the TaskManager itself: its cores bound the worker too
    (port,) = fit_operator_stats(_thread_topology(), frame).ports
    assert port.cost == pytest.approx(0.003)


def test_a_python_operators_work_comes_a_bundle_at_a_time_and_its_cost_is_still_exact() -> None:
    """Its thread takes 40 records a second for 20 s, 225 a second for 10 s, then 40
    again for 20 s; its worker runs each bundle's records at the bundle's finish, every
    2 s when calm and every 3 s in the burst, 2.9 ms a record, and the first bundle
    also carries the worker's start (1.2 s). Work and records in one second or one block
    of five then belong to different records (a bundle finished after the block that
    took its records), which made a line through blocks read far too flat a slope;
    between the first finish and the last, the work is the records' work: 2.9 ms,
    in the first 10 s too."""
    taken = [40.0] * 20 + [225.0] * 10 + [40.0] * 20
    finishes = list(range(1, 20, 2)) + list(range(22, 30, 3)) + list(range(31, 50, 2))
    work = [0.0] * len(taken)
    last = -1
    for finish in finishes:
        work[finish] = 0.0029 * sum(taken[last + 1 : finish + 1])
        last = finish
    work[1] += 1.2
    rows = _thread_rows(taken, [0.3] * len(taken)).assign(work_seconds=work)
    for window in (None, (0, 10)):
        (port,) = fit_operator_stats(_thread_topology(), rows, window).ports
        assert (port.cost, port.reading) == (pytest.approx(0.0029), "worker time per record")


@pytest.mark.parametrize(("fixed", "told"), [(0.0, False), (0.006, False), (0.031, True)])
def test_a_calm_first_part_counts_the_workers_fixed_time_per_record(
    fixed: float, told: bool
) -> None:
    """A Python operator's worker spends 3 ms a record and ``fixed`` s every second
    whatever its records; 15 records a second come for the first 10 s, 120 for the next
    30. Over the first 10 s the cost reads 3 ms + fixed / 15 (5.07 ms at 31 ms a second),
    over the run 3 ms + fixed / 94 (3.33 ms): 1.52 times, told; at 6 ms a second 3.4 ms
    against 3.06 ms (1.11 times) is not, nor is no fixed time."""
    taken = [15.0] * 10 + [120.0] * 30
    rows = _thread_rows(taken, [0.3] * len(taken)).assign(
        work_seconds=[0.003 * n + fixed for n in taken]
    )
    (whole,) = fit_operator_stats(_thread_topology(), rows, None).ports
    (first,) = fit_operator_stats(_thread_topology(), rows, (0, 10)).ports
    rate, first_rate = sum(taken) / len(taken), 15.0
    assert first.cost == pytest.approx(0.003 + fixed / 15, rel=0.02)
    assert whole.cost == pytest.approx(0.003 + fixed / rate, rel=0.02)
    assert counts_fixed_time(whole.cost, first.cost, rate, first_rate) is told
    # a first part busier than the rest is never told, however its costs compare
    assert not counts_fixed_time(whole.cost, first.cost, first_rate, rate)
