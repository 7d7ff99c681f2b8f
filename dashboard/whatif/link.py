"""A What-if scenario's pinned baseline window, and the scenario in the URL, so that a
copied link reproduces the scenario.

The baseline ("current") of a scenario is the run fitted and replayed on a window of
subintervals, pinned when the scenario starts: while live data arrives, every edit and
every search compares against the same window, until the user re-pins it to the latest
data. The page keeps the windows in a session store, ``{run id: [start, stop]}``
(subintervals [start, stop)).

A copied link reproduces the view: the URL's ``scenario=`` value carries the run, the
pinned window and the edits' actions and values (JSON, compressed, base64url). The run
is inside, so that a link whose top-bar run changed never applies one run's edits to
another. Reading a link never trusts it: a value that cannot be read, a window outside
the run's data, or an edit that does not apply is left out, and the page says so.
"""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dashboard.core.timeaxis import Clock
from dashboard.whatif import scenario
from estimator.errors import MaceError
from estimator.whatif import RunInputs, ScenarioError

MAX_LINK_CHARS = 8192
"""The longest ``scenario=`` value read from a URL."""
MAX_LINK_JSON = 65536
"""The most bytes a ``scenario=`` value may expand to (a zip bomb is refused)."""


def clock(seconds: float) -> str:
    """Time since the run's start as m:ss, or h:mm:ss from one hour."""
    total = max(0, round(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def window_for(store: Any, run_id: str | None) -> tuple[int, int] | None:
    """The pinned window of ``run_id`` in the session store (None: not pinned yet, or a
    malformed entry)."""
    if not run_id or not isinstance(store, Mapping):
        return None
    value = store.get(run_id)
    if (
        isinstance(value, Sequence)
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        and 0 <= value[0] < value[1]
    ):
        return int(value[0]), int(value[1])
    return None


def with_window(store: Any, run_id: str, window: tuple[int, int]) -> dict[str, Any]:
    """The session store with ``run_id``'s window replaced (other runs kept)."""
    out = dict(store) if isinstance(store, Mapping) else {}
    out[run_id] = [int(window[0]), int(window[1])]
    return out


@dataclass(frozen=True)
class Baseline:
    """The window a scenario's baseline uses, and how much data the run has now."""

    start: int
    stop: int
    intervals: int
    subinterval: float

    @property
    def label(self) -> str:
        """``baseline: 0:00–10:00 (pinned)``, and the newer data it leaves out."""
        return self.text()

    def text(self, axis: Clock | None = None) -> str:
        """:attr:`label` on the shared clock ``axis``: on a wall clock
        ``baseline: 12:03:04–12:13:04 UTC (pinned)``."""
        w = self.subinterval
        if axis is not None and axis.wall:
            text = f"baseline: {axis.span(self.start * w, self.stop * w)} (pinned)"
            newest = axis.point(self.intervals * w)
        else:
            text = f"baseline: {clock(self.start * w)}–{clock(self.stop * w)} (pinned)"
            newest = clock(self.intervals * w)
        if self.intervals > self.stop:
            text += f"; the run's data now reaches {newest}"
        return text


@dataclass(frozen=True)
class Link:
    """What a link's ``scenario=`` value holds: the run, its pinned window (None: not
    given) and the (action, values) pairs of its edits."""

    run_id: str
    window: tuple[int, int] | None
    pairs: list[tuple[str, dict[str, Any]]]


def encode_link(
    run_id: str, window: tuple[int, int] | None, edits: Sequence[Mapping[str, Any]]
) -> str:
    """The URL's ``scenario=`` value of a run's scenario. Labels are left out: reading
    the link recomputes them."""
    payload = {
        "run": run_id,
        "window": list(window) if window else None,
        "edits": [[e["action"], e["values"]] for e in edits],
    }
    raw = json.dumps(payload, separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(zlib.compress(raw, 9)).decode().rstrip("=")


def decode_link(text: str) -> Link:
    """A ``scenario=`` value read back; ScenarioError if it cannot be read (too long, not
    base64url, not compressed JSON of the expected shape)."""
    unreadable = ScenarioError("the link's scenario cannot be read: it was left out")
    if len(text) > MAX_LINK_CHARS:
        raise unreadable
    try:
        packed = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        inflater = zlib.decompressobj()
        raw = inflater.decompress(packed, MAX_LINK_JSON)
        if inflater.unconsumed_tail:
            raise unreadable
        payload = json.loads(raw)
    except (binascii.Error, ValueError, zlib.error, RecursionError):
        raise unreadable from None
    if not isinstance(payload, dict) or not isinstance(payload.get("run"), str):
        raise unreadable
    pairs = payload.get("edits")
    if not isinstance(pairs, list) or not all(
        isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) and isinstance(p[1], dict)
        for p in pairs
    ):
        raise unreadable
    window = window_for({"w": payload.get("window")}, "w")
    if payload.get("window") is not None and window is None:
        raise unreadable
    return Link(payload["run"], window, [(action, values) for action, values in pairs])


def adopt_edits(
    inputs: RunInputs, pairs: Sequence[tuple[str, Mapping[str, Any]]]
) -> tuple[list[dict[str, Any]], list[str]]:
    """The edit log a link's pairs give on this run, each validated as if made on the
    page, and one line for each pair left out."""
    edits: list[dict[str, Any]] = []
    current = scenario.fold_edits(inputs, [])
    problems = []
    for k, (action, values) in enumerate(pairs):
        try:
            result = scenario.add_edit(inputs, edits, action, values, current)
            edits, current = result.edits, result.scenario
        except (MaceError, LookupError, TypeError, ValueError, AttributeError) as exc:
            reason = exc if isinstance(exc, MaceError) else "its values are malformed"
            problems.append(f"the link's edit {k + 1} ({action}) was left out: {reason}")
    return edits, problems
