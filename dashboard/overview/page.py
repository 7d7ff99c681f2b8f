"""Overview: the run's latency (estimated, predicted, measured) over the chosen range,
its KPIs, and the cards that explain, verify and alert on it."""

from __future__ import annotations

from dashboard.overview import callbacks, layout
from dashboard.shell.callbacks import Page

PAGE = Page(
    "dashboard.overview",
    path="/",
    name="Overview",
    order=0,
    layout=layout.layout,
    callbacks=[callbacks.callbacks],
)
