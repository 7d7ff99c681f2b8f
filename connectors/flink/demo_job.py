"""The demo's Flink job: a clickstream query on a real PyFlink MiniCluster.

Runs inside the Flink virtual environment (``.venv-flink``), started by
``mace demo --engine flink`` or by hand::

    .venv-flink/bin/python -m connectors.flink.demo_job --input DIR --landing DIR \
        --run-id ID --rest-port PORT

Events come from outside the job, as they would from a message queue: the demo
writes CSV files of clicks (``stimulus_time,user,page,kind``) into ``--input``
under a hidden name and renames them, and Flink's file source, monitoring the
folder every ``DISCOVERY_MS``, reads each new file once. The job has two sinks,
so two queries:

    source -> parse -> filter (clicks only) -> enrich (the costly step) ->
        count per page (keyed running count) -> latency probe -> sink click-counts
                    `-> views-filter (views only) -> latency probe -> sink views

with operator chaining on, as in production (Flink fuses the steps between network
exchanges into one vertex, PyFlink its Python steps into one Python operator; the
collector reads every chained operator's counters); ``--no-chaining`` makes every
step a vertex. ``enrich`` burns ``--enrich-cost`` seconds of CPU per event, which
makes it the bottleneck under the demo's bursts. The source alone is not chained to
``parse``, and the network buffers have room for a long queue: a queue belongs in
the network buffers, served in order and counted, not in the input folder, whose
pending files Flink's file source reads newest first and no counter shows (a Kafka
source reports them as ``pendingRecords``).

Latency settings (measured, see docs/flink.md): Python bundles of at most
``BUNDLE_SIZE`` events or ``BUNDLE_MS`` ms, instead of the default 1000 ms that
alone adds 2-3 s of latency at 40% load. Every port Flink opens is bound to
127.0.0.1.

This module imports only PyFlink and the standard library (plus the probe).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

DISCOVERY_MS = 100
BUNDLE_SIZE = 50
BUNDLE_MS = 50


def _burn(seconds: float) -> None:
    """Spend ``seconds`` of CPU (a busy loop: the work an enrichment lookup does)."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def parse(line: str) -> tuple[float, str, str, str]:
    stimulus, user, page, kind = line.split(",")
    _burn(0.0002)
    return float(stimulus), user, page, kind


def build(args: argparse.Namespace) -> Any:
    """Build and start the job; return its JobClient."""
    from pyflink.common import Configuration, Duration, Types, WatermarkStrategy
    from pyflink.datastream import StreamExecutionEnvironment
    from pyflink.datastream.connectors.base import Sink
    from pyflink.datastream.connectors.file_system import FileSource, StreamFormat
    from pyflink.java_gateway import get_gateway

    from connectors.flink.local import local_cluster_config
    from connectors.flink.probe import latency_probe

    config = Configuration()
    settings = {
        **local_cluster_config(args.rest_port),
        "python.operator-chaining.enabled": str(args.chaining).lower(),
        "python.fn-execution.bundle.size": str(BUNDLE_SIZE),
        "python.fn-execution.bundle.time": str(BUNDLE_MS),
    }
    for key, value in settings.items():
        config.set_string(key, value)
    env = StreamExecutionEnvironment.get_execution_environment(config)
    env.set_parallelism(1)
    if not args.chaining:
        env.disable_operator_chaining()

    source = (
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), args.input)
        .monitor_continuously(Duration.of_millis(DISCOVERY_MS))
        .build()
    )
    lines = env.from_source(source, WatermarkStrategy.no_watermarks(), "clicks")
    event = Types.TUPLE([Types.DOUBLE(), Types.STRING(), Types.STRING(), Types.STRING()])
    # the source gets a vertex of its own: chained with busy operators, it would read
    # files only as fast as they work, and Flink's file source hands out pending files
    # newest first, so a backlog in front of it would be served out of order
    parsed = lines.map(parse, output_type=event).name("parse").start_new_chain()
    cost = args.enrich_cost

    keyed = Types.TUPLE([Types.DOUBLE(), Types.STRING(), Types.INT()])

    def enrich(e: tuple[float, str, str, str]) -> tuple[float, str, int]:
        _burn(cost)
        return e[0], e[2], 1

    counted = (
        parsed.filter(lambda e: e[3] == "click")
        .name("filter")
        .map(enrich, output_type=keyed)
        .name("enrich")
        .key_by(lambda e: e[1], key_type=Types.STRING())
        .reduce(lambda a, b: (b[0], b[1], a[2] + b[2]))
        .name("count")
    )
    views = parsed.filter(lambda e: e[3] == "view").name("views-filter")
    discard = get_gateway().jvm.org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink
    for stream, sink in ((counted, "click-counts"), (views, "views")):
        probed = latency_probe(
            stream, args.landing, args.run_id, sink=sink, stimulus=lambda e: e[0]
        )
        probed.sink_to(Sink(discard())).name(sink)
    return env.execute_async(args.job_name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", required=True, help="folder the demo writes click files into")
    parser.add_argument("--landing", required=True, help="landing folder (outputs/ rows)")
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--rest-port", type=int, required=True)
    parser.add_argument("--enrich-cost", type=float, default=0.004, help="CPU-s per event")
    parser.add_argument("--job-name", default="clickstream")
    parser.add_argument(
        "--chaining",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="operator chaining (Flink's default, on); --no-chaining makes every step a vertex",
    )
    args = parser.parse_args()
    client = build(args)
    print(f"job {client.get_job_id()} submitted", flush=True)
    # The local MiniCluster lives in this process: wait until the job ends or we are killed.
    client.get_job_execution_result().result()


if __name__ == "__main__":
    main()
