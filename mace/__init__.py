"""The ``mace`` command line: one console script whose subcommands live beside the layer they drive."""
