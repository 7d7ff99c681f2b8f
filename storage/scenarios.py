"""Saved what-if scenarios, latency objectives and refit training windows (the
dashboard's own tables).

A scenario row stores JSON documents: ``placement`` (operator -> node
overrides), ``capacities`` (the node-side changes: ``{"capacities": {...},
"add_nodes": {...}, "remove_nodes": [...]}``), ``rate_scale`` (the load-side
changes: ``{"rate_scale": x, "subinterval_factor": k}``) and ``added_queries``
(a list holding the scenario's ``add_query``, empty when it adds none).
:func:`save_scenario` takes and :func:`load_scenario` returns the flat JSON form
of :func:`estimator.whatif.scenario_to_json`.
"""

from __future__ import annotations

import json
import math
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import duckdb

from storage.db import storage_errors
from storage.errors import StorageError

MAX_NAME_LENGTH = 120


@dataclass(frozen=True)
class SavedScenario:
    scenario_id: str
    run_id: str
    name: str
    scenario: dict[str, Any]
    created_at: datetime


def save_scenario(
    con: duckdb.DuckDBPyConnection, run_id: str, name: str, scenario: dict[str, Any]
) -> str:
    """Store a scenario under a name (a new id each time); return its id."""
    name = name.strip()
    if not name:
        raise StorageError("scenario name: enter a name")
    if len(name) > MAX_NAME_LENGTH:
        raise StorageError(f"scenario name: at most {MAX_NAME_LENGTH} characters")
    scenario_id = uuid.uuid4().hex[:12]
    nodes = {
        "capacities": scenario.get("capacities", {}),
        "add_nodes": scenario.get("add_nodes", {}),
        "remove_nodes": scenario.get("remove_nodes", []),
    }
    load = {
        "rate_scale": scenario.get("rate_scale", 1.0),
        "subinterval_factor": scenario.get("subinterval_factor", 1),
    }
    with storage_errors(f"saving scenario '{name}'"):
        con.execute(
            "INSERT INTO scenarios (scenario_id, run_id, name, placement, capacities,"
            " rate_scale, added_queries) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                scenario_id,
                run_id,
                name,
                json.dumps(scenario.get("placement", {})),
                json.dumps(nodes),
                json.dumps(load),
                json.dumps([scenario["add_query"]] if scenario.get("add_query") else []),
            ],
        )
    return scenario_id


def _row_to_scenario(row: tuple[Any, ...]) -> SavedScenario:
    scenario_id, run_id, name, placement, capacities, rate_scale, added, created_at = row
    try:
        nodes = json.loads(capacities)
        load = json.loads(rate_scale)
        queries = json.loads(added) if added else []
        document = {"placement": json.loads(placement), **nodes, **load}
        if queries:
            document["add_query"] = queries[0]
    except (json.JSONDecodeError, TypeError) as exc:
        raise StorageError(f"scenario '{name}': stored document is damaged ({exc})") from None
    return SavedScenario(str(scenario_id), str(run_id), str(name), document, created_at)


_COLUMNS = "scenario_id, run_id, name, placement, capacities, rate_scale, added_queries, created_at"


def list_scenarios(con: duckdb.DuckDBPyConnection, run_id: str) -> list[SavedScenario]:
    """The run's saved scenarios, newest first."""
    with storage_errors(f"listing scenarios of run '{run_id}'"):
        rows = con.execute(
            f"SELECT {_COLUMNS} FROM scenarios WHERE run_id = ? ORDER BY created_at DESC, name",
            [run_id],
        ).fetchall()
    return [_row_to_scenario(r) for r in rows]


def load_scenario(con: duckdb.DuckDBPyConnection, scenario_id: str) -> SavedScenario:
    """One saved scenario; StorageError naming the id if it does not exist."""
    with storage_errors(f"reading scenario '{scenario_id}'"):
        rows = con.execute(
            f"SELECT {_COLUMNS} FROM scenarios WHERE scenario_id = ?", [scenario_id]
        ).fetchall()
    if not rows:
        raise StorageError(f"unknown scenario '{scenario_id}'")
    return _row_to_scenario(rows[0])


def set_objective(
    con: duckdb.DuckDBPyConnection, run_id: str, query: str, seconds: float | None
) -> None:
    """Store (or with None remove) a query's latency objective in seconds."""
    if seconds is not None and (not math.isfinite(seconds) or seconds <= 0):
        raise StorageError(f"latency objective of '{query}': must be a positive number of seconds")
    with storage_errors(f"saving the latency objective of '{query}'"):
        con.execute(
            "DELETE FROM latency_objectives WHERE run_id = ? AND query = ?", [run_id, query]
        )
        if seconds is not None:
            con.execute(
                "INSERT INTO latency_objectives (run_id, query, objective_seconds)"
                " VALUES (?, ?, ?)",
                [run_id, query, float(seconds)],
            )


def objectives(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, float]:
    """Query -> latency objective (seconds) of a run."""
    with storage_errors(f"reading latency objectives of run '{run_id}'"):
        rows = con.execute(
            "SELECT query, objective_seconds FROM latency_objectives WHERE run_id = ?"
            " ORDER BY query",
            [run_id],
        ).fetchall()
    return {str(q): float(s) for q, s in rows}


def set_training_window(
    con: duckdb.DuckDBPyConnection, run_id: str, window: tuple[int, int] | None
) -> None:
    """Fit the run's predictive model on ``window`` ([start, stop) subintervals) from now
    on, e.g. a recent window after drift (a refit); ``None`` goes back to the default."""
    if window is not None and not 0 <= window[0] < window[1]:
        raise StorageError(f"training window [{window[0]}, {window[1]}) holds no subinterval")
    with storage_errors(f"saving the training window of run '{run_id}'"):
        con.execute("DELETE FROM training_windows WHERE run_id = ?", [run_id])
        if window is not None:
            con.execute(
                "INSERT INTO training_windows (run_id, start_interval, stop_interval)"
                " VALUES (?, ?, ?)",
                [run_id, int(window[0]), int(window[1])],
            )


def training_window_of(con: duckdb.DuckDBPyConnection, run_id: str) -> tuple[int, int] | None:
    """The run's refit training window, or None for the default (the first share)."""
    with storage_errors(f"reading the training window of run '{run_id}'"):
        rows = con.execute(
            "SELECT start_interval, stop_interval FROM training_windows WHERE run_id = ?",
            [run_id],
        ).fetchall()
    return (int(rows[0][0]), int(rows[0][1])) if rows else None
