"""A run simulated in pieces equals the run simulated in one piece, record for record:
the engine's state, the arrival streams and the live simulator carry everything across."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from estimator.model import Topology
from mace.demo_command import demo_workload
from simulator.errors import SimulationError
from simulator.live import run_live
from simulator.plan import COST_DISTRIBUTIONS, POLICIES
from simulator.run import Simulation, simulate
from simulator.telemetry import RECORD_SETS, TIME_COLUMN, Telemetry
from simulator.workloads import workload_model
from tests.simulator.test_engines import bursty_arrivals, random_topology


def in_pieces(
    topology: Topology,
    arrivals: dict[str, np.ndarray],
    cuts: list[float],
    rng: np.random.Generator,
    **options: Any,
) -> dict[str, pa.Table]:
    """The run advanced to each cut in turn, then to the end; the records concatenated."""
    simulation = Simulation(topology, rng=rng, **options)
    parts: list[Telemetry] = []
    for end in [*cuts, np.inf]:
        start = simulation.horizon
        piece = {s: t[(t >= start) & (t < end)] for s, t in arrivals.items()}
        parts.append(simulation.advance(piece, end))
    return {n: pa.concat_tables([p.table(n) for p in parts]) for n in RECORD_SETS}


def one_piece(
    topology: Topology, arrivals: dict[str, np.ndarray], rng: np.random.Generator, **options: Any
) -> dict[str, pa.Table]:
    telemetry = simulate(topology, arrivals, rng=rng, **options).telemetry
    return {name: telemetry.table(name) for name in RECORD_SETS}


def sorted_arrivals(tables: dict[str, pa.Table]) -> dict[str, pa.Table]:
    """Arrivals come per piece in time order (one piece: in time order too, but the
    pieces' concatenation matches it only up to the order of equal times)."""
    out = dict(tables)
    out["arrivals"] = tables["arrivals"].sort_by([("stimulus_time", "ascending")])
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    nodes=st.integers(1, 3),
    policy=st.sampled_from(POLICIES),
    distribution=st.sampled_from(COST_DISTRIBUTIONS),
    cuts=st.lists(st.integers(1, 299), max_size=8, unique=True),
    change=st.one_of(st.none(), st.integers(1, 299)),
)
def test_pieces_equal_one_piece(
    seed: int, nodes: int, policy: str, distribution: str, cuts: list[int], change: int | None
) -> None:
    topology = random_topology(seed, nodes)
    # s2's times are rounded to 0.01 s and the cuts fall on that grid: source events and
    # completions at exactly a cut
    arrivals = bursty_arrivals(seed, 300, 3.0)
    moves = [] if change is None else [(change / 100, {"o0": f"n{(seed + 1) % nodes}"})]
    options = {"policy": policy, "cost_distribution": distribution, "changes": moves}
    pieces = in_pieces(
        topology, arrivals, sorted(c / 100 for c in cuts), np.random.default_rng(seed), **options
    )
    whole = one_piece(topology, arrivals, np.random.default_rng(seed), **options)
    assert whole["executions"].num_rows > 0
    assert sorted_arrivals(pieces) == sorted_arrivals(whole)


def test_a_backlog_longer_than_a_piece_is_carried() -> None:
    """An overloaded minute (the queue grows for 60 s, drains after): cut every 5 s, every
    record is the same, latencies far longer than a piece included."""
    topology, model = workload_model("clickstream", load=1.4)
    arrivals = model.sample(90.0, np.random.default_rng(5))
    arrivals = {s: t[t < 60.0] for s, t in arrivals.items()}
    cuts = [5.0 * k for k in range(1, 40)]
    pieces = in_pieces(topology, arrivals, cuts, np.random.default_rng(5))
    whole = one_piece(topology, arrivals, np.random.default_rng(5))
    outputs = whole["outputs"].to_pandas()
    assert (outputs.egress_time - outputs.stimulus_time).max() > 10.0
    assert pieces == whole


def test_checkpoint_and_restore_replay_the_same_records() -> None:
    topology = random_topology(11, 2)
    arrivals = bursty_arrivals(11, 300, 3.0)
    simulation = Simulation(topology, rng=np.random.default_rng(2))
    first = {s: t[t < 1.0] for s, t in arrivals.items()}
    second = {s: t[(t >= 1.0) & (t < 2.0)] for s, t in arrivals.items()}
    simulation.advance(first, 1.0)
    saved = simulation.checkpoint()
    once = simulation.advance(second, 2.0)
    simulation.restore(saved)
    again = simulation.advance(second, 2.0)
    assert all(once.table(n) == again.table(n) for n in RECORD_SETS)
    assert once.table("executions").num_rows > 0


def test_pieces_out_of_order_are_refused() -> None:
    topology = random_topology(1, 1)
    simulation = Simulation(topology)
    simulation.advance({"s1": np.array([0.5])}, 1.0)
    with pytest.raises(SimulationError, match="is not after"):
        simulation.advance({}, 1.0)
    with pytest.raises(SimulationError, match=r"must lie in \[1, 2\)"):
        simulation.advance({"s1": np.array([0.9])}, 2.0)
    with pytest.raises(SimulationError, match="before the simulated time"):
        simulation.set_changes([(0.5, {"o0": "n0"})])


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 1000),
    cuts=st.lists(st.floats(0.0, 120.0, allow_nan=False), max_size=10),
    workload=st.sampled_from(["clickstream-5q", "stocks"]),
)
def test_arrival_stream_read_in_pieces_equals_one_read(
    seed: int, cuts: list[float], workload: str
) -> None:
    _, model = workload_model(workload)
    once = model.stream(np.random.default_rng(seed), 100.0).until(220.0)
    stream = model.stream(np.random.default_rng(seed), 100.0)
    reads = [stream.until(100.0 + c) for c in sorted(cuts)] + [stream.until(220.0)]
    for name, times in once.items():
        assert times.size and times.min() >= 100.0 and times.max() < 220.0
        assert np.array_equal(np.concatenate([r[name] for r in reads]), times)


def test_live_run_equals_the_run_in_one_piece(tmp_path: Path) -> None:
    """The demo's live run on a fake clock (segments of 10 s, a flush every 1.3 s) writes
    exactly the records of the one-piece run of the same arrivals, seed and origin, its
    backlogs longer than a segment included."""
    topology, model = demo_workload(4)
    origin = 1_700_000_000.0
    now = [origin]
    flushed: list[float] = []
    stop = threading.Event()

    def tick(index: int, written: dict) -> None:
        flushed.append(now[0])
        now[0] += 1.3
        if now[0] > origin + 120.0:
            stop.set()

    run_dir = run_live(
        topology, model, tmp_path, "live", stop, seed=4, flush_every=0.001, segment=10.0,
        clock=lambda: now[0], on_flush=tick,
    )  # fmt: skip
    end = flushed[-1]  # the last flush wrote every record due by then
    arrivals = model.stream(np.random.default_rng([4, 2]), origin).until(end + 10.0)
    whole = simulate(
        topology.with_changes(origin=origin), arrivals, rng=np.random.default_rng([4, 3])
    ).telemetry
    for name, column in TIME_COLUMN.items():
        live = pq.read_table(run_dir / name)  # the files in the order they were written
        due = whole.table(name).filter(pc.less_equal(whole.table(name)[column], end))
        assert live.num_rows > 1000
        assert live == due.cast(live.schema)  # the files store plain strings
    outputs = pq.read_table(run_dir / "outputs").to_pandas()
    assert (outputs.egress_time - outputs.stimulus_time).max() > 10.0
