"""Numbers of the Data health page: how fresh a run's data is and how ingestion goes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import plotly.graph_objects as go

from dashboard.shell.figures import message_figure
from dashboard.shell.theme import ESTIMATED, MEASURED
from storage.health import IngestBatch
from storage.reads import RunInfo

WALL_CLOCK_ORIGIN = 1.0e9
"""An origin past 2001-09-09 (epoch seconds) is a wall-clock start: a live run (the live
simulator and the Flink collector stamp one); batch runs start at 0."""


@dataclass(frozen=True)
class Freshness:
    """How far behind real time a run's newest statistics are (None: not a live run,
    or no statistics yet) and when the last batch ended."""

    newest_data_end: float | None  # epoch seconds: end of the newest subinterval
    lag_seconds: float | None
    last_batch_age_seconds: float | None


def freshness(run: RunInfo, batches: list[IngestBatch], now: float) -> Freshness:
    """``now`` in epoch seconds (UTC), passed in so that the page and its tests agree."""
    newest = lag = None
    if run.origin >= WALL_CLOCK_ORIGIN and run.last_interval is not None:
        newest = run.origin + (run.last_interval + 1) * run.subinterval
        lag = max(0.0, now - newest)
    age = None
    if batches:
        finished = batches[0].finished_at.replace(tzinfo=UTC).timestamp()
        age = max(0.0, now - finished)
    return Freshness(newest, lag, age)


def describe_age(seconds: float | None) -> str:
    """``42 s``, ``3 min 5 s``, ``2 h 4 min``, or ``-``."""
    if seconds is None:
        return "-"
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    return f"{whole // 3600} h {whole % 3600 // 60} min"


def utc_text(epoch: float | None) -> str:
    return "-" if epoch is None else datetime.fromtimestamp(epoch, UTC).strftime("%H:%M:%S UTC")


BATCHES_TITLE = "Ingest batches (rows per batch, by end time, UTC)"


def no_batches_figure() -> go.Figure:
    """The batches chart before the first batch finished: says so, no empty axes."""
    return message_figure(
        BATCHES_TITLE,
        "No ingest batch has finished yet: the first ingestion is running (or ingestion "
        "has not been started: mace serve --landing, mace demo).",
        320,
    )


def ingest_batches_figure(
    finished_at: Sequence[Any],
    kept: Sequence[int],
    quarantined: Sequence[int],
    seconds: Sequence[float],
) -> go.Figure:
    """Rows kept and quarantined per ingest batch (stacked bars at each batch's end, UTC),
    with each batch's duration in the hover."""
    duration = np.asarray(seconds, dtype=float)
    fig = go.Figure()
    for name, values, color in (
        ("rows kept", kept, ESTIMATED),
        ("rows quarantined", quarantined, MEASURED),
    ):
        fig.add_trace(
            go.Bar(
                x=list(finished_at),
                y=list(values),
                name=name,
                marker_color=color,
                customdata=duration,
                hovertemplate=f"{name}: %{{y:,}} (batch took %{{customdata:.1f}} s)<extra></extra>",
            )
        )
    fig.update_layout(
        barmode="stack",
        title={"text": BATCHES_TITLE, "x": 0.01},
        xaxis_title="batch finished (UTC)",
        yaxis_title="rows",
        hovermode="x unified",
        margin={"l": 60, "r": 20, "t": 50, "b": 45},
        legend={"orientation": "h", "y": -0.2},
        height=320,
        uirevision="health",
    )
    return fig
