"""Nodes: estimated CE/C heatmap, measured DLTS against capacity, bottleneck over time,
measured utilization against demand, and the hosts the latency objective needs over
time (Mace-based against FUGU's threshold, computed in a background job)."""

from __future__ import annotations

from dashboard.nodes import callbacks, layout
from dashboard.shell.callbacks import Page

PAGE = Page(
    "dashboard.nodes",
    path="/nodes",
    name="Nodes",
    order=1,
    layout=layout.layout,
    callbacks=[callbacks.callbacks],
)
