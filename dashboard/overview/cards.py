"""The Overview's cards below the chart: changes, alerts, violations, drift and the explanation."""

from __future__ import annotations

from typing import Any

import dash_bootstrap_components as dbc
from dash import dcc, html
from dash.dash_table.DataTable import DataTable
from dash.dash_table.Format import Format, Scheme, Sign
from dash.dash_table.FormatTemplate import percentage

from dashboard.core.timeaxis import (
    Clock,
)
from dashboard.overview import ids
from dashboard.overview.blame_figures import CONTRIBUTION_HEIGHT, CONTRIBUTION_TITLE
from dashboard.shell.figures import message_figure
from dashboard.shell.glossary import term
from dashboard.shell.graph import geometry, panel, style
from estimator.drift import DEFAULT_K

DEFAULT_REFIT_MINUTES = 1
GRAPH_MODES = (style.BLAME, style.NODE, style.UTILISATION)

TABLE_STYLE: dict[str, Any] = {
    "style_cell": {"fontSize": 13, "padding": "2px 6px"},
    "style_cell_conditional": [{"if": {"column_type": "text"}, "textAlign": "left"}],
    "style_header": {"whiteSpace": "normal", "height": "auto", "fontWeight": "bold"},
    "style_table": {"overflowX": "auto"},
}

SECONDS = Format(precision=3, scheme=Scheme.fixed).to_plotly_json()
SIGNED_PERCENT = Format(precision=0, scheme=Scheme.percentage, sign=Sign.positive).to_plotly_json()


def _seconds(name: str, column: str) -> dict[str, Any]:
    return {"name": name, "id": column, "type": "numeric", "format": SECONDS}


def _time(clock: Clock, prefix: str, column: str) -> dict[str, Any]:
    """A column of times on ``clock`` (its heading names the clock)."""
    kind = "text" if clock.wall else "numeric"
    return {"name": clock.heading(prefix), "id": column, "type": kind}


def changes_columns(clock: Clock) -> list[Any]:
    """The Changes table's columns: the verdict (predicted and measured change) first,
    visible without scrolling, then the worst cases they come from."""
    return [
        _time(clock, "", "time"),
        {"name": "version", "id": "version", "type": "numeric"},
        {"name": "what changed", "id": "moved", "type": "text"},
        {
            "name": "predicted change",
            "id": "predicted_change",
            "type": "numeric",
            "format": SIGNED_PERCENT,
        },
        {
            "name": "measured change",
            "id": "measured_change",
            "type": "numeric",
            "format": SIGNED_PERCENT,
        },
        _seconds("predicted worst case before (s)", "predicted_wc_before"),
        _seconds("predicted worst case after (s)", "predicted_wc_after"),
        _seconds("measured worst case before (s)", "measured_wc_before"),
        _seconds("measured worst case after (s)", "measured_wc_after"),
    ]


def changes_card() -> dbc.Card:
    """Each placement change checked: the model fitted before it against what happened."""
    return dbc.Card(
        dbc.CardBody(
            [
                html.H5("Changes"),
                html.P(
                    [
                        "Each placement change (a dashed marker on the chart), checked: the ",
                        term("predicted"),
                        " worst case of a model fitted before the change only, for the "
                        "periods before and after it, against the ",
                        term("measured"),
                        " worst case of the same periods. Empty cells: no data yet.",
                    ],
                    className="text-muted small mb-2",
                ),
                html.Div(id=ids.OV_CHANGES_NOTE, className="small mb-2"),
                DataTable(
                    id=ids.OV_CHANGES_TABLE,
                    columns=changes_columns(Clock()),
                    page_size=8,
                    **TABLE_STYLE,
                ),
            ]
        ),
        className="mb-3",
    )


def alert_columns(clock: Clock) -> list[Any]:
    return [
        {"name": "alert", "id": "kind", "type": "text"},
        {"name": "query", "id": "query", "type": "text"},
        _time(clock, "from", "start"),
        _time(clock, "to", "end"),
        _seconds("peak (s)", "value"),
        _seconds("objective (s)", "objective"),
        {"name": "detail", "id": "detail", "type": "text"},
        {"name": "sent to webhook", "id": "delivered", "type": "text"},
    ]


