"""``python -m dataclaw.envcraft.archetypes.event_triggering <command>``: the environment CLI."""

from dataclaw.envcraft.archetypes.event_triggering import ENVIRONMENT
from dataclaw.envcraft.runtime.cli import main

raise SystemExit(main(ENVIRONMENT))
