"""Long searches on the pages (optimize, admit, provision, hosts over time) as Dash
background callbacks: one way to declare them, so that each shows it is running the
same way (its start button disabled, a Cancel button enabled, progress shown).

Background manager: :func:`create_manager` builds a ``DiskcacheManager``. ``mace
serve`` is one process that owns the DuckDB file (DESIGN 2), and a diskcache
directory needs no broker or extra service; each job runs in a child process
forked from the server (so Cancel can kill it without touching the server) and
reads the run's what-if inputs from the engine it inherits, never the database.
A deployment with several server processes behind a load balancer needs a
shared result store instead (a ``CeleryManager`` with Redis, made here); the
callbacks do not change.
"""

from __future__ import annotations

import gc
import os
import tempfile
from pathlib import Path
from typing import Any

import dash_bootstrap_components as dbc
from dash import DiskcacheManager, Input, Output


def background_job(
    start: str,
    *,
    cancel: str | None = None,
    bar: str | None = None,
    text: str | None = None,
    busy: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """Keyword arguments of ``callbacks.callback`` for a search started by the button ``start``.

    ``cancel``: a button enabled while the job runs, which stops it. ``bar``: a
    ``dbc.Progress`` the job sets with ``(percent, label)``; ``text``: a component whose
    text the job sets with a string. ``busy``: (component, text) shown while it runs.
    """
    running: list[tuple[Output, Any, Any]] = [(Output(start, "disabled"), True, False)]
    options: dict[str, Any] = {"background": True, "prevent_initial_call": True}
    if cancel is not None:
        running.append((Output(cancel, "disabled"), False, True))
        options["cancel"] = [Input(cancel, "n_clicks")]
    if busy is not None:
        running.append((Output(busy[0], "children"), busy[1], ""))
    if bar is not None:
        options["progress"] = [Output(bar, "value"), Output(bar, "label")]
        options["progress_default"] = [0, ""]
    elif text is not None:
        options["progress"] = Output(text, "children")
        options["progress_default"] = ""
    options["running"] = running
    return options


def job_buttons(label: str, start: str, cancel: str) -> list[dbc.Button]:
    """A job's start button and its Cancel button (enabled by the job while it runs)."""
    return [
        dbc.Button(label, id=start, size="sm", color="success"),
        dbc.Button(
            "Cancel", id=cancel, size="sm", color="warning", className="ms-1", disabled=True
        ),
    ]


def create_manager(cache_dir: str | Path | None = None) -> DiskcacheManager:
    """The background callback manager of one app (a fresh cache directory by default)."""
    import diskcache

    freeze_inherited_objects()
    directory = cache_dir or tempfile.mkdtemp(prefix="mace-dash-jobs-")
    return DiskcacheManager(diskcache.Cache(str(directory)))


_FREEZING: list[bool] = []


def freeze_inherited_objects() -> None:
    """Keep a forked job's garbage collector off the objects it inherits (once per
    process). The server forks a job while its other threads (requests, DuckDB) may be
    halfway through changing objects; a collection in the child that walked them died
    of a segmentation fault, now and then, in the test suite. Frozen before the fork
    (``gc.freeze``) they are out of the child's collections for its short life; the
    server unfreezes its own right after."""
    if not _FREEZING:
        os.register_at_fork(before=gc.freeze, after_in_parent=gc.unfreeze)
        _FREEZING.append(True)
