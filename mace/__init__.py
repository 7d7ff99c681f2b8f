"""The ``mace`` command line: one console script, subcommands beside the layer they drive."""
