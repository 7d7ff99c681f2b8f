"""Settings of a local MiniCluster for the demo and test jobs (runs in ``.venv-flink``).

Standard library only. Every port Flink opens is bound to 127.0.0.1, metrics are
fetched every second (the collector polls every second), and the network buffers have
room for a long queue: a queue of ~60 k small events sits in the network buffers, in
order and counted, before backpressure stops the source reading (Flink's file source
hands out pending files newest first, and no counter shows files not read yet).
"""

from __future__ import annotations

import sys


def local_cluster_config(rest_port: int) -> dict[str, str]:
    """The MiniCluster's settings with its REST API on ``rest_port``."""
    return {
        "rest.address": "127.0.0.1",
        "rest.bind-address": "127.0.0.1",
        "rest.port": str(rest_port),
        "rest.bind-port": str(rest_port),
        "jobmanager.bind-host": "127.0.0.1",
        "jobmanager.rpc.address": "127.0.0.1",
        "taskmanager.bind-host": "127.0.0.1",
        "taskmanager.host": "127.0.0.1",
        "blob.server.port": "0",
        "metrics.fetcher.update-interval": "1000",
        "taskmanager.numberOfTaskSlots": "8",
        "taskmanager.memory.network.min": "128mb",
        "taskmanager.memory.network.max": "128mb",
        "taskmanager.network.memory.floating-buffers-per-gate": "1024",
        "python.executable": sys.executable,
        "python.client.executable": sys.executable,
    }
