"""A two-input join: two sources (two folders, two producers) -> parse each -> connect,
key_by key -> co-process join on keyed state -> probe -> sink.

The join keeps the latest value of each side per key; every event that finds the
other side's value emits one joined row carrying its own stimulus time.

    .venv-flink/bin/python -m benchmarks.flink_jobs.join --input LEFT --input RIGHT \
        --landing DIR --run-id ID --rest-port PORT --job-name join
"""

from __future__ import annotations

import argparse
from typing import Any

from benchmarks.flink_jobs.common import burn, main, parsed, probed_sink

PARSE_COST = 0.0002  # CPU-s per event
JOIN_COST = 0.002


def build(env: Any, args: argparse.Namespace) -> None:
    from pyflink.common import Types
    from pyflink.datastream import KeyedCoProcessFunction, RuntimeContext
    from pyflink.datastream.state import ValueStateDescriptor

    join_cost = JOIN_COST * args.cost_scale
    joined = Types.TUPLE([Types.DOUBLE(), Types.STRING(), Types.DOUBLE(), Types.DOUBLE()])

    class Join(KeyedCoProcessFunction):
        def open(self, runtime_context: RuntimeContext) -> None:
            self.left = runtime_context.get_state(ValueStateDescriptor("left", Types.DOUBLE()))
            self.right = runtime_context.get_state(ValueStateDescriptor("right", Types.DOUBLE()))

        def _join(self, e: tuple[float, str, float], mine: Any, other: Any, left: bool) -> Any:
            burn(join_cost)
            mine.update(e[2])
            seen = other.value()
            if seen is not None:
                yield (e[0], e[1], e[2], seen) if left else (e[0], e[1], seen, e[2])

        def process_element1(self, value: Any, ctx: Any) -> Any:
            yield from self._join(value, self.left, self.right, True)

        def process_element2(self, value: Any, ctx: Any) -> Any:
            yield from self._join(value, self.right, self.left, False)

    scale = args.cost_scale
    left = parsed(env, args.input[0], "left", PARSE_COST * scale, "parse-left")
    right = parsed(env, args.input[1], "right", PARSE_COST * scale, "parse-right")
    result = (
        left.connect(right)
        .key_by(lambda e: e[1], lambda e: e[1], key_type=Types.STRING())
        .process(Join(), output_type=joined)
        .name("join")
    )
    probed_sink(result, args, "sink", lambda e: e[0])


if __name__ == "__main__":
    main(build, __doc__.splitlines()[0], inputs=2)
