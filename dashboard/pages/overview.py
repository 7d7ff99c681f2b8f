"""Overview (live): measured, estimated and predicted latency, KPI cards, automatic refresh."""

from __future__ import annotations

from typing import Any

import dash
import dash_bootstrap_components as dbc
from dash import Input, Output, State, ctx, dcc, html, no_update

from dashboard import context, figures, ids, views
from dashboard.glossary import GLOSSARY
from estimator.errors import MaceError

dash.register_page(__name__, path="/", name="Overview", order=0)


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


def layout(**_: Any) -> html.Div:
    refresh = context.current().refresh_seconds
    return html.Div(
        [
            dcc.Interval(id=ids.OV_REFRESH, interval=int(refresh * 1000)),
            dbc.Row(
                [
                    dbc.Col(
                        dbc.RadioItems(
                            id=ids.OV_RANGE,
                            options=[
                                {"label": "last 5 minutes", "value": "5m"},
                                {"label": "last hour", "value": "1h"},
                                {"label": "all", "value": "all"},
                            ],
                            value="all",
                            inline=True,
                        ),
                        md=6,
                    ),
                ],
                className="mb-2",
            ),
            dbc.Alert(id=ids.OV_MESSAGE, is_open=False, color="warning"),
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
                            "Share of measured subintervals inside [Mace, estimated + w + eps].\n"
                            + _explain("Mace", "w", "eps"),
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
            dcc.Graph(id=ids.OV_LATENCY),
        ]
    )


@dash.callback(
    Output(ids.OV_LATENCY, "figure"),
    Output(ids.OV_KPI_WC, "children"),
    Output(ids.OV_KPI_COVERAGE, "children"),
    Output(ids.OV_KPI_BOTTLENECK, "children"),
    Output(ids.OV_MESSAGE, "children"),
    Output(ids.OV_MESSAGE, "is_open"),
    Input(ids.RUN, "value"),
    Input(ids.OV_RANGE, "value"),
    Input(ids.OV_REFRESH, "n_intervals"),
    Input(ids.ESTIMATOR, "value"),
    State(ids.OV_LATENCY, "relayoutData"),
)
def update(
    run_id: str | None,
    range_key: str | None,
    _: Any,
    estimator: str | None,
    relayout: dict[str, Any] | None,
) -> tuple:
    if not run_id:
        return no_update, "-", "-", "-", "select a run (none ingested yet?)", True
    try:
        view = views.overview(context.current().runs.get(run_id), range_key, estimator or "mace")
    except MaceError as exc:
        return no_update, "-", "-", "-", str(exc), True
    worst, coverage, bottleneck = view.kpis()
    figure = view.figure
    if ctx.triggered_id == ids.OV_REFRESH:  # a refresh keeps the user's zoom
        figure = figures.with_ranges(figure, views.kept_zoom(relayout))
    return figure, worst, coverage, bottleneck, "", False
