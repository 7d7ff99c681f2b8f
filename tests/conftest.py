"""Shared fixtures: paths to bundled examples."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def figure3_dir() -> Path:
    return ROOT / "examples" / "figure3"


@pytest.fixture(scope="session")
def spark():  # type: ignore[no-untyped-def]
    """One local SparkSession for the whole test session (quiet, UI off, 2 shuffle partitions)."""
    from ingest.session import get_spark

    session = get_spark("local[2]", shuffle_partitions=2)
    yield session
    session.stop()
