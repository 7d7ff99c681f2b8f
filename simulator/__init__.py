"""The reference event processing system: a discrete-event simulator writing raw telemetry.

Python API (the dashboard demo and the accuracy study use it)::

    from simulator import simulate, workload
    topology, arrivals = workload("clickstream", duration=60, seed=1)
    result = simulate(topology, arrivals, "stimulus", np.random.default_rng(1))
    result.telemetry.frames()  # {"arrivals": ..., "executions": ..., "outputs": ...}
    write_run(result.telemetry, topology, "landing", "run-1")

Live, in a thread until ``stop`` is set::

    topology, model = workload_model("clickstream")
    run_live(topology, model, "landing", "live-1", stop)
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "COST_DISTRIBUTIONS": "simulator.plan",
    "POLICIES": "simulator.plan",
    "SimulationError": "simulator.errors",
    "Result": "simulator.run",
    "simulate": "simulator.run",
    "Telemetry": "simulator.telemetry",
    "write_run": "simulator.telemetry",
    "WORKLOADS": "simulator.workloads",
    "workload": "simulator.workloads",
    "workload_model": "simulator.workloads",
    "run_live": "simulator.live",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Import on first use, so ``mace`` (whose ``simulate`` command imports this package)
    starts without loading the numba engine."""
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'simulator' has no attribute {name!r}")
