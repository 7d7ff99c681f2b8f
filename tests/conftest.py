"""Shared fixtures: paths to bundled examples."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def figure3_dir() -> Path:
    return ROOT / "examples" / "figure3"
