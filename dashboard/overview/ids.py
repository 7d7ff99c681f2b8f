"""Component ids of the Overview page (layout, callbacks and browser tests share them)."""

from __future__ import annotations

# overview
OV_REFRESH = "ov-refresh"
OV_LATENCY = "ov-latency-graph"
OV_KPI_WC = "ov-kpi-wc"
OV_KPI_COVERAGE = "ov-kpi-coverage"
OV_KPI_BOTTLENECK = "ov-kpi-bottleneck"
OV_MESSAGE = "ov-message"
OV_RATE = "ov-refresh-rate"
OV_PAUSE = "ov-pause"
OV_PAUSED = "ov-paused"  # store: whether the automatic refresh is paused
OV_LIVE_STATUS = "ov-live-status"
OV_VIOLATIONS = "ov-violations-table"
OV_VIOLATIONS_NOTE = "ov-violations-note"
OV_EXPLAIN_AT = "ov-explain-at"  # store: {"run", "time"} of the clicked point, or None
OV_EXPLAIN_WORST = "ov-explain-worst"
OV_EXPLAIN_SHOWN = "ov-explain-shown"  # store: what the explanation panel shows (a key)
OV_EXPLAIN_TEXT = "ov-explain-text"
OV_EXPLAIN_NOTE = "ov-explain-note"
OV_EXPLAIN_MESSAGE = "ov-explain-message"
OV_BLAME_BARS = "ov-blame-bars"
OV_BLAME_GRAPH = "ov-blame-graph"
OV_GRAPH_MODE = "ov-graph-mode"  # the operator graph's colour mode
OV_GRAPH_LEGEND = "ov-graph-legend"
OV_GRAPH_FIT = "ov-graph-fit"
OV_BLAME_SOURCES = "ov-blame-sources"
OV_CHANGES_TABLE = "ov-changes-table"
OV_CHANGES_NOTE = "ov-changes-note"
OV_DRIFT_BANNER = "ov-drift-banner"
OV_DRIFT_K = "ov-drift-k"
OV_DRIFT_TABLE = "ov-drift-table"
OV_ERROR_GRAPH = "ov-error-graph"
OV_MODEL_NOTE = "ov-model-note"
OV_ESTIMATE_NOTE = "ov-estimate-note"  # which estimate the page shows, and why
OV_REFIT = "ov-refit-store"  # store: the last refit or reset (the window is in storage)
OV_REFIT_MINUTES = "ov-refit-minutes"
OV_REFIT_APPLY = "ov-refit-apply"
OV_REFIT_RESET = "ov-refit-reset"
OV_REFIT_MESSAGE = "ov-refit-message"
OV_ALERTS = "ov-alerts-table"
OV_ALERTS_NOTE = "ov-alerts-note"
