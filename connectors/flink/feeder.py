"""Feeds the demo job: click events at given times, as files its file source picks up.

Events are written in real time, in small files every ``slot`` seconds (each under
a hidden name, then renamed), with the event's stimulus time as its first field,
the time it was due. This stands in for the message queue a production job
reads from.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

DEFAULT_SLOT = 0.1
CLICK_SHARE = 0.7
USERS = 500
PAGES = 40


def click_lines(times: np.ndarray, rng: np.random.Generator) -> list[str]:
    """CSV lines ``stimulus_time,user,page,kind`` for events at ``times``."""
    users = rng.integers(0, USERS, times.size)
    pages = rng.integers(0, PAGES, times.size)
    kinds = np.where(rng.random(times.size) < CLICK_SHARE, "click", "view")
    return [f"{t:.6f},u{u},p{p},{k}" for t, u, p, k in zip(times, users, pages, kinds, strict=True)]


def feed(
    times: np.ndarray,
    folder: str | Path,
    stop: threading.Event,
    rng: np.random.Generator,
    *,
    slot: float = DEFAULT_SLOT,
    clock: Callable[[], float] = time.time,
) -> int:
    """Write the events at wall-clock ``times`` (sorted, epoch seconds) as they fall due;
    return how many were written (all of them unless ``stop`` was set)."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    written = 0
    files = 0
    while written < times.size and not stop.is_set():
        now = clock()
        due = int(np.searchsorted(times, now, side="right"))
        if due > written:
            files += 1
            name = f"clicks-{files:07d}.csv"
            hidden = out / f".{name}.inprogress"
            hidden.write_text("\n".join(click_lines(times[written:due], rng)) + "\n")
            os.replace(hidden, out / name)
            written = due
        stop.wait(slot)
    return written
