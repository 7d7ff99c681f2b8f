"""A fan-out to two sinks: source -> parse -> {light branch -> sink-light,
heavy branch -> sink-heavy}, the two branches with different CPU costs.

    .venv-flink/bin/python -m benchmarks.flink_jobs.fanout --input DIR --landing DIR \
        --run-id ID --rest-port PORT --job-name fanout
"""

from __future__ import annotations

import argparse
from typing import Any

from benchmarks.flink_jobs.common import burn, event_type, main, parsed, probed_sink

PARSE_COST = 0.0002  # CPU-s per event
LIGHT_COST = 0.0005
HEAVY_COST = 0.003
HEAVY_SHARE = 0.6  # share of events the heavy branch scores


def build(env: Any, args: argparse.Namespace) -> None:
    scale = args.cost_scale
    light_cost, heavy_cost = LIGHT_COST * scale, HEAVY_COST * scale

    def light(e: tuple[float, str, float]) -> tuple[float, str, float]:
        burn(light_cost)
        return e

    def heavy(e: tuple[float, str, float]) -> tuple[float, str, float]:
        burn(heavy_cost)
        return e[0], e[1], e[2] ** 2

    events = parsed(env, args.input[0], "events", PARSE_COST * scale)
    probed_sink(
        events.map(light, output_type=event_type()).name("light"),
        args,
        "sink-light",
        lambda e: e[0],
    )
    scored = (
        events.filter(lambda e: e[2] < HEAVY_SHARE)
        .name("select")
        .map(heavy, output_type=event_type())
        .name("heavy")
    )
    probed_sink(scored, args, "sink-heavy", lambda e: e[0])


if __name__ == "__main__":
    main(build, __doc__.splitlines()[0])
