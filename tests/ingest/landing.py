"""A tiny hand-made landing folder with numbers small enough to check by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

TOPOLOGY = """\
name: tiny
subinterval: 1.0
origin: 100.0
nodes:
  - {id: n1, capacity: 1.0}
  - {id: n2, capacity: 2.0}
sources:
  - {id: s}
operators:
  - {id: a, query: q, inputs: [s], cost: 0.1, selectivity: 1.0}
  - {id: b, query: q, inputs: [a], cost: 0.2, selectivity: 1.0}
placement: {a: n1, b: n2}
"""

ARRIVALS = pd.DataFrame({"source": ["s", "s", "s"], "stimulus_time": [100.2, 100.7, 101.1]})

# operator a on n1 (capacity 1): the third execution runs 101.9 .. 102.2 -> split 0.1 / 0.2.
EXECUTIONS = pd.DataFrame(
    {
        "node": ["n1", "n1", "n1", "n2", "n2", "n2"],
        "operator": ["a", "a", "a", "b", "b", "b"],
        "port": [0, 0, 0, 0, 0, 0],
        "stimulus_time": [100.2, 100.7, 101.1, 100.2, 100.7, 101.1],
        "start_time": [100.3, 100.8, 101.9, 100.5, 100.9, 102.3],
        "cpu_seconds": [0.1, 0.1, 0.3, 0.2, 0.2, 0.4],
        "outputs": [1, 1, 1, 1, 1, 1],
    }
)

OUTPUTS = pd.DataFrame(
    {
        "query": ["q", "q", "q"],
        "operator": ["b", "b", "b"],
        "stimulus_time": [100.2, 100.7, 101.1],
        "egress_time": [100.6, 101.0, 102.5],
    }
)


def write_run(landing: Path, run_id: str = "r1", topology: str = TOPOLOGY) -> Path:
    """Write the tiny run as Parquet files; returns the run folder."""
    run = landing / run_id
    for name in ("arrivals", "executions", "outputs"):
        (run / name).mkdir(parents=True, exist_ok=True)
    (run / "topology.yaml").write_text(topology)
    ARRIVALS.to_parquet(run / "arrivals" / "part-0.parquet", index=False)
    EXECUTIONS.to_parquet(run / "executions" / "part-0.parquet", index=False)
    OUTPUTS.to_parquet(run / "outputs" / "part-0.parquet", index=False)
    return run


def write_jsonl(path: Path, lines: list[object]) -> None:
    """Write JSON Lines; a str entry is written verbatim (for malformed lines)."""
    text = "\n".join(item if isinstance(item, str) else json.dumps(item) for item in lines)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")
