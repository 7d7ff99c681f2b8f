"""The Nodes page's layout: the node picker (the time range is in the top bar), the
figures, the hosts section."""

from __future__ import annotations

from typing import Any

import dash_bootstrap_components as dbc
from dash import dcc, html

from dashboard import context
from dashboard.nodes import figures, ids
from dashboard.shell import figures as shell_figures
from dashboard.shell.glossary import term
from dashboard.shell.jobs import job_buttons


def _loading(title: str) -> Any:
    """A chart before its first answer: its title and "loading…", no empty axes."""
    return shell_figures.message_figure(title, "loading…")


def layout(**_: Any) -> html.Div:
    refresh = context.current().refresh_seconds
    return html.Div(
        [
            dcc.Interval(id=ids.ND_REFRESH, interval=int(refresh * 1000)),
            dbc.Row(
                [
                    dbc.Col(dcc.Dropdown(id=ids.ND_NODE, placeholder="node"), md=3),
                ],
                className="mb-2",
            ),
            dbc.Alert(id=ids.ND_MESSAGE, is_open=False, color="warning"),
            html.Div(
                [
                    "Estimated ",
                    term("CE/C"),
                    " per node and subinterval: seconds of backlog (",
                    term("CE", "cumulative excess"),
                    " over capacity). Click a row to show that node below.",
                ],
                className="text-muted small",
            ),
            dcc.Graph(id=ids.ND_HEATMAP, figure=_loading(figures.HEATMAP_TITLE)),
            html.Div(
                [
                    "Left: measured ",
                    term("DLTS"),
                    " of the chosen node against capacity × ",
                    term("w"),
                    " (above the line, CE grows). Right: measured utilization against it.",
                ],
                className="text-muted small",
            ),
            dbc.Row(
                [
                    dbc.Col(dcc.Graph(id=ids.ND_DLTS, figure=_loading(figures.DLTS_TITLE)), md=6),
                    dbc.Col(dcc.Graph(id=ids.ND_BUSY, figure=_loading(figures.BUSY_TITLE)), md=6),
                ]
            ),
            dcc.Graph(id=ids.ND_BOTTLENECK, figure=_loading(figures.BOTTLENECK_TITLE)),
            html.Hr(),
            _hosts_section(),
        ]
    )


def _field(label: str, component: str, width: int) -> dbc.Col:
    return dbc.Col([html.Small(label), dbc.Input(id=component, size="sm", debounce=True)], md=width)


def _hosts_section() -> html.Div:
    return html.Div(
        [
            dcc.Store(id=ids.ND_HOSTS_REQUEST),
            html.H5("Hosts needed over time"),
            html.Div(
                [
                    "How many machines does the latency objective need, and when? Per "
                    "window of the recorded load, the fewest nodes on which the placement "
                    "search keeps every query's ",
                    term("MaceWC"),
                    " within the ",
                    term("latency objective"),
                    ", against the hosts FUGU opens to keep each node under its ",
                    term("FUGU threshold", "utilisation threshold"),
                    ", and the ",
                    term("machine-hours"),
                    " of each. The objective defaults to the run's tightest stored "
                    "objective, else its measured worst case.",
                ],
                className="text-muted small mb-2",
            ),
            dbc.Row(
                [
                    _field("Objective (s)", ids.ND_HOSTS_OBJECTIVE, 2),
                    _field("Window (min)", ids.ND_HOSTS_WINDOW, 2),
                    _field("Node capacity (CPU-s/s)", ids.ND_HOSTS_CAPACITY, 2),
                    dbc.Col(
                        job_buttons("Compute", ids.ND_HOSTS_START, ids.ND_HOSTS_CANCEL),
                        md=2,
                        className="pt-3",
                    ),
                ],
                className="mb-2",
            ),
            dbc.Progress(id=ids.ND_HOSTS_PROGRESS, value=0, label="", style={"maxWidth": "50%"}),
            dcc.Graph(
                id=ids.ND_HOSTS,
                figure=shell_figures.message_figure("Hosts needed over time", "computing…"),
            ),
            html.Div(id=ids.ND_HOSTS_CAPTION, className="small"),
        ]
    )
