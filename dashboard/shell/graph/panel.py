"""The operator graph's panel, shared by the pages that show it: a colour-mode selector,
a Fit button, the Cytoscape graph (fitted on every draw, zoom bounded) and a legend.

Pages lay it out with :func:`panel`, feed their data to the graph's ``elements``
(:class:`dashboard.shell.graph.elements.Graph`) and call :func:`wire` for the two callbacks
every graph has: the mode to the ``stylesheet`` and legend (:func:`styled`), and Fit to
the ``layout`` (:func:`refit`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import dash_bootstrap_components as dbc
import dash_cytoscape as cyto
from dash import Input, Output, State, html

from dashboard.shell.graph import geometry, style
from dashboard.shell.graph.style import LegendItem

ROW = {"display": "flex", "alignItems": "center", "gap": "0.5rem", "flexWrap": "wrap"}

HINT = (
    "Boxes are the nodes (machines), each holding its operators; diamonds are sources. "
    "Scroll to zoom, drag to pan, Fit shows the whole graph again."
)


def panel(
    graph_id: str,
    mode_id: str,
    legend_id: str,
    fit_id: str,
    modes: Sequence[str],
    frame: geometry.Frame,
    title: str | None = None,
    hint: str = HINT,
) -> html.Div:
    """The graph with its controls in a box of ``frame``'s height; ``modes`` are the
    colour modes offered (the first is the default); ``hint`` under it says what the
    mouse does."""
    selector = dbc.RadioItems(
        id=mode_id,
        options=[{"label": style.MODE_LABELS[m], "value": m} for m in modes],
        value=modes[0],
        inline=True,
        className="small",
        style={"display": "inline-block"},
    )
    header = [
        html.H6(title, style={"margin": 0}) if title else None,
        html.Span([html.Small("Colour by:"), selector], style=ROW),
        dbc.Button("Fit", id=fit_id, size="sm", color="secondary"),
    ]
    return html.Div(
        [
            html.Div([h for h in header if h is not None], style={**ROW, "gap": "1.5rem"}),
            html.Div(id=legend_id, className="small", style={"margin": "0.3rem 0"}),
            cyto.Cytoscape(
                id=graph_id,
                elements=[],
                layout=dict(style.LAYOUT),
                stylesheet=style.stylesheet(modes[0]),
                minZoom=style.MIN_ZOOM,
                maxZoom=style.MAX_ZOOM,
                style=frame.style,
                className="operator-graph",
            ),
            html.Div(hint, className="text-muted small"),
        ],
        style={"marginTop": "0.8rem"},
    )


def styled(
    mode: str | None, elements: Sequence[Mapping[str, Any]] | None, modes: Sequence[str]
) -> tuple[list[dict[str, Any]], list[Any]]:
    """The stylesheet and the legend of colour ``mode`` (the first of ``modes`` if it
    is not one of them)."""
    chosen = mode if mode is not None and mode in modes else modes[0]
    items = style.legend(chosen, elements or [])
    return style.stylesheet(chosen), [_item(item) for item in items]


def refit(clicks: int | None) -> dict[str, Any]:
    """The layout again (a new object, so the graph lays out and fits again)."""
    return {**style.LAYOUT, "fits": clicks or 0}


def wire(
    callback: Callable[..., Callable[[Callable[..., Any]], Any]],
    graph_id: str,
    mode_id: str,
    legend_id: str,
    fit_id: str,
    modes: Sequence[str],
) -> None:
    """Register the panel's colour-mode and Fit callbacks with ``callback`` (the page's
    ``dash.callback``, or a tab's :class:`dashboard.whatif.common.Callbacks`).

    The page's callback that draws the elements also draws the legend (with
    :func:`styled`); only a change of mode restyles here. The graph reports its
    elements back after drawing them, so a legend that followed them would cost one
    more request after every draw."""

    @callback(
        Output(graph_id, "stylesheet"),
        Output(legend_id, "children", allow_duplicate=True),
        Input(mode_id, "value"),
        State(graph_id, "elements"),
        prevent_initial_call=True,
    )
    def colours(mode: str | None, elements: list[dict[str, Any]] | None) -> tuple:
        return styled(mode, elements, modes)

    @callback(Output(graph_id, "layout"), Input(fit_id, "n_clicks"), prevent_initial_call=True)
    def fit(clicks: int | None) -> dict[str, Any]:
        return refit(clicks)


GAP = {"marginRight": "1.2em", "whiteSpace": "nowrap", "display": "inline-block"}

SWATCH = {
    "display": "inline-block",
    "width": "14px",
    "height": "14px",
    "verticalAlign": "middle",
    "border": "1px solid #666",
    "margin": "0 4px",
}


def _item(item: LegendItem) -> html.Span:
    """One legend entry: a swatch (or a colour scale between two texts) and its text."""
    if item.gradient:
        scale = ", ".join(item.gradient)
        swatch = {**SWATCH, "width": "90px", "background": f"linear-gradient(to right, {scale})"}
        return html.Span([item.text, html.Span(style=swatch), item.after], style=GAP)
    if item.dashed:
        swatch = {**SWATCH, "border": f"2px dashed {item.color}", "background": "transparent"}
    elif item.color:
        swatch = {**SWATCH, "background": item.color}
    else:
        return html.Span(item.text, className="text-muted", style=GAP)
    return html.Span([html.Span(style=swatch), item.text], style=GAP)
