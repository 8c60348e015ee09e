"""Dynamic human-agent interaction (EnvCraft B.3, archetype 3): multi-turn broadband support with hidden
customer personas, a patience bound, three-layer conversation state and deterministic replies."""

from dataclaw.envcraft.archetypes.human_agent_interaction.env import HumanAgentInteraction

ENVIRONMENT = HumanAgentInteraction

__all__ = ["ENVIRONMENT", "HumanAgentInteraction"]
