"""The transactional-workspace environment (EnvCraft B.3 archetype 1: CRUD & auth)."""

from __future__ import annotations

from typing import Any, ClassVar

from dataclaw.envcraft.archetypes.transactional_workspace import audit, auth, knowledge, tickets
from dataclaw.envcraft.archetypes.transactional_workspace.evaluator import EVALUATOR
from dataclaw.envcraft.archetypes.transactional_workspace.state import DEFAULT_STATE, history_tickets
from dataclaw.envcraft.runtime import Environment, Evaluator, Scenario, ToolSet


class TransactionalWorkspace(Environment):
    """A service-desk ticket workspace: authenticated CRUD over a typed ticket queue with a one-way
    status lifecycle, permission checks, mandatory resolution metadata and an append-only audit log."""

    name: ClassVar[str] = "transactional_workspace"
    env_var_prefix: ClassVar[str] = "WORKSPACE"
    DEFAULT_STATE: ClassVar[dict[str, Any]] = DEFAULT_STATE
    tools: ClassVar[ToolSet] = ToolSet.from_modules(auth, tickets, knowledge, audit)
    evaluator: ClassVar[Evaluator] = EVALUATOR

    def on_scenario_loaded(self, state: dict[str, Any], scenario: Scenario) -> None:
        """Long-context sessions carry 60 closed historical tickets as distractors."""
        if state["meta"]["long_context"]:
            state["tickets"] = {**history_tickets(scenario.base_time), **state["tickets"]}
