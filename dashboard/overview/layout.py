"""The Overview page's layout: live refresh, KPI cards, the latency chart and the cards
below it."""

from __future__ import annotations

from typing import Any

import dash_bootstrap_components as dbc
from dash import dcc, html

from dashboard import context
from dashboard.core.timeaxis import OFF, Refresh, refresh_rates
from dashboard.overview import ids
from dashboard.overview.cards import (
    alerts_card,
    changes_card,
    drift_card,
    explanation_card,
    violations_card,
)
from dashboard.shell.figures import message_figure
from dashboard.shell.glossary import GLOSSARY


def _card(label: str, component_id: str, explanation: str) -> dbc.Card:
    """A KPI card whose label shows ``explanation`` (glossary sentences) on hover."""
    return dbc.Card(
        dbc.CardBody(
            [
                html.Div(label, className="kpi-label glossary-term", title=explanation),
                html.H5(id=component_id),
            ]
        ),
        className="kpi-card",
    )


def _explain(*terms: str) -> str:
    """The glossary definitions of ``terms``, one line each."""
    return "\n".join(f"{name}: {GLOSSARY[name]}" for name in terms)


ROW = {"display": "flex", "alignItems": "center", "gap": "0.5rem", "flexWrap": "wrap"}


def _rate_options(default: float) -> list[dict[str, Any]]:
    return [{"label": f"every {r:g} s", "value": r} for r in refresh_rates(default)] + [
        {"label": "off", "value": OFF}
    ]


def _live_controls(refresh: float) -> html.Div:
    """The Overview's live refresh (the time range and the clock are in the top bar)."""
    live = html.Div(
        [
            dcc.Dropdown(
                id=ids.OV_RATE,
                options=_rate_options(refresh),
                value=refresh,
                clearable=False,
                searchable=False,
                style={"width": "8.5rem"},
            ),
            dbc.Button("Pause", id=ids.OV_PAUSE, size="sm", color="secondary"),
            html.Span(id=ids.OV_LIVE_STATUS, className="small text-muted"),
        ],
        style=ROW,
        title="How often the Overview reloads the newest data; pause to study a moment "
        "while data keeps arriving.",
    )
    return html.Div(live, className="mb-2")


def layout(**query: Any) -> html.Div:
    """The Overview; ``query`` is the URL's query string (refresh, paused; the shell
    reads the time range and the clock)."""
    default = context.current().refresh_seconds
    refresh = Refresh.from_query(query, default)
    return html.Div(
        [
            dcc.Interval(
                id=ids.OV_REFRESH,
                interval=int((refresh.seconds or default) * 1000),
                disabled=not refresh.running,
            ),
            dcc.Store(id=ids.OV_PAUSED, data=refresh.paused),
            _live_controls(refresh.seconds),
            dbc.Alert(id=ids.OV_MESSAGE, is_open=False, color="warning"),
            dbc.Alert(id=ids.OV_DRIFT_BANNER, is_open=False, color="danger"),
            dbc.Row(
                [
                    dbc.Col(
                        _card(
                            "worst case: estimated, predicted, measured",
                            ids.OV_KPI_WC,
                            _explain("MaceWC", "estimated", "predicted", "measured"),
                        ),
                        md=6,
                    ),
                    dbc.Col(
                        _card(
                            "bound coverage (measured inside the bounds)",
                            ids.OV_KPI_COVERAGE,
                            "Share of measured subintervals inside the estimator's band "
                            "[Mace, estimated + w + eps] (burst-aware: + 2w/k + eps, per-origin: "
                            "+ (h + 2)w/k + eps, + w/4 from a node profile only; the chart's "
                            "legend names it).\n" + _explain("Mace", "w", "eps"),
                        ),
                        md=3,
                    ),
                    dbc.Col(
                        _card(
                            "current bottleneck",
                            ids.OV_KPI_BOTTLENECK,
                            "The node with the largest CE/C in the newest subinterval with a "
                            "backlog.\n" + _explain("CE/C"),
                        ),
                        md=3,
                    ),
                ],
                className="mb-2 g-2",
            ),
            html.Div(id=ids.OV_ESTIMATE_NOTE, className="small text-muted mb-1"),
            dcc.Graph(
                id=ids.OV_LATENCY,
                config={"doubleClick": "autosize"},
                figure=message_figure("", "loading…"),
            ),
            violations_card(),
            dcc.Store(id=ids.OV_EXPLAIN_AT),
            dcc.Store(id=ids.OV_EXPLAIN_SHOWN),
            dcc.Store(id=ids.OV_REFIT),
            explanation_card(),
            changes_card(),
            drift_card(),
            alerts_card(),
        ]
    )