def alerts_card() -> dbc.Card:
    """The run's stored alerts (raised by the alert pass of mace ingest or serve)."""
    return dbc.Card(
        dbc.CardBody(
            [
                html.H5("Alerts"),
                html.P(
                    "Raised after each ingestion pass (mace ingest, mace serve --landing): a "
                    "query's measured or predicted latency above its objective (set on the "
                    "Reports page; predicted: before it happens), and model drift. Peak: the "
                    "largest latency of a breach, or the largest distance outside the band "
                    "of a drift.",
                    className="text-muted small mb-2",
                ),
                html.Div(id=ids.OV_ALERTS_NOTE, className="small mb-2"),
                DataTable(
                    id=ids.OV_ALERTS, columns=alert_columns(Clock()), page_size=8, **TABLE_STYLE
                ),
            ]
        ),
        className="mb-3",
    )


def violations_card() -> dbc.Card:
    """The objectives' violations in the shown range, as time ranges (shaded on the chart)."""
    columns: list[Any] = [
        {"name": "query", "id": "query", "type": "text"},
        {"name": "time range", "id": "range", "type": "text"},
        {"name": "duration (s)", "id": "duration", "type": "numeric"},
        _seconds("peak latency (s)", "peak"),
        _seconds("objective (s)", "objective"),
    ]
    return dbc.Card(
        dbc.CardBody(
            [
                html.H5("Objective violations"),
                html.P(
                    [
                        "Stretches where a query's ",
                        term("measured"),
                        " max latency was above its objective (set on the Reports "
                        "page), in the shown range, newest first; shaded red on the chart.",
                    ],
                    className="text-muted small mb-2",
                ),
                html.Div(id=ids.OV_VIOLATIONS_NOTE, className="small mb-2"),
                DataTable(id=ids.OV_VIOLATIONS, columns=columns, page_size=6, **TABLE_STYLE),
            ]
        ),
        className="mb-3",
    )


def drift_columns(clock: Clock) -> list[Any]:
    return [
        {"name": "query", "id": "query", "type": "text"},
        _time(clock, "from", "start"),
        _time(clock, "to", "end"),
        {"name": "duration (s)", "id": "duration", "type": "numeric"},
        {"name": "measured latency", "id": "direction", "type": "text"},
        _time(clock, "flagged at", "flagged"),
        _seconds("largest distance to the band (s)", "peak"),
    ]


def drift_card() -> dbc.Card:
    """When the model stops holding: drift events, k, the rolling error and a refit."""
    controls = dbc.Row(
        [
            dbc.Col(
                [
                    html.Label("k (consecutive subintervals outside the band)", className="small"),
                    dbc.Input(
                        id=ids.OV_DRIFT_K,
                        type="number",
                        min=1,
                        step=1,
                        value=DEFAULT_K,
                        debounce=True,
                        size="sm",
                    ),
                ],
                md=4,
            ),
            dbc.Col(
                [
                    html.Label("recent window (minutes)", className="small"),
                    dbc.Input(
                        id=ids.OV_REFIT_MINUTES,
                        type="number",
                        min=0,
                        value=DEFAULT_REFIT_MINUTES,
                        debounce=True,
                        size="sm",
                    ),
                ],
                md=3,
            ),
            dbc.Col(
                [
                    dbc.Button(
                        "Refit on recent window", id=ids.OV_REFIT_APPLY, size="sm", className="me-1"
                    ),
                    dbc.Button(
                        "Original model", id=ids.OV_REFIT_RESET, size="sm", color="secondary"
                    ),
                ],
                md=5,
                style={"alignSelf": "flex-end"},
            ),
        ],
        className="mb-2",
    )
    return dbc.Card(
        dbc.CardBody(
            [
                html.H5("Model drift"),
                html.P(
                    [
                        "A ",
                        term("drift event"),
                        ": the measured max latency stays outside the ",
                        term("predicted band"),
                        " ([",
                        term("Mace"),
                        ", path-aware predicted + ",
                        term("w"),
                        " + ",
                        term("eps"),
                        "] widened by one w on each side) for k consecutive subintervals or "
                        "more; only subintervals whose outputs are all in count. The model no "
                        "longer matches the system: refit it on a recent window (stored for "
                        "the run: the alert pass predicts with it too).",
                    ],
                    className="text-muted small mb-2",
                ),
                dbc.Row(
                    [
                        dbc.Col(
                            [
                                controls,
                                dbc.Alert(id=ids.OV_REFIT_MESSAGE, is_open=False, color="danger"),
                                html.Div(id=ids.OV_MODEL_NOTE, className="small mb-2"),
                                DataTable(
                                    id=ids.OV_DRIFT_TABLE,
                                    columns=drift_columns(Clock()),
                                    page_size=6,
                                    **TABLE_STYLE,
                                ),
                            ],
                            md=6,
                        ),
                        dbc.Col(
                            dcc.Graph(
                                id=ids.OV_ERROR_GRAPH,
                                config={"displayModeBar": False},
                                figure=message_figure("Prediction error", "loading…", 260),
                            ),
                            md=6,
                        ),
                    ]
                ),
            ]
        ),
        className="mb-3",
    )


