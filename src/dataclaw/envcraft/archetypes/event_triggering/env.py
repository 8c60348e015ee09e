"""The event-triggering environment (EnvCraft B.3 archetype 4: asynchronous event triggering, ECA)."""

from __future__ import annotations

from typing import Any, ClassVar

from dataclaw.envcraft.archetypes.event_triggering import catalog, engine, rules
from dataclaw.envcraft.archetypes.event_triggering.evaluator import EVALUATOR
from dataclaw.envcraft.archetypes.event_triggering.state import (
    DEFAULT_STATE,
    long_context_history,
    replay_history,
)
from dataclaw.envcraft.runtime import Environment, Evaluator, Scenario, ToolSet


class EventTriggering(Environment):
    """An IFTTT-style automation hub for a cold-chain food distributor: event sources from a fixed taxonomy,
    event-condition-action rules, event injection as the sole trigger, and dual event/action logs."""

    name: ClassVar[str] = "event_triggering"
    env_var_prefix: ClassVar[str] = "AUTOMATION"
    DEFAULT_STATE: ClassVar[dict[str, Any]] = DEFAULT_STATE
    tools: ClassVar[ToolSet] = ToolSet.from_modules(catalog, rules, engine)
    evaluator: ClassVar[Evaluator] = EVALUATOR

    def on_scenario_loaded(self, state: dict[str, Any], scenario: Scenario) -> None:
        """Long-context sessions carry a week of routine events (readings, alerts, payments) before the
        regular history, run through the engine like everything else: distractors in both logs."""
        if state["meta"]["long_context"]:
            replay_history(state, long_context_history())
