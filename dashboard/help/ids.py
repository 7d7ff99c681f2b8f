"""Component ids of the Help page (layout, callbacks and browser tests share them)."""

from __future__ import annotations

# help
HELP_TERMS = "help-terms"
HELP_DIAGRAM = "help-ce-diagram"
