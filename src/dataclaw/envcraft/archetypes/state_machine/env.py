"""The state-machine environment (EnvCraft B.3 archetype 5: constraint-guided FSM)."""

from __future__ import annotations

from typing import Any, ClassVar

from dataclaw.envcraft.archetypes.state_machine import entities, machines
from dataclaw.envcraft.archetypes.state_machine.evaluator import EVALUATOR
from dataclaw.envcraft.archetypes.state_machine.state import DEFAULT_STATE, history_entities
from dataclaw.envcraft.runtime import Environment, Evaluator, Scenario, ToolSet


class StateMachineEnv(Environment):
    """A two-tier declarative engine: machines are pure graphs of named states and guarded, labelled
    edges; entities carry a data payload and are walked through their machine one checked step at a time."""

    name: ClassVar[str] = "state_machine"
    env_var_prefix: ClassVar[str] = "FSM"
    DEFAULT_STATE: ClassVar[dict[str, Any]] = DEFAULT_STATE
    tools: ClassVar[ToolSet] = ToolSet.from_modules(machines, entities)
    evaluator: ClassVar[Evaluator] = EVALUATOR

    def on_scenario_loaded(self, state: dict[str, Any], scenario: Scenario) -> None:
        """Long-context sessions carry 60 completed historical loan applications as distractors."""
        if state["meta"]["long_context"]:
            state["entities"] = {**history_entities(scenario.base_time), **state["entities"]}
