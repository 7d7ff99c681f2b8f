"""A latency probe for PyFlink jobs: ``outputs/`` rows measured in front of a sink.

Flink does not expose end-to-end latency over REST (its latency markers need
metric-reporter jars and measure only the dataflow, not the events). The probe
is a pass-through map placed right before the sink: for each event it records
the event's stimulus time (taken from the event by a function the job passes)
and the egress time (now), as the ``outputs/`` record set of docs/design.md, "Raw telemetry"::

    from connectors.flink.probe import latency_probe
    stream = latency_probe(stream, "/data/landing", "my-run", query="q1", sink="sink",
                           stimulus=lambda event: event.created_at)
    stream.sink_to(my_sink)

Rows are written as JSON Lines files under ``<landing>/<run_id>/outputs/``, at
most every ``flush_seconds``, each under a hidden name and then renamed, so the
ingestion never reads half a file. Above ``max_rate`` events per second the
probe keeps 1 event in N and writes ``weight`` N, so counts stay right.

This module imports only the standard library; PyFlink is imported inside
:func:`latency_probe`, so it runs in the Flink environment without the product's
dependencies.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

DEFAULT_MAX_RATE = 2000.0
DEFAULT_FLUSH_SECONDS = 1.0


class ProbeWriter:
    """Samples (stimulus, egress) pairs and appends them to ``outputs/`` files atomically.

    The sampling period N is chosen per second from the previous second's rate:
    ``N = ceil(rate / max_rate)`` (1 below the limit), and every N-th event is kept
    with ``weight`` N. ``clock`` is injectable for tests.
    """

    def __init__(
        self,
        folder: str | Path,
        query: str,
        sink: str,
        *,
        max_rate: float = DEFAULT_MAX_RATE,
        flush_seconds: float = DEFAULT_FLUSH_SECONDS,
        clock: Callable[[], float] = time.time,
        name: str | None = None,
    ):
        if max_rate <= 0:
            raise ValueError(f"max_rate must be positive, got {max_rate}")
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.query = query
        self.sink = sink
        self.max_rate = max_rate
        self.flush_seconds = flush_seconds
        self._clock = clock
        self._name = name or f"probe-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self._lock = threading.Lock()
        self._rows: list[str] = []
        self._files = 0
        self._period = 1
        self._skip = 0
        self._second = math.floor(clock())
        self._seen_this_second = 0
        self._last_flush = clock()

    @property
    def period(self) -> int:
        """The current sampling period N (1 = every event is recorded)."""
        return self._period

    def record(self, stimulus_time: float) -> None:
        """Record one event reaching the sink now."""
        now = self._clock()
        with self._lock:
            second = math.floor(now)
            if second != self._second:
                elapsed = max(1, second - self._second)
                rate = self._seen_this_second / elapsed
                self._period = max(1, math.ceil(rate / self.max_rate))
                self._second, self._seen_this_second = second, 0
            self._seen_this_second += 1
            if self._skip > 0:
                self._skip -= 1
            else:
                self._skip = self._period - 1
                self._rows.append(
                    json.dumps(
                        {
                            "query": self.query,
                            "operator": self.sink,
                            "stimulus_time": float(stimulus_time),
                            "egress_time": now,
                            "weight": self._period,
                        }
                    )
                )
            due = now - self._last_flush >= self.flush_seconds
        if due:
            self.flush()

    def flush(self) -> Path | None:
        """Write the pending rows as one new file (hidden name, then rename)."""
        with self._lock:
            rows, self._rows = self._rows, []
            self._last_flush = self._clock()
            if not rows:
                return None
            self._files += 1
            final = self.folder / f"{self._name}-{self._files:06d}.jsonl"
        hidden = final.with_name(f".{final.name}.inprogress")
        hidden.write_text("\n".join(rows) + "\n")
        os.replace(hidden, final)
        return final


class _Flusher:
    """Flushes a writer every ``flush_seconds`` from a daemon thread (events may pause)."""

    def __init__(self, writer: ProbeWriter):
        self.writer = writer
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="latency-probe", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.writer.flush_seconds):
            self.writer.flush()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.writer.flush()


def latency_probe(
    stream: Any,
    landing: str | Path,
    run_id: str,
    *,
    sink: str,
    stimulus: Callable[[Any], float],
    query: str | None = None,
    max_rate: float = DEFAULT_MAX_RATE,
    flush_seconds: float = DEFAULT_FLUSH_SECONDS,
) -> Any:
    """Put a latency probe on a PyFlink ``DataStream``; return the stream to sink.

    ``stimulus(event)`` returns the event's stimulus time in seconds since the epoch
    (the time its source event entered the system). ``sink`` names the sink operator
    in the run's topology as ``mace collect flink`` names it (``sink: Writer`` ->
    ``sink``); its query is named after it, as the collector names a sink's query
    (``query`` overrides that, for a topology written by hand).
    """
    from pyflink.datastream import MapFunction, RuntimeContext

    folder = Path(landing) / run_id / "outputs"

    class LatencyProbe(MapFunction):
        def open(self, runtime_context: RuntimeContext) -> None:
            index = runtime_context.get_index_of_this_subtask()
            name = f"probe-{sink}-{index}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
            writer = ProbeWriter(
                folder,
                query or sink,
                sink,
                max_rate=max_rate,
                flush_seconds=flush_seconds,
                name=name,
            )
            self.flusher = _Flusher(writer)

        def map(self, value: Any) -> Any:
            self.flusher.writer.record(stimulus(value))
            return value

        def close(self) -> None:
            self.flusher.close()

    return stream.map(LatencyProbe(), output_type=stream.get_type()).name(f"{sink}-probe")
