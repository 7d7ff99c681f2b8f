"""A chain: source -> parse -> filter -> enrich (CPU burn) -> probe -> sink.

    .venv-flink/bin/python -m benchmarks.flink_jobs.chain --input DIR --landing DIR \
        --run-id ID --rest-port PORT --job-name chain
"""

from __future__ import annotations

import argparse
from typing import Any

from benchmarks.flink_jobs.common import burn, event_type, main, parsed, probed_sink

PARSE_COST = 0.0002  # CPU-s per event
ENRICH_COST = 0.003
KEEP = 0.8  # share of events the filter keeps (values are uniform in [0, 1))


def build(env: Any, args: argparse.Namespace) -> None:
    scale = args.cost_scale
    enrich_cost = ENRICH_COST * scale

    def enrich(e: tuple[float, str, float]) -> tuple[float, str, float]:
        burn(enrich_cost)
        return e[0], e[1], e[2] * 2.0

    stream = (
        parsed(env, args.input[0], "events", PARSE_COST * scale)
        .filter(lambda e: e[2] < KEEP)
        .name("filter")
        .map(enrich, output_type=event_type())
        .name("enrich")
    )
    probed_sink(stream, args, "sink", lambda e: e[0])


if __name__ == "__main__":
    main(build, __doc__.splitlines()[0])
