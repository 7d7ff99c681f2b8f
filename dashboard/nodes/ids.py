"""Component ids of the Nodes page (layout, callbacks and browser tests share them)."""

from __future__ import annotations

# nodes
ND_NODE = "nd-node"
ND_REFRESH = "nd-refresh"
ND_HEATMAP = "nd-ce-heatmap"
ND_DLTS = "nd-dlts-graph"
ND_BOTTLENECK = "nd-bottleneck-graph"
ND_BUSY = "nd-busy-graph"
ND_MESSAGE = "nd-message"
ND_HOSTS = "nd-hosts-graph"
ND_HOSTS_OBJECTIVE = "nd-hosts-objective"
ND_HOSTS_WINDOW = "nd-hosts-window"
ND_HOSTS_CAPTION = "nd-hosts-caption"
ND_HOSTS_CAPACITY = "nd-hosts-capacity"
ND_HOSTS_START = "nd-hosts-start"
ND_HOSTS_CANCEL = "nd-hosts-cancel"
ND_HOSTS_PROGRESS = "nd-hosts-progress"
ND_HOSTS_REQUEST = "nd-hosts-request"
