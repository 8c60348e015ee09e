"""``python -m dataclaw.envcraft.archetypes.state_machine <command>``: the environment CLI."""

from dataclaw.envcraft.archetypes.state_machine import ENVIRONMENT
from dataclaw.envcraft.runtime.cli import main

raise SystemExit(main(ENVIRONMENT))
