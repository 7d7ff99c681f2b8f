"""A keyed window aggregate: source -> parse -> prepare (CPU burn) -> key_by ->
tumbling processing-time window of ``WINDOW_MS`` (count and sum per key) -> probe -> sink.

A window's result carries the stimulus time of its newest event (the freshness of the
aggregate), so its latency is the time from the last event it counts to the sink.

    .venv-flink/bin/python -m benchmarks.flink_jobs.window --input DIR --landing DIR \
        --run-id ID --rest-port PORT --job-name window
"""

from __future__ import annotations

import argparse
from typing import Any

from benchmarks.flink_jobs.common import burn, main, parsed, probed_sink

PARSE_COST = 0.0002  # CPU-s per event
PREPARE_COST = 0.002
WINDOW_MS = 1000


def build(env: Any, args: argparse.Namespace) -> None:
    from pyflink.common import Time, Types
    from pyflink.datastream.window import TumblingProcessingTimeWindows

    prepare_cost = PREPARE_COST * args.cost_scale
    partial = Types.TUPLE([Types.DOUBLE(), Types.STRING(), Types.DOUBLE(), Types.LONG()])

    def prepare(e: tuple[float, str, float]) -> tuple[float, str, float, int]:
        burn(prepare_cost)
        return e[0], e[1], e[2], 1

    def combine(
        a: tuple[float, str, float, int], b: tuple[float, str, float, int]
    ) -> tuple[float, str, float, int]:
        return max(a[0], b[0]), a[1], a[2] + b[2], a[3] + b[3]

    totals = (
        parsed(env, args.input[0], "events", PARSE_COST * args.cost_scale)
        .map(prepare, output_type=partial)
        .name("prepare")
        .key_by(lambda e: e[1], key_type=Types.STRING())
        .window(TumblingProcessingTimeWindows.of(Time.milliseconds(WINDOW_MS)))
        .reduce(combine, output_type=partial)
        .name("window")
    )
    probed_sink(totals, args, "sink", lambda e: e[0])


if __name__ == "__main__":
    main(build, __doc__.splitlines()[0])
