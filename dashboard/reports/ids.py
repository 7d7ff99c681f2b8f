"""Component ids of the Reports page (layout, callbacks and browser tests share them)."""

from __future__ import annotations

# reports
RP_TABLE = "rp-table"
RP_OBJ_QUERY = "rp-objective-query"
RP_OBJ_VALUE = "rp-objective-value"
RP_OBJ_SAVE = "rp-objective-save"
RP_OBJ_SAVED = "rp-objective-saved"
RP_VIOLATIONS = "rp-violations"
RP_FIGURE = "rp-figure"
RP_CSV = "rp-csv"
RP_DOWNLOAD = "rp-download"
RP_PRINT = "rp-print"
RP_MESSAGE = "rp-message"
RP_THREADS = "rp-threads"
