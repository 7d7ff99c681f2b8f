"""Component ids of the shell every page shares (top bar, URL, message)."""

from __future__ import annotations

# app shell
RUN = "run-select"
RUN_REFRESH = "run-refresh"
ESTIMATOR = "estimator-select"
MESSAGE = "page-message"
URL = "shell-url"
NAV_LINK = "nav-link"  # pattern-matching ids {"type": NAV_LINK, "index": page path}

# the time picker every page shares (top bar)
TIME_RANGE = "time-range"  # store: {"preset"} or {"from", "to"} (s since the start)
TIME_PRESET = "time-preset"
TIME_FROM = "time-from"
TIME_TO = "time-to"
TIME_APPLY = "time-apply"
TIME_MESSAGE = "time-message"
CLOCK = "time-clock"
ZONE = "time-zone"  # store: the browser's IANA time zone (the "local" clock)
