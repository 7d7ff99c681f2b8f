"""The Dash web app: overview, nodes, what-if and reports (docs/design.md, "What the product does").

One folder per feature, each with its ids, layout, callbacks, views and figures:
``overview``, ``nodes``, ``whatif`` (its tabs inside), ``reports``, ``health`` and
``help``. A feature imports only ``shell`` (what every page shares: the top bar and
its pickers, callback registration, background jobs, theme, shared figure pieces, the
operator graph, the glossary) and ``core`` (runs and their cache, report, monitoring,
violations, time axis: no Dash, so the ``mace`` commands may use it). The commands
import only :func:`create_app`, ``core`` and :mod:`dashboard.context`; import-linter
checks all of this (``make check``).

Callbacks are registered one way. A module declares its callbacks on its own
:class:`dashboard.shell.callbacks.Callbacks` (``@callbacks.callback(...)``, with the
arguments of ``dash.callback``; browser scripts with ``callbacks.clientside_callback``);
nothing reaches Dash at import. Each feature's ``page.py`` lists them in a
:class:`dashboard.shell.callbacks.Page`, and :func:`create_app` registers every page
on the app it builds: the page goes into Dash's page registry and each callback onto
that app with ``app.callback``. So every app (tests build many in one process) gets
every callback once, background callbacks included; ``dash.callback``, which hands
its callbacks to whichever app is set up next, is not used. A server callback opens
with :func:`dashboard.shell.callbacks.chosen_run` (the run of the top bar) and is
wrapped in :func:`dashboard.shell.callbacks.answers`, which turns a ``MaceError``
into the callback's one-line failure answer.

``create_app`` is imported on first use, so importing a core module such as
:mod:`dashboard.core.report` does not load Dash.
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
