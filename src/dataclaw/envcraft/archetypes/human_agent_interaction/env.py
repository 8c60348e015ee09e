"""The dynamic human-agent interaction environment (EnvCraft B.3 archetype 3)."""

from __future__ import annotations

from typing import Any, ClassVar

from dataclaw.envcraft.archetypes.human_agent_interaction import account, conversation
from dataclaw.envcraft.archetypes.human_agent_interaction.evaluator import EVALUATOR
from dataclaw.envcraft.archetypes.human_agent_interaction.state import DEFAULT_STATE
from dataclaw.envcraft.runtime import Environment, Evaluator, ToolSet


class HumanAgentInteraction(Environment):
    """Broadband customer support with simulated customers: a hidden persona (latent intent, confidence,
    valence and trend, outstanding and confirmed concerns, patience) reacts to the agent's messages through
    a pure keyword analysis and deterministic mood-conditioned replies."""

    name: ClassVar[str] = "human_agent_interaction"
    env_var_prefix: ClassVar[str] = "SUPPORT"
    DEFAULT_STATE: ClassVar[dict[str, Any]] = DEFAULT_STATE
    tools: ClassVar[ToolSet] = ToolSet.from_modules(conversation, account)
    evaluator: ClassVar[Evaluator] = EVALUATOR
