"""The Python worker as a resource of its own: one interpreter shared by the Python
operators of a TaskManager (docs/flink.md, "Resources: threads inside TaskManagers").

PyFlink runs a slot's Python operators in one Python worker process (on a local
deployment, every Python operator of the job in the program's own process). An
interpreter runs Python code on one core at a time, whatever the number of threads
asking (the global interpreter lock), so the Python operators of one worker share a
capacity of one core between them, although each has a Java thread of its own: measured
on a join of three Python operators, the worker's time (CPU and wait for a core) summed
over its operators reached 1.00 core-seconds a second and no more while all three had
records waiting.

A TaskManager marked ``python_workers: per-slot`` (a cluster: PyFlink's process mode)
runs one such process per task slot that holds Python operators; with slot sharing,
slot k holds subtask k of every vertex, so its Python worker node has as many cores as
the largest parallelism of its Python threads, within the TaskManager's cores (at
parallelism 2 on a 2-slot TaskManager two workers reached 2.05 core-seconds a second).
Any other TaskManager has one interpreter (loopback mode, or not recorded).

Which operators are Python is read off the run: those whose work outside the thread
was measured (``operator_stats.work_seconds``, charged from the workers' time by the
collector). Their threads are hosted by a node standing for their TaskManager's Python
workers instead of by the TaskManager: the Python work is done outside the
TaskManager's JVM, and the worker's time already holds the wait for a core of a
machine shared with other work.
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from estimator.model import Node, Topology

WORK_COLUMN = "work_seconds"
"""Optional ``operator_stats`` column: seconds of work measured outside the thread (a
Python worker's CPU and wait for a core, charged to the threads it serves), where the
engine has it."""
WORKER_PREFIX = "python-worker@"
WORKER_CAPACITY = 1.0
"""Core-seconds a second one Python interpreter can give its operators."""


def worker_node_id(host: str) -> str:
    """The id of the node standing for the Python workers of TaskManager ``host``."""
    return f"{WORKER_PREFIX}{host}"


def worker_capacity(topology: Topology, taskmanager: str) -> float:
    """The cores of the Python worker node of ``taskmanager`` (module rule): one
    interpreter, or on a ``per-slot`` TaskManager one per slot holding Python threads."""
    nodes = {n.id: n for n in topology.nodes}
    tm = nodes.get(taskmanager)
    if tm is None or tm.python_workers != "per-slot":
        return WORKER_CAPACITY
    worker = worker_node_id(taskmanager)
    slots = max(
        (round(n.capacity) for n in topology.nodes if n.host == worker),
        default=1,
    )
    return max(WORKER_CAPACITY, min(float(slots) * WORKER_CAPACITY, tm.capacity))


def with_worker_capacities(topology: Topology) -> Topology:
    """``topology`` with each Python worker node's cores as :func:`worker_capacity`
    says for its threads' capacities now (a rescaled vertex, a per-slot TaskManager)."""
    changed = {
        n.id: capacity
        for n in topology.nodes
        if (tm := worker_taskmanager(n.id)) is not None
        and (capacity := worker_capacity(topology, tm)) != n.capacity
    }
    if not changed:
        return topology
    return replace(
        topology,
        nodes=tuple(replace(n, capacity=changed.get(n.id, n.capacity)) for n in topology.nodes),
    )


def python_operators(stats: pd.DataFrame) -> set[str]:
    """Operators with measured work outside their thread (a Python worker's time)."""
    if WORK_COLUMN not in stats.columns or stats.empty:
        return set()
    work = stats.groupby("operator")[WORK_COLUMN].sum(min_count=1)
    return {str(op) for op, seconds in work.items() if seconds > 0}


def with_python_workers(topology: Topology, stats: pd.DataFrame) -> Topology:
    """``topology`` with the threads of its Python operators hosted by their
    TaskManager's Python worker (a node of :func:`worker_capacity`, no host) instead of
    by the TaskManager, and running bundles as their TaskManager says (its
    ``bundle_time``, ``bundle_size``, ``checkpoint_interval``); itself when no operator
    has worker time measured or all such threads are on a worker already."""
    python = python_operators(stats)
    nodes = {n.id: n for n in topology.nodes}
    threads = {
        node
        for op, node in topology.placement.items()
        if op in python and _host(nodes[node]) is not None
    }
    hosts = sorted({h for t in threads if (h := _host(nodes[t])) is not None})
    if not hosts:
        return topology
    rehosted = tuple(
        _python_thread(n, nodes[n.host]) if n.id in threads and n.host else n
        for n in topology.nodes
    )
    workers = tuple(
        Node(worker_node_id(h), WORKER_CAPACITY) for h in hosts if worker_node_id(h) not in nodes
    )
    return with_worker_capacities(replace(topology, nodes=rehosted + workers))


def _python_thread(thread: Node, taskmanager: Node) -> Node:
    """``thread`` hosted by its TaskManager's Python worker, with the bundle settings its
    TaskManager's Python operators run with where it has none of its own."""
    if thread.bundle_time is None and taskmanager.bundle_time is not None:
        thread = replace(
            thread,
            bundle_time=taskmanager.bundle_time,
            bundle_size=taskmanager.bundle_size,
            checkpoint_interval=taskmanager.checkpoint_interval,
        )
    return replace(thread, host=worker_node_id(taskmanager.id))


def _host(node: Node) -> str | None:
    """A thread's TaskManager: its host, unless that is a Python worker already."""
    if node.host is None or node.host.startswith(WORKER_PREFIX):
        return None
    return node.host


def worker_taskmanager(node_id: str) -> str | None:
    """The TaskManager whose Python worker the node ``node_id`` stands for; None for any
    other node."""
    return node_id.removeprefix(WORKER_PREFIX) if node_id.startswith(WORKER_PREFIX) else None


def python_worker_of(hosts: dict[str, str | None], thread: str) -> str | None:
    """The Python worker node hosting ``thread`` (``hosts``: node id -> its host), if any."""
    host = hosts.get(thread)
    return host if host is not None and host.startswith(WORKER_PREFIX) else None
