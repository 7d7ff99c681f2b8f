"""The dashboard's Dash-free core: runs and their cache, the report, monitoring,
violations and the time axis. The ``mace`` commands may import it."""
