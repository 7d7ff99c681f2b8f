"""The one way every callback of the dashboard is declared and given to an app, and the
opening every server callback shares (the chosen run, a failure as one message).

Declaring: a module makes one :class:`Callbacks` and decorates its functions with
``callbacks.callback(...)`` (the arguments of ``dash.callback``) or declares a browser
script with ``callbacks.clientside_callback(...)``. Nothing reaches Dash at import.
Registering: a feature's :class:`Page` lists its pieces; ``create_app`` calls
:meth:`Page.register` on every app it builds, which adds the page to Dash's page
registry and gives each declared callback to that app with ``app.callback``. So every
app (tests build many in one process) gets every callback exactly once, background
callbacks included, with no rule about which module may use ``dash.callback``.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

import dash

from dashboard import context
from dashboard.core.data import RunData
from dashboard.core.errors import ViewError
from dashboard.core.progress import waiting_message
from estimator.errors import MaceError
from storage.dashboard_reads import ingestion_progress

P = ParamSpec("P")
R = TypeVar("R")


class Callbacks:
    """Callbacks declared at import, given to each app by :meth:`register`."""

    def __init__(self) -> None:
        self._declared: list[tuple[tuple[Any, ...], dict[str, Any], Callable[..., Any]]] = []
        self._clientside: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def callback(self, *args: Any, **kwargs: Any) -> Callable[[Callable[P, R]], Callable[P, R]]:
        """Like ``dash.callback``; the function is returned unchanged (testable as is)."""

        def declare(function: Callable[P, R]) -> Callable[P, R]:
            self._declared.append((args, kwargs, function))
            return function

        return declare

    def clientside_callback(self, script: str, *args: Any, **kwargs: Any) -> None:
        """Like ``dash.clientside_callback``: ``script`` runs in the browser, without a
        request to the server."""
        self._clientside.append((script, args, kwargs))

    def register(self, app: dash.Dash) -> None:
        """Give the declared callbacks to ``app``. Each gets copies of its declaration:
        Dash merges a callback's inputs into the ``state`` dict it is given, which must
        not leak into another callback or another app."""
        for args, kwargs, function in self._declared:
            app.callback(*copy.deepcopy(args), **copy.deepcopy(kwargs))(function)
        for script, args, kwargs in self._clientside:
            app.clientside_callback(script, *copy.deepcopy(args), **copy.deepcopy(kwargs))


@dataclass(frozen=True)
class Page:
    """A page of the top bar: where it is, its name and place, its layout (called per
    request with the URL's query parameters) and the callbacks of its modules."""

    module: str
    path: str
    name: str
    order: int
    layout: Callable[..., Any]
    callbacks: Sequence[Callbacks]

    def register(self, app: dash.Dash) -> None:
        """Add the page to Dash's page registry and its callbacks to ``app`` (called
        right after ``app`` is created, before another app is)."""
        dash.register_page(
            self.module, path=self.path, name=self.name, order=self.order, layout=self.layout
        )
        for declared in self.callbacks:
            declared.register(app)


class NoRun(ViewError):
    """No run is chosen in the top bar (none ingested yet, or the list is loading)."""


def chosen_run(
    run_id: str | None, missing: str = "select a run", *, statistics: bool = True
) -> RunData:
    """The run ``run_id`` of the app serving this request; :class:`NoRun` with the text
    ``missing`` if none is chosen; with ``statistics`` (the figures need them), a
    :class:`ViewError` saying how far ingestion has come if the run has none yet."""
    if not run_id:
        raise NoRun(missing)
    current = context.current()
    run = current.runs.get(run_id)
    if statistics and run.intervals == 0:
        with current.database.cursor() as cur:
            raise ViewError(waiting_message(run.info.run_id, ingestion_progress(cur)))
    return run


def answers(
    failure: Callable[..., Any], *, arguments: bool = False
) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """A callback that answers ``failure(message)`` when it raises a :class:`MaceError`
    (no run chosen, an unknown run, a bad field): the page shows one line, the server
    stays up. With ``arguments``, ``failure`` also gets the callback's own arguments
    (``failure(message, *args, **kwargs)``). Put it under ``callbacks.callback``."""

    def wrap(function: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(function)
        def answered(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return function(*args, **kwargs)
            except MaceError as exc:
                if arguments:
                    return failure(str(exc), *args, **kwargs)
                return failure(str(exc))

        return answered

    return wrap
