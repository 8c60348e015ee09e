"""``python -m dataclaw.envcraft.archetypes.workflow_orchestration <command>``: the environment CLI."""

from dataclaw.envcraft.archetypes.workflow_orchestration import ENVIRONMENT
from dataclaw.envcraft.runtime.cli import main

raise SystemExit(main(ENVIRONMENT))
