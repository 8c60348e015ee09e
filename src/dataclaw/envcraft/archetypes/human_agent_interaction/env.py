"""The dynamic human-agent interaction environment (EnvCraft B.3 archetype 3)."""

from __future__ import annotations

from typing import Any, ClassVar

from dataclaw.envcraft.archetypes.human_agent_interaction import account, conversation
from dataclaw.envcraft.archetypes.human_agent_interaction.evaluator import EVALUATOR
from dataclaw.envcraft.archetypes.human_agent_interaction.state import DEFAULT_STATE, archived_conversations
from dataclaw.envcraft.runtime import Environment, Evaluator, Scenario, ToolSet


class HumanAgentInteraction(Environment):
    """Broadband customer support with simulated customers: a hidden persona (latent intent, confidence,
    valence and trend, outstanding and confirmed concerns, patience) reacts to the agent's messages through
    a pure keyword analysis and deterministic mood-conditioned replies."""

    name: ClassVar[str] = "human_agent_interaction"
    env_var_prefix: ClassVar[str] = "SUPPORT"
    DEFAULT_STATE: ClassVar[dict[str, Any]] = DEFAULT_STATE
    tools: ClassVar[ToolSet] = ToolSet.from_modules(conversation, account)
    evaluator: ClassVar[Evaluator] = EVALUATOR

    def on_scenario_loaded(self, state: dict[str, Any], scenario: Scenario) -> None:
        """Long-context sessions carry 40 archived conversations (all three layers) as distractors."""
        if state["meta"]["long_context"]:
            for record, history, context in archived_conversations(sorted(state["customers"])):
                cid = record["conversation_id"]
                record["customer_name"] = state["customers"][record["customer_id"]]["name"]
                state["conversations"][cid] = record
                state["histories"][cid] = history
                state["contexts"][cid] = context
