"""``python -m mace`` runs the command line."""

from mace.cli import main

raise SystemExit(main())
