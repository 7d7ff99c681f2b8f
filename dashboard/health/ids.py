"""Component ids of the Data health page (layout, callbacks and browser tests share them)."""

from __future__ import annotations

# data health
HL_REFRESH = "hl-refresh"
HL_KPIS = "hl-kpis"
HL_BATCHES = "hl-batches"
HL_REASONS = "hl-reasons"
HL_PENDING = "hl-pending"
HL_ROWS = "hl-rows"
HL_MESSAGE = "hl-message"
HL_FAILED = "hl-failed"
