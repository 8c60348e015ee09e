"""The temporal-scheduling environment (EnvCraft B.3 archetype 6: competitive time-axis allocation)."""

from __future__ import annotations

from typing import Any, ClassVar

from dataclaw.envcraft.archetypes.temporal_scheduling import calendars, events
from dataclaw.envcraft.archetypes.temporal_scheduling.engine import mark_conflicts
from dataclaw.envcraft.archetypes.temporal_scheduling.evaluator import EVALUATOR
from dataclaw.envcraft.archetypes.temporal_scheduling.state import DEFAULT_STATE, past_events
from dataclaw.envcraft.runtime import Environment, Evaluator, Scenario, ToolSet


class TemporalSchedulingEnv(Environment):
    """A temporal-constraint engine over shared rooms, labs and people: every booking is checked against
    the calendar's working hours and eagerly against every live booking on the same calendar."""

    name: ClassVar[str] = "temporal_scheduling"
    env_var_prefix: ClassVar[str] = "SCHED"
    DEFAULT_STATE: ClassVar[dict[str, Any]] = DEFAULT_STATE
    tools: ClassVar[ToolSet] = ToolSet.from_modules(calendars, events)
    evaluator: ClassVar[Evaluator] = EVALUATOR

    def on_scenario_loaded(self, state: dict[str, Any], scenario: Scenario) -> None:
        """Long-context sessions carry 60 past bookings (March) as distractors."""
        if state["meta"]["long_context"]:
            state["events"] = {**past_events(state), **state["events"]}
            for cid in state["calendars"]:
                mark_conflicts(state, cid)
