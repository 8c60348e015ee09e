"""``python -m dataclaw.envcraft.archetypes.temporal_scheduling <command>``: the environment CLI."""

from dataclaw.envcraft.archetypes.temporal_scheduling import ENVIRONMENT
from dataclaw.envcraft.runtime.cli import main

raise SystemExit(main(ENVIRONMENT))
