"""``python -m dataclaw.envcraft.archetypes.transactional_workspace <command>``: the environment CLI."""

from dataclaw.envcraft.archetypes.transactional_workspace import ENVIRONMENT
from dataclaw.envcraft.runtime.cli import main

raise SystemExit(main(ENVIRONMENT))
