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

import atexit
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

    prepare_job_forks()
    directory = cache_dir or tempfile.mkdtemp(prefix="mace-dash-jobs-")
    return DiskcacheManager(diskcache.Cache(str(directory)))


_PREPARED: list[bool] = []


def prepare_job_forks() -> None:
    """Make forked jobs safe for the server (once per process). The server forks a job
    while its other threads (requests, DuckDB) may be halfway through changing objects
    or holding a lock:

    - a collection in the child that walked such objects died of a segmentation fault,
      now and then, in the test suite: frozen before the fork (``gc.freeze``) they are
      out of the child's collections for its short life, and the server unfreezes its
      own right after;
    - a child can wait for ever on a lock it inherited held, and the interpreter's exit
      joins every job it started: the server stops its jobs first (:func:`stop_jobs`;
      a full test run that had passed once hung 15 minutes there)."""
    if _PREPARED:
        return
    import multiprocess.util  # noqa: F401  (registers its exit join; ours then runs first)

    os.register_at_fork(before=gc.freeze, after_in_parent=gc.unfreeze)
    atexit.register(stop_jobs)
    _PREPARED.append(True)


def stop_jobs() -> None:
    """Terminate the background jobs still running (the server is exiting)."""
    import multiprocess

    for child in multiprocess.active_children():
        child.terminate()
        child.join(5)
