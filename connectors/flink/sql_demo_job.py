"""The SQL demo's Flink job: a clickstream query in Flink SQL alone, no Python operator.

Runs inside the Flink virtual environment (``.venv-flink``), started by
``mace demo --engine flink-sql`` or by hand::

    .venv-flink/bin/python -m connectors.flink.sql_demo_job --input DIR \
        --categories DIR --outputs DIR --rest-port PORT --prometheus-port PORT

Clicks come from outside the job (CSV files ``stimulus_time,user,page,kind`` that the
demo's feeder writes into ``--input``, as in ``connectors/flink/demo_job.py``);
category labels from a second monitored folder (``category,label``):

    clicks -> filter (clicks only, page -> category) -> join with the categories
        (the costly step: a hash in the join condition) -> tumbling 1 s window count
        per category -> filesystem sink in JSON = the ``outputs/`` record set

The sink writes the columns ingestion reads from ``outputs/`` (``query``,
``operator``, ``stimulus_time`` = the newest click of the window, ``egress_time`` =
``CURRENT_TIMESTAMP`` in the last projection, both epoch seconds) plus the result
(category, label, clicks). Its part files are committed at each checkpoint
(every ``CHECKPOINT_MS``); in-progress files are hidden until then (docs/flink.md,
"A SQL job writes its own outputs/"). The filter before the join is cheap, so the
source's chain reads files as they come and a queue forms in the network buffers in
front of the join, in order and counted (a costly step chained with the file source
would leave the queue in the input folder, which no counter shows).

Flink's Prometheus reporter is on (the jar shipped in ``pyflink/plugins``, put into
``pipeline.jars``: a MiniCluster does not scan the plugins folder) on
``--prometheus-port``. Every other port Flink opens is bound to 127.0.0.1; the
reporter has no bind-address option and listens on every interface.

This module imports only PyFlink and the standard library.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from connectors.flink.local import local_cluster_config

DISCOVERY_MS = 100
CHECKPOINT_MS = 1000
CATEGORIES = 4
REPORTER_FACTORY = "org.apache.flink.metrics.prometheus.PrometheusReporterFactory"
EPOCH = (
    "CAST(UNIX_TIMESTAMP(DATE_FORMAT({t}, 'yyyy-MM-dd HH:mm:ss')) AS DOUBLE)"
    " + EXTRACT(MILLISECOND FROM {t}) / 1000.0"
)
"""Epoch seconds with milliseconds of a timestamp (both parts in the session time zone,
so the zone cancels out)."""


def reporter_jar() -> Path:
    """Flink's Prometheus reporter, as the ``apache-flink`` package ships it."""
    import pyflink

    folder = Path(pyflink.__file__).parent / "plugins" / "metrics-prometheus"
    jars = sorted(folder.glob("flink-metrics-prometheus-*.jar"))
    if not jars:
        raise SystemExit(f"no Prometheus reporter jar in {folder}")
    return jars[-1]


def statements(args: argparse.Namespace) -> list[str]:
    """The job's DDL, its view and its INSERT (the last statement)."""
    clicks = Path(args.input).resolve().as_uri()
    categories = Path(args.categories).resolve().as_uri()
    outputs = Path(args.outputs).resolve().as_uri()
    repeat = max(1, round(args.hash_repeat))
    return [
        f"""CREATE TABLE clicks (
              stimulus_time DOUBLE, user_id STRING, page STRING, kind STRING
            ) WITH ('connector' = 'filesystem', 'path' = '{clicks}', 'format' = 'csv',
                    'source.monitor-interval' = '{DISCOVERY_MS}ms')""",
        f"""CREATE TABLE categories (category STRING, label STRING)
            WITH ('connector' = 'filesystem', 'path' = '{categories}', 'format' = 'csv',
                  'source.monitor-interval' = '1s')""",
        f"""CREATE TABLE mace_outputs (
              `query` STRING, `operator` STRING, stimulus_time DOUBLE, egress_time DOUBLE,
              category STRING, label STRING, clicks BIGINT
            ) WITH ('connector' = 'filesystem', 'path' = '{outputs}', 'format' = 'json',
                    'sink.rolling-policy.rollover-interval' = '1s',
                    'sink.rolling-policy.check-interval' = '1s')""",
        f"""CREATE TEMPORARY VIEW labelled AS
            SELECT k.stimulus_time, c.category, c.label, PROCTIME() AS pt
            FROM (SELECT stimulus_time, user_id,
                         CONCAT('c', CAST(MOD(CAST(SUBSTR(page, 2) AS INT), {CATEGORIES})
                                          AS STRING)) AS category
                  FROM clicks WHERE kind = 'click') k
            JOIN categories c
              ON k.category = c.category
             AND SHA256(REPEAT(CONCAT(c.label, k.user_id), {repeat})) <> ''""",
        f"""INSERT INTO mace_outputs
            SELECT '{args.query}', '{args.operator}', MAX(stimulus_time),
                   {EPOCH.format(t="CURRENT_TIMESTAMP")}, category, MAX(label), COUNT(*)
            FROM TABLE(TUMBLE(TABLE labelled, DESCRIPTOR(pt), INTERVAL '1' SECOND))
            GROUP BY window_start, window_end, category""",
    ]


def main() -> None:
    from pyflink.common import Configuration
    from pyflink.table import EnvironmentSettings, TableEnvironment

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", required=True, help="folder the demo writes click files into")
    parser.add_argument("--categories", required=True, help="folder of category,label files")
    parser.add_argument("--outputs", required=True, help="the run's outputs/ folder")
    parser.add_argument("--rest-port", type=int, required=True)
    parser.add_argument("--prometheus-port", type=int, required=True)
    parser.add_argument("--job-name", default="clickstream-sql")
    parser.add_argument("--query", default="end", help="the rows' query (the sink's id)")
    parser.add_argument("--operator", default="end", help="the rows' operator (the sink's id)")
    parser.add_argument(
        "--hash-repeat", type=float, default=1000, help="the join condition hashes this many copies"
    )
    parser.add_argument("--plan", action="store_true", help="print the plan, do not run")
    args = parser.parse_args()
    config = Configuration()
    settings = {
        **local_cluster_config(args.rest_port),
        "pipeline.name": args.job_name,
        "pipeline.jars": reporter_jar().as_uri(),
        "metrics.reporter.prom.factory.class": REPORTER_FACTORY,
        "metrics.reporter.prom.port": str(args.prometheus_port),
        "execution.checkpointing.interval": f"{CHECKPOINT_MS}ms",
        "table.local-time-zone": "UTC",
        "parallelism.default": "1",
    }
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
    client = result.get_job_client()
    print(f"job {client.get_job_id() if client else '?'} submitted", flush=True)
    # The local MiniCluster lives in this process: wait until the job ends or we are killed.
    result.wait()


if __name__ == "__main__":
    main()
