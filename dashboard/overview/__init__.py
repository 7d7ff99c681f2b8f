"""The Overview page: the run's latency over time, its KPIs, and the cards that explain,
verify and alert on it."""
