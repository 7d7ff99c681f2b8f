"""Shared fixtures: paths to bundled examples, the Spark session and small test databases
(written without Spark) for the dashboard and command tests."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from storage.db import connect
from storage.scenarios import set_objective
from tests.dashboard.builders import SHIFTING_CPU, TANDEM_CPU, TANDEM_TOPOLOGY, write_small_run

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def figure3_dir() -> Path:
    return ROOT / "examples" / "figure3"


@pytest.fixture
def free_port() -> int:
    """A TCP port free on 127.0.0.1 (for commands that serve the dashboard)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def short_drift_training(monkeypatch: pytest.MonkeyPatch) -> None:
    """Drift looked for with the default model however short its window: the drift test
    runs last 40 s, whose first 10% fall far short of ``MIN_DRIFT_TRAINING`` (that rule
    has tests of its own)."""
    from dashboard.core import monitoring

    monkeypatch.setattr(monitoring, "MIN_DRIFT_TRAINING", 0.0)


@pytest.fixture(scope="session")
def spark():  # type: ignore[no-untyped-def]
    """One local SparkSession for the whole test session (quiet, UI off, 2 shuffle partitions)."""
    from ingest.session import get_spark

    session = get_spark("local[2]", shuffle_partitions=2)
    yield session
    session.stop()


@pytest.fixture
def small_db(tmp_path: Path) -> Path:
    """The hand-computed run of test_report, with an objective of 1 s for q1."""
    db = tmp_path / "small.duckdb"
    write_small_run(db)
    con = connect(db)
    set_objective(con, "small", "q1", 1.0)
    con.close()
    return db


@pytest.fixture
def tandem_db(tmp_path: Path) -> Path:
    """The hand-computed two-node tandem run of builders.TANDEM_TOPOLOGY."""
    db = tmp_path / "tandem.duckdb"
    write_small_run(db, "tandem", document=TANDEM_TOPOLOGY, measured_cpu=TANDEM_CPU)
    return db


@pytest.fixture
def shifting_db(tmp_path: Path) -> Path:
    """A run whose bottleneck moves from n1 to n2 (hand-computed in builders.SHIFTING_CPU)."""
    db = tmp_path / "shifting.duckdb"
    write_small_run(db, "shift", measured_cpu=SHIFTING_CPU)
    return db
