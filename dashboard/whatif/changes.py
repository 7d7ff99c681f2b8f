"""The placement changes applied during a run, as the What-if page and the Overview's
Changes table each predict them, side by side with what was measured, and why the two
predictions differ.

They answer different questions. The **What-if** figure drives the old and the new
placement with the *same* arrivals (the pinned baseline window) through one model
fitted on that window: what the move itself does. The **Changes table** figure
(:func:`estimator.verification.verify_changes`) is the model fitted *before* the change
only, its worst case over the period before the change (old placement, the arrivals of
then) against the period after it (new placement, the arrivals of then): what the
model, knowing nothing after the change, expected the run to see. Its number moves with
the load as well as with the move; the measured change is of the same kind.
"""

from __future__ import annotations

import math
from typing import Any

import dash_bootstrap_components as dbc
from dash import Input, Output, html
from dash.dash_table.DataTable import DataTable

from dashboard import context
from dashboard.core.data import RunData
from dashboard.core.estimators import shown_estimator
from dashboard.core.report import change_checks, change_text
from dashboard.shell import ids as shell_ids
from dashboard.shell.callbacks import Callbacks, answers, chosen_run
from dashboard.whatif import ids, link
from dashboard.whatif.common import TABLE_STYLE, inputs_of
from estimator.verification import ChangeCheck
from estimator.whatif import RunInputs, WhatIfEngine, scenario_from_json

callbacks = Callbacks()

SAME = 0.005
"""Two predicted changes closer than this (half a percentage point) are the same number."""

COLUMNS = (
    ("change at", "at"),
    ("what changed", "moved"),
    ("predicted here (What-if)", "whatif"),
    ("predicted in the Changes table", "table"),
    ("measured", "measured"),
    ("why the two predictions differ", "why"),
)


def card() -> dbc.Card:
    """The card (hidden on a run without a placement change)."""
    return dbc.Card(
        dbc.CardBody(
            [
                html.H6("Changes applied in this run: each prediction of them"),
                html.P(
                    "The worst case's change, predicted on this page (the old and the new "
                    "placement on the same arrivals, with the model of the baseline window) "
                    "and in the Overview's Changes table (the model fitted before the change, "
                    "the period before it against the period after it), and measured.",
                    className="text-muted small mb-2",
                ),
                DataTable(
                    id=ids.WI_CH_TABLE,
                    columns=[{"name": name, "id": key} for name, key in COLUMNS],
                    data=[],
                    style_cell={**TABLE_STYLE, "whiteSpace": "normal", "height": "auto"},
                    style_cell_conditional=[{"if": {"column_id": "why"}, "minWidth": "320px"}],
                ),
            ]
        ),
        id=ids.WI_CH_CARD,
        className="mb-3",
        style={"display": "none"},
    )


def _percent(value: float) -> str:
    return "no data yet" if not math.isfinite(value) else f"{value:+.0%}"


def _span(start: int, stop: int, w: float) -> str:
    return f"{link.clock(start * w)}–{link.clock(stop * w)}"


def why(check: ChangeCheck, whatif: float, window: tuple[int, int], w: float) -> str:
    """Why the What-if's predicted change and the Changes table's differ (or that they
    are the same number)."""
    if math.isfinite(check.predicted_change) and abs(whatif - check.predicted_change) <= SAME:
        return "the same number"
    reasons = [
        "different arrivals: here both placements see the same arrivals of "
        f"{_span(*window, w)}; the Changes table compares {_span(*check.before, w)} (old "
        f"placement) with {_span(*check.after, w)} (new placement), whose loads differ"
    ]
    if tuple(check.training) != tuple(window):
        reasons.append(
            f"different model: fitted on {_span(*window, w)} here, on "
            f"{_span(*check.training, w)} (before the change only) for the Changes table"
        )
    return "; ".join(reasons)


def _whatif_change(
    engine: WhatIfEngine, inputs: RunInputs, old: dict[str, Any], new: dict[str, Any], name: str
) -> float:
    """The worst case's relative change from the ``old`` deployment to the ``new`` one
    (scenarios: a placement and node capacities) on the baseline."""
    before = engine.evaluate(inputs, scenario_from_json(old), name)
    after = engine.evaluate(inputs, scenario_from_json(new), name)
    a, b = before.estimate.worst_case, after.estimate.worst_case
    return b / a - 1.0 if a > 0 else math.nan


def rows(
    engine: WhatIfEngine, run: RunData, inputs: RunInputs, window: tuple[int, int], name: str
) -> list[dict[str, str]]:
    """One row per placement change of the run (see the module's docstring)."""
    deployments = {
        v.version: {"placement": dict(v.placement), "capacities": dict(v.capacities)}
        for v in run.versions
    }
    versions = [v.version for v in run.versions]
    out = []
    w = run.subinterval
    for check in change_checks(run, name):
        k = versions.index(check.version)
        whatif = _whatif_change(engine, inputs, deployments[versions[k - 1]],
                                deployments[check.version], name)  # fmt: skip
        out.append(
            {
                "at": link.clock(check.interval * w),
                "moved": change_text(check, run.topology),
                "whatif": _percent(whatif),
                "table": _percent(check.predicted_change),
                "measured": _percent(check.measured_change),
                "why": why(check, whatif, window, w),
            }
        )
    return out


@callbacks.callback(
    Output(ids.WI_CH_CARD, "style"),
    Output(ids.WI_CH_TABLE, "data"),
    Input(shell_ids.RUN, "value"),
    Input(shell_ids.ESTIMATOR, "value"),
    Input(ids.WI_BASELINE, "data"),
)
@answers(lambda _: ({"display": "none"}, []))
def show(run_id: str | None, estimator: str | None, windows: Any) -> tuple[Any, Any]:
    """The card on a run with placement changes."""
    run = chosen_run(run_id)
    if len(run.versions) < 2:
        return {"display": "none"}, []
    inputs = inputs_of(run, windows)
    start, stop = link.window_for(windows, run.info.run_id) or (0, run.intervals)
    chosen = shown_estimator(run, estimator).name
    found = rows(context.current().engine, run, inputs, (start, stop), chosen)
    return {}, found
