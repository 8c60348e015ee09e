"""``python -m dataclaw.envcraft.archetypes.stream_processing <command>``: the environment CLI."""

from dataclaw.envcraft.archetypes.stream_processing import ENVIRONMENT
from dataclaw.envcraft.runtime.cli import main

raise SystemExit(main(ENVIRONMENT))
