"""``python -m dataclaw_example_plugins.archetypes.inventory_ledger <command>``: the environment CLI."""

from dataclaw.envcraft.runtime.cli import main

from . import ENVIRONMENT

raise SystemExit(main(ENVIRONMENT))
