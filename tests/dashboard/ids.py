"""Every page's component ids under one name, for the browser tests (each feature of the
dashboard keeps its own ``ids`` module)."""

from dashboard.health.ids import *  # noqa: F403
from dashboard.help.ids import *  # noqa: F403
from dashboard.nodes.ids import *  # noqa: F403
from dashboard.overview.ids import *  # noqa: F403
from dashboard.reports.ids import *  # noqa: F403
from dashboard.shell.ids import *  # noqa: F403
from dashboard.whatif.ids import *  # noqa: F403
