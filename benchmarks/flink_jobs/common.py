"""What the test jobs share: arguments, the MiniCluster's configuration, the monitored
file source, the CPU burn and the probe rule.

Events are CSV lines ``stimulus_time,key,value`` written by an outside producer
(:mod:`benchmarks.flink_jobs.producer`) into a folder that Flink's file source
monitors every ``DISCOVERY_MS``; the source is a vertex of its own, and the network
buffers have room for a long queue (as in ``connectors/flink/demo_job.py``). Operator
chaining is on (Flink's default) unless ``--no-chaining``; Python bundle settings are
Flink's defaults unless ``--bundle-size`` / ``--bundle-ms`` set them. Every port Flink
opens is bound to 127.0.0.1.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from connectors.flink.local import local_cluster_config

DISCOVERY_MS = 100
ADAPTIVE = {
    "jobmanager.scheduler": "adaptive",
    "execution.checkpointing.interval": "1s",
    "jobmanager.adaptive-scheduler.executing.cooldown-after-rescaling": "0s",
    "jobmanager.adaptive-scheduler.executing.resource-stabilization-timeout": "1s",
    "jobmanager.adaptive-scheduler.rescale-trigger.max-delay": "3s",
}
"""Flink 2.x's adaptive scheduler, rescaling at the next checkpoint after new resource
requirements arrive (a rescale restarts the job from that checkpoint)."""


def burn(seconds: float) -> None:
    """Spend ``seconds`` of CPU in a busy loop (the work a lookup or a model call does)."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def parse(line: str) -> tuple[float, str, float]:
    """One producer line -> ``(stimulus_time, key, value)``."""
    stimulus, key, value = line.split(",")[:3]
    return float(stimulus), key, float(value)


def probe_query(args: argparse.Namespace, sink: str) -> str:
    """The query a sink's probe rows belong to: the sink's own, as ``mace collect flink``
    names a query after its sink (the one place to change if that rule changes)."""
    return sink


def arguments(description: str, inputs: int = 1) -> argparse.ArgumentParser:
    """The options every job takes; ``inputs`` input folders (``--input`` repeated)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--input", action="append", required=True, help=f"monitored folder ({inputs} needed)"
    )
    parser.add_argument("--landing", required=True, help="landing folder (outputs/ rows)")
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--rest-port", type=int, required=True)
    parser.add_argument("--job-name", required=True)
    parser.add_argument(
        "--no-chaining", action="store_true", help="turn operator chaining off (Java and Python)"
    )
    parser.add_argument("--bundle-size", type=int, help="python.fn-execution.bundle.size")
    parser.add_argument("--bundle-ms", type=int, help="python.fn-execution.bundle.time")
    parser.add_argument(
        "--cost-scale", type=float, default=1.0, help="multiplies every configured CPU cost"
    )
    parser.add_argument(
        "--adaptive",
        action="store_true",
        help="the adaptive scheduler with checkpoints every second and no rescale cooldown, "
        "so that PUT /jobs/<id>/resource-requirements rescales the job within seconds",
    )
    parser.set_defaults(inputs_needed=inputs)
    return parser


def configuration(args: argparse.Namespace) -> dict[str, str]:
    """The MiniCluster's settings (:func:`connectors.flink.local.local_cluster_config`),
    with the job's chaining and bundle options."""
    config = local_cluster_config(args.rest_port)
    if args.no_chaining:
        config["python.operator-chaining.enabled"] = "false"
    if args.bundle_size is not None:
        config["python.fn-execution.bundle.size"] = str(args.bundle_size)
    if args.bundle_ms is not None:
        config["python.fn-execution.bundle.time"] = str(args.bundle_ms)
    if args.adaptive:
        config.update(ADAPTIVE)
    return config


def environment(args: argparse.Namespace) -> Any:
    """A streaming environment of parallelism 1 with :func:`configuration`."""
    from pyflink.common import Configuration
    from pyflink.datastream import StreamExecutionEnvironment

    config = Configuration()
    for key, value in configuration(args).items():
        config.set_string(key, value)
    env = StreamExecutionEnvironment.get_execution_environment(config)
    env.set_parallelism(1)
    if args.no_chaining:
        env.disable_operator_chaining()
    return env


def events(env: Any, folder: str, name: str) -> Any:
    """The lines of the files appearing in ``folder`` (a monitored file source)."""
    from pyflink.common import Duration, WatermarkStrategy
    from pyflink.datastream.connectors.file_system import FileSource, StreamFormat

    source = (
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), folder)
        .monitor_continuously(Duration.of_millis(DISCOVERY_MS))
        .build()
    )
    return env.from_source(source, WatermarkStrategy.no_watermarks(), name)


def event_type() -> Any:
    from pyflink.common import Types

    return Types.TUPLE([Types.DOUBLE(), Types.STRING(), Types.DOUBLE()])


def parsed(env: Any, folder: str, name: str, cost: float, parser: str = "parse") -> Any:
    """``events`` parsed into ``(stimulus_time, key, value)`` by an operator named
    ``parser``, ``cost`` CPU-s per line."""

    def parse_line(line: str) -> tuple[float, str, float]:
        burn(cost)
        return parse(line)

    # the source gets a vertex of its own, as in the demo job: chained with busy
    # operators it would read files only as fast as they work, and Flink's file source
    # hands out pending files newest first (a queue in the folder, out of order, uncounted)
    return (
        events(env, folder, name)
        .map(parse_line, output_type=event_type())
        .name(parser)
        .start_new_chain()
    )


def probed_sink(
    stream: Any, args: argparse.Namespace, sink: str, stimulus: Callable[[Any], float]
) -> None:
    """The README's instrumentation: the latency probe, then a discarding sink ``sink``."""
    from pyflink.datastream.connectors.base import Sink
    from pyflink.java_gateway import get_gateway

    from connectors.flink.probe import latency_probe

    probed = latency_probe(
        stream,
        args.landing,
        args.run_id,
        query=probe_query(args, sink),
        sink=sink,
        stimulus=stimulus,
    )
    discard = get_gateway().jvm.org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink()
    probed.sink_to(Sink(discard)).name(sink)


def main(build: Callable[[Any, argparse.Namespace], None], description: str, inputs: int = 1,
         argv: list[str] | None = None) -> None:  # fmt: skip
    """Parse the options, build the job with ``build(env, args)``, run it until killed
    (or, with ``--plan``, print its execution plan and exit without running it)."""
    parser = arguments(description, inputs)
    parser.add_argument("--plan", action="store_true", help="print the plan JSON, do not run")
    args = parser.parse_args(argv)
    if len(args.input) != inputs:
        parser.error(f"--input: {inputs} folder(s) needed, got {len(args.input)}")
    env = environment(args)
    build(env, args)
    if args.plan:
        print(env.get_execution_plan(), flush=True)
        return
    client = env.execute_async(args.job_name)
    print(f"job {client.get_job_id()} submitted", flush=True)
    # the local MiniCluster lives in this process: wait until the job ends or we are killed
    client.get_job_execution_result().result()