def explanation_card() -> dbc.Card:
    """Latency blame of the clicked (or the worst) subinterval."""
    intro = html.P(
        [
            "Click a point of the chart to explain that subinterval. The ",
            term("bottleneck"),
            " is the node with the largest ",
            term("CE/C"),
            " there; its backlog has been building since the start of its ",
            term("busy period"),
            " (the shaded span). Each operator placed on it gets a part of the backlog in "
            "proportion to its ",
            term("DLTS"),
            " over that period, and each source the part its events caused; the parts add "
            "up to the CE/C, in seconds. With the path-aware estimator, every node of the "
            "critical path gets its part the same way over its own window, and the parts "
            "add up to the estimate.",
        ],
        className="text-muted small mb-2",
    )
    return dbc.Card(
        dbc.CardBody(
            [
                dbc.Row(
                    [
                        dbc.Col(html.H5("Why is latency high here?"), md=8),
                        dbc.Col(
                            dbc.Button(
                                "Explain the worst subinterval", id=ids.OV_EXPLAIN_WORST, size="sm"
                            ),
                            md=4,
                            style={"textAlign": "right"},
                        ),
                    ]
                ),
                intro,
                html.P(id=ids.OV_EXPLAIN_TEXT, className="mb-2", style={"fontWeight": 600}),
                dbc.Alert(id=ids.OV_EXPLAIN_NOTE, is_open=False, color="warning"),
                dbc.Row(
                    [
                        dbc.Col(
                            dcc.Graph(
                                id=ids.OV_BLAME_BARS,
                                config={"displayModeBar": False},
                                figure=message_figure(
                                    CONTRIBUTION_TITLE, "loading…", CONTRIBUTION_HEIGHT
                                ),
                            ),
                            md=7,
                        ),
                        dbc.Col(
                            [
                                html.H6("Share of the backlog per source"),
                                DataTable(
                                    id=ids.OV_BLAME_SOURCES,
                                    columns=[
                                        {"name": "source", "id": "source", "type": "text"},
                                        {
                                            "name": "CE/C (s)",
                                            "id": "seconds",
                                            "type": "numeric",
                                            "format": Format(
                                                precision=3, scheme=Scheme.fixed
                                            ).to_plotly_json(),
                                        },
                                        {
                                            "name": "share",
                                            "id": "share",
                                            "type": "numeric",
                                            "format": percentage(1),
                                        },
                                    ],
                                    style_cell={"fontSize": 13, "padding": "2px 6px"},
                                ),
                            ],
                            md=5,
                        ),
                    ]
                ),
                panel.panel(
                    ids.OV_BLAME_GRAPH,
                    ids.OV_GRAPH_MODE,
                    ids.OV_GRAPH_LEGEND,
                    ids.OV_GRAPH_FIT,
                    GRAPH_MODES,
                    geometry.WIDE,
                    "Operator graph",
                ),
            ]
        ),
        className="mb-3",
    )
