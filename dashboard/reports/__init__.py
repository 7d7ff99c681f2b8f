"""The Reports page: the latency report of a run, its objectives and violations."""
