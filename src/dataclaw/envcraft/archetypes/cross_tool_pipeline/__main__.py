"""``python -m dataclaw.envcraft.archetypes.cross_tool_pipeline <command>``: the environment CLI."""

from dataclaw.envcraft.archetypes.cross_tool_pipeline import ENVIRONMENT
from dataclaw.envcraft.runtime.cli import main

raise SystemExit(main(ENVIRONMENT))
