"""The Dash web app: live overview, nodes, what-if and reports (DESIGN sections 1 and 8).

Only the ``mace`` commands (and tests and benchmarks) import this package.
``create_app`` is imported on first use, so importing a helper module such as
:mod:`dashboard.report` does not load Dash.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {"create_app": "dashboard.app"}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Import on first use (Dash takes half a second to import)."""
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'dashboard' has no attribute {name!r}")
