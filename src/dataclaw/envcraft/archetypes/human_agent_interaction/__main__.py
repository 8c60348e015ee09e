"""``python -m dataclaw.envcraft.archetypes.human_agent_interaction <command>``: the environment CLI."""

from dataclaw.envcraft.archetypes.human_agent_interaction import ENVIRONMENT
from dataclaw.envcraft.runtime.cli import main

raise SystemExit(main(ENVIRONMENT))
