"""A counter-measured run rescaled from 1 to 2 subtasks, through a real Spark session into a
real DuckDB file: the second topology version's capacities are stored, and ``mace report
--json`` verifies the rescale under ``changes``.

The landing folder is what ``mace collect flink`` writes for a vertex ``op`` (0.1 s of
work per record) whose threads run inside a TaskManager of 4 cores: ``topology.yaml`` at
parallelism 1, ``topology-<epoch>.yaml`` at parallelism 2 from t = 30 s, cumulative
counters sampled every second, and the probe's ``outputs/`` rows. The counters and
latencies come from a first-come-first-served queue with one server, then two: a burst
of 15 records/s for 10 s before the change (one thread: 1.5 CPU-s/s for a capacity of 1)
and of 25 records/s after it (two threads: 2.5 for 2), 5 records/s otherwise.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from connectors.flink.collector import SAMPLE_SCHEMA
from ingest.job import ingest_once
from mace.cli import main
from storage.db import connect
from storage.reads import placement_versions

pytestmark = pytest.mark.spark

ORIGIN = 1_000.0
CHANGE = 30
SECONDS = 60
COST = 0.1
DOCUMENT = {
    "name": "rescaled",
    "subinterval": 1.0,
    "origin": ORIGIN,
    "nodes": [
        {"id": "op-threads", "capacity": 1.0, "host": "tm-a"},
        {"id": "tm-a", "capacity": 4.0},
    ],
    "sources": [{"id": "s"}],
    "operators": [{"id": "op", "query": "op", "inputs": ["s"], "cost": 0.001}],
    "placement": {"op": "op-threads"},
}


def rate(second: int) -> int:
    if 10 <= second < 20:
        return 15
    if 40 <= second < 50:
        return 25
    return 5


def queue() -> list[tuple[float, float, float, int]]:
    """(arrival, start, end, subtask) of every record: first come first served on the
    earliest free subtask; the second one exists from the change on."""
    free = [ORIGIN, ORIGIN + CHANGE]
    served = []
    for second in range(SECONDS):
        n = rate(second)
        for j in range(n):
            arrival = ORIGIN + second + (j + 0.5) / n
            usable = [k for k in range(2) if k == 0 or arrival >= ORIGIN + CHANGE]
            subtask = min(usable, key=lambda k: free[k])
            start = max(arrival, free[subtask])
            free[subtask] = start + COST
            served.append((arrival, start, start + COST, subtask))
    return served


def write_landing(landing: Path) -> None:
    run = landing / "rescaled"
    (run / "samples").mkdir(parents=True)
    (run / "outputs").mkdir()
    (run / "topology.yaml").write_text(yaml.safe_dump(DOCUMENT, sort_keys=False))
    later = {**DOCUMENT, "nodes": [{**DOCUMENT["nodes"][0], "capacity": 2.0}, DOCUMENT["nodes"][1]]}
    (run / f"topology-{ORIGIN + CHANGE:.3f}.yaml").write_text(yaml.safe_dump(later))
    served = queue()
    rows = []
    for k in range(SECONDS + 1):
        t = ORIGIN + k
        arrived = sum(1 for a, _, _, _ in served if a < t)
        rows.append(
            {"time": t, "node": "tm-a", "operator": "s", "subtask": 0, "port": -1,
             "records_in": 0.0, "records_out": float(arrived), "busy_seconds": math.nan}
        )  # fmt: skip
        for subtask in (0, 1) if k >= CHANGE else (0,):
            mine = [(s, e) for _, s, e, sub in served if sub == subtask]
            rows.append(
                {"time": t, "node": "op-threads", "operator": "op", "subtask": subtask,
                 "port": -1, "records_in": float(sum(1 for _, e in mine if e <= t)),
                 "records_out": float(sum(1 for _, e in mine if e <= t)),
                 "busy_seconds": sum(max(0.0, min(e, t) - s) for s, e in mine)}
            )  # fmt: skip
    pq.write_table(pa.Table.from_pylist(rows, schema=SAMPLE_SCHEMA), run / "samples" / "s.parquet")
    outputs = pa.table(
        {
            "query": ["op"] * len(served),
            "operator": ["op"] * len(served),
            "stimulus_time": [a for a, _, _, _ in served],
            "egress_time": [e for _, _, e, _ in served],
        }
    )
    pq.write_table(outputs, run / "outputs" / "o.parquet")


def test_a_rescaled_run_is_stored_and_its_change_verified(
    spark, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:  # type: ignore[no-untyped-def]
    write_landing(tmp_path / "landing")
    db = tmp_path / "mace.duckdb"
    summary = ingest_once(tmp_path / "landing", db, spark)
    assert summary.rows_quarantined == 0 and not summary.failed_runs
    con = connect(db, read_only=True)
    try:
        versions = placement_versions(con, "rescaled")
    finally:
        con.close()
    assert [(v.version, v.valid_from, v.capacities) for v in versions] == [
        (0, ORIGIN, {"op-threads": 1.0, "tm-a": 4.0}),
        (1, ORIGIN + CHANGE, {"op-threads": 2.0, "tm-a": 4.0}),
    ]
    assert main(["report", "--db", str(db), "--run", "rescaled", "--json"]) == 0
    (change,) = json.loads(capsys.readouterr().out)["changes"]
    assert (change["interval"], change["version"], change["moved"]) == (CHANGE, 1, [])
    assert change["rescaled"] == [{"node": "op-threads", "from": 1.0, "to": 2.0}]
    # fitted before the change (0.1 s per record): 5 s of backlog at the end of the first
    # burst on one thread, 5 CPU-s on two threads (2.5 s) after it; the queue measured
    # the same plus a record's own 0.1 s, which the calibrated pipeline delay adds
    assert change["predicted_wc_before"] == pytest.approx(change["measured_wc_before"], rel=0.15)
    assert change["predicted_wc_after"] == pytest.approx(change["measured_wc_after"], rel=0.15)
    assert change["measured_wc_after"] < 0.6 * change["measured_wc_before"]
