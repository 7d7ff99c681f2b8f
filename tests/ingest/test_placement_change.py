"""A simulated placement change, ingested by Spark, is a second placement version."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from ingest import extract
from ingest.job import ingest_once
from simulator.run import simulate
from simulator.telemetry import write_run
from storage.db import connect
from storage.reads import placement_versions
from tests.simulator.test_placement_changes import two_nodes


@pytest.mark.spark
def test_simulated_change_ingests_as_a_new_placement_version(spark, tmp_path: Path) -> None:
    topology = two_nodes()
    arrivals = {"s": np.arange(0.0, 8.0, 0.7)}
    result = simulate(topology, arrivals, changes=[(4.25, {"b": "n2"})])
    write_run(result.telemetry, topology, tmp_path / "landing", "moved", versions=result.versions)
    db = tmp_path / "mace.duckdb"
    summary = ingest_once(tmp_path / "landing", db, spark)
    assert summary.rows_quarantined == 0 and summary.rows_kept > 0
    con = connect(db, read_only=True)
    try:
        versions = placement_versions(con, "moved")
        stats = con.execute(
            "SELECT sum(events_in) FROM operator_stats WHERE run_id = ? AND operator = 'b'",
            ["moved"],
        ).fetchall()
    finally:
        con.close()
    assert [(v.version, v.valid_from, v.placement) for v in versions] == [
        (0, 0.0, {"a": "n1", "b": "n1"}),
        (1, 4.25, {"a": "n1", "b": "n2"}),
    ]
    assert stats[0][0] == len(arrivals["s"])  # every event reached b, moved or not


def test_a_version_file_gives_the_time_the_job_stopped_before_it(tmp_path: Path) -> None:
    run = tmp_path / "landing" / "r"
    run.mkdir(parents=True)
    document = two_nodes().to_dict()
    (run / "topology.yaml").write_text(yaml.safe_dump(document))
    rescaled = {**document, "stopped": 4.0}
    (run / "topology-4.250.yaml").write_text(yaml.safe_dump(rescaled))
    (run / "topology-9.000.yaml").write_text(yaml.safe_dump({**document, "stopped": 9.5}))
    (found,) = extract.discover(tmp_path / "landing", set())
    assert [(v[0], v[3]) for v in found.versions] == [(4.25, 4.0)]
    (warning,) = found.warnings  # a stop after the version is no stop before it
    assert warning.startswith("topology-9.000.yaml ignored:") and "stopped" in warning
