"""Component ids of the shell every page shares (top bar, URL, message)."""

from __future__ import annotations

# app shell
RUN = "run-select"
RUN_REFRESH = "run-refresh"
ESTIMATOR = "estimator-select"
MESSAGE = "page-message"
URL = "shell-url"
NAV_LINK = "nav-link"  # pattern-matching ids {"type": NAV_LINK, "index": page path}
