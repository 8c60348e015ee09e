"""The bilateral-matching environment (EnvCraft B.3 archetype 7: two-sided market decisions)."""

from __future__ import annotations

from typing import Any, ClassVar

from dataclaw.envcraft.archetypes.bilateral_matching import matches, pools
from dataclaw.envcraft.archetypes.bilateral_matching.evaluator import EVALUATOR
from dataclaw.envcraft.archetypes.bilateral_matching.state import DEFAULT_STATE, archived_resumes
from dataclaw.envcraft.runtime import Environment, Evaluator, Scenario, ToolSet


class BilateralMatchingEnv(Environment):
    """A configurable scoring engine: user-declared criteria vectors, a type-dispatched per-attribute
    calculator composed into a weighted sum, and match records with an explicit status machine."""

    name: ClassVar[str] = "bilateral_matching"
    env_var_prefix: ClassVar[str] = "MATCH"
    DEFAULT_STATE: ClassVar[dict[str, Any]] = DEFAULT_STATE
    tools: ClassVar[ToolSet] = ToolSet.from_modules(pools, matches)
    evaluator: ClassVar[Evaluator] = EVALUATOR

    def on_scenario_loaded(self, state: dict[str, Any], scenario: Scenario) -> None:
        """Long-context sessions carry 60 archived resumes in the directory as distractors."""
        if state["meta"]["long_context"]:
            state["directory"]["supply"] = {**archived_resumes(), **state["directory"]["supply"]}
