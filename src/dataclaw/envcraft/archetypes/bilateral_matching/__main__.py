"""``python -m dataclaw.envcraft.archetypes.bilateral_matching <command>``: the environment CLI."""

from dataclaw.envcraft.archetypes.bilateral_matching import ENVIRONMENT
from dataclaw.envcraft.runtime.cli import main

raise SystemExit(main(ENVIRONMENT))
