"""The Overview's explanation figures: who caused the latency at the chosen point."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dashboard.shell.figures import plain_layout
from dashboard.shell.theme import DRAINED, share_color
from estimator.pathblame import PathBlame

CONTRIBUTION_TITLE = "Share of the backlog per operator"
"""The contribution chart's title before it explains a point (no resource chosen yet)."""
CONTRIBUTION_HEIGHT = 220
"""The contribution chart's least height, in pixels."""


def contribution_figure(
    contributions: Mapping[str, float], total: float, resource: str
) -> dict[str, Any]:
    """Each operator's share of ``resource``'s backlog (seconds of CE/C), largest on top
    (a plain figure, cheap to rebuild)."""
    ranked = sorted(contributions.items(), key=lambda kv: kv[1])
    names = [name for name, _ in ranked]
    seconds = [value for _, value in ranked]
    shares = [value / total if total > 0 else 0.0 for value in seconds]
    layout = plain_layout(
        f"Share of the backlog on {resource} per operator",
        "contribution to CE/C (s)",
        "",
        "blame",
    )
    layout.update(
        {
            "margin": {"l": 80, "r": 20, "t": 45, "b": 45},
            "height": max(CONTRIBUTION_HEIGHT, 110 + 32 * len(names)),
            "showlegend": False,
            "hovermode": "closest",
        }
    )
    layout["yaxis"]["automargin"] = True  # room for long operator names
    if not names:
        layout["annotations"] = [
            {
                "text": "no backlog: nothing to share",
                "showarrow": False,
                "x": 0.5,
                "y": 0.5,
                "xref": "paper",
                "yref": "paper",
            }
        ]
        layout["xaxis"]["visible"] = False
        layout["yaxis"]["visible"] = False
    bars = {
        "type": "bar",
        "orientation": "h",
        "x": seconds,
        "y": names,
        "marker": {
            "color": [share_color(v) for v in shares],
            "line": {"color": "#999", "width": 1},
        },
        "text": [f"{v:.3f} s ({f:.0%})" for v, f in zip(seconds, shares, strict=True)],
        "textposition": "auto",
        "customdata": shares,
        "hovertemplate": "%{y}: %{x:.3f} s, %{customdata:.1%} of the backlog<extra></extra>",
    }
    return {"data": [bars], "layout": layout}


def path_contribution_figure(result: PathBlame, subinterval: float) -> dict[str, Any]:
    """The critical path of a path-aware estimate: one stacked bar per node, in path
    order from the top, its operators' shares (seconds; negative ones left of 0) and the
    hop delay crossed into it; the bars add up to the estimate."""
    labels = []
    for stage in result.stages:
        if stage.busy_since is None:
            labels.append(f"{stage.resource}<br>(no wait)")
        else:
            last = stage.busy_since if stage.busy_until is None else stage.busy_until
            labels.append(
                f"{stage.resource}<br>t {stage.busy_since * subinterval:g}\u2013"
                f"{(last + 1) * subinterval:g} s"
            )
    excess = sum(s.ce_seconds for s in result.stages)
    operators = list(dict.fromkeys(op for s in result.stages for op in s.contributions))
    bars: list[dict[str, Any]] = []
    for op in operators:
        values = [s.contributions.get(op) for s in result.stages]
        bars.append(
            {
                "type": "bar",
                "orientation": "h",
                "name": op,
                "x": values,
                "y": labels,
                "marker": {
                    "color": [
                        DRAINED if (v or 0) < 0 else share_color((v or 0) / excess if excess else 0)
                        for v in values
                    ],
                    "line": {"color": "#999", "width": 1},
                },
                "text": [None if v is None else f"{op} {v:.3f} s" for v in values],
                "textposition": "inside",
                "insidetextanchor": "middle",
                "hovertemplate": f"{op} on %{{y}}: %{{x:+.3f}} s<extra></extra>",
            }
        )
    delays = [s.delay_seconds or None for s in result.stages]
    if any(delays):
        bars.append(
            {
                "type": "bar",
                "orientation": "h",
                "name": "hop delay",
                "x": delays,
                "y": labels,
                "marker": {"color": "#bbbbbb", "pattern": {"shape": "/"}},
                "hovertemplate": "delay into %{y}: %{x:.3f} s<extra></extra>",
            }
        )
    layout = plain_layout(
        f"Critical path: {result.estimate:.3f} s, each node's share per operator",
        "share of the path-aware estimate (s)",
        "",
        "blame",
    )
    layout.update(
        {
            "barmode": "relative",
            "margin": {"l": 95, "r": 20, "t": 45, "b": 45},
            "height": max(240, 130 + 60 * len(labels)),
            "showlegend": False,
            "hovermode": "closest",
        }
    )
    # horizontal bars stack categories from the bottom: list them last node first
    layout["yaxis"].update(
        {"type": "category", "categoryorder": "array", "categoryarray": labels[::-1]}
    )
    return {"data": bars, "layout": layout}
