"""The Nodes page: per-node backlog, load against capacity, bottleneck, and the hosts
the latency objective needs over time."""
