"""A Flink SQL job (no Python operator): a monitored CSV folder -> filter (CPU-costly
predicate) -> tumbling processing-time window of 1 s per key -> JSON files.

Each result row carries the columns of the ``outputs/`` record set: ``query``,
``sink``, ``stimulus_time`` (the newest event of the window, epoch seconds) and
``egress_time``, ``CURRENT_TIMESTAMP`` (evaluated per row in streaming mode) as a
UTC ISO-8601 string. The filesystem sink commits its part files on checkpoints
(every ``CHECKPOINT_MS``); the study turns committed part files into ``outputs/``
JSON Lines (:func:`benchmarks.flink_grid.convert_sql_outputs`).

    .venv-flink/bin/python -m benchmarks.flink_jobs.sql_job --input DIR --output DIR \
        --rest-port PORT --job-name sql
"""

from __future__ import annotations

import argparse
from pathlib import Path

from benchmarks.flink_jobs.common import DISCOVERY_MS, configuration

CHECKPOINT_MS = 1000
HASH_REPEAT = 20000  # the filter hashes the key repeated this many times (~60 KB) per event
SINK = "sink"


def statements(args: argparse.Namespace) -> list[str]:
    """The job's DDL and its INSERT (the rows' query is their sink, as the collector
    names a sink's query)."""
    source = Path(args.input[0]).resolve().as_uri()
    sink = Path(args.output).resolve().as_uri()
    repeat = max(1, round(HASH_REPEAT * args.cost_scale))
    return [
        f"""CREATE TABLE events (
              stimulus_time DOUBLE, k STRING, v DOUBLE, pt AS PROCTIME()
            ) WITH ('connector' = 'filesystem', 'path' = '{source}', 'format' = 'csv',
                    'source.monitor-interval' = '{DISCOVERY_MS}ms')""",
        f"""CREATE TABLE results (
              query STRING, sink STRING, stimulus_time DOUBLE, egress_time TIMESTAMP_LTZ(3),
              k STRING, total DOUBLE, n BIGINT
            ) WITH ('connector' = 'filesystem', 'path' = '{sink}', 'format' = 'json',
                    'json.timestamp-format.standard' = 'ISO-8601',
                    'sink.rolling-policy.rollover-interval' = '1s',
                    'sink.rolling-policy.check-interval' = '1s')""",
        f"""INSERT INTO results
            SELECT '{SINK}', '{SINK}', MAX(stimulus_time), CURRENT_TIMESTAMP, k,
                   SUM(v), COUNT(*)
            FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(pt), INTERVAL '1' SECOND))
            WHERE SHA256(REPEAT(k, {repeat})) <> '' AND v < 0.9
            GROUP BY window_start, window_end, k""",
    ]


def main(argv: list[str] | None = None) -> None:
    from pyflink.common import Configuration
    from pyflink.table import EnvironmentSettings, TableEnvironment

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", action="append", required=True, help="monitored folder")
    parser.add_argument("--output", required=True, help="folder of the committed part files")
    parser.add_argument("--rest-port", type=int, required=True)
    parser.add_argument("--job-name", required=True)
    parser.add_argument("--cost-scale", type=float, default=1.0)
    parser.add_argument("--plan", action="store_true", help="print the plan, do not run")
    args = parser.parse_args(argv)
    config = Configuration()
    settings = {
        **configuration(argparse.Namespace(
            rest_port=args.rest_port, no_chaining=False, bundle_size=None, bundle_ms=None,
            adaptive=False,
        )),
        "execution.checkpointing.interval": f"{CHECKPOINT_MS}ms",
        "table.local-time-zone": "UTC",
        "pipeline.name": args.job_name,
        "parallelism.default": "1",
    }  # fmt: skip
    for key, value in settings.items():
        config.set_string(key, value)
    env = TableEnvironment.create(
        EnvironmentSettings.new_instance().in_streaming_mode().with_configuration(config).build()
    )
    *ddl, insert = statements(args)
    for statement in ddl:
        env.execute_sql(statement)
    if args.plan:
        print(env.explain_sql(insert), flush=True)
        return
    result = env.execute_sql(insert)
    print(f"job {result.get_job_client().get_job_id()} submitted", flush=True)
    result.wait()


if __name__ == "__main__":
    main()
