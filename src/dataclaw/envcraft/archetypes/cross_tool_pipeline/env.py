"""The cross-tool data-pipeline environment (EnvCraft B.3 archetype 2)."""

from __future__ import annotations

from typing import Any, ClassVar

from dataclaw.envcraft.archetypes.cross_tool_pipeline import aggregate, ingest, process, render
from dataclaw.envcraft.archetypes.cross_tool_pipeline.evaluator import EVALUATOR
from dataclaw.envcraft.archetypes.cross_tool_pipeline.state import DEFAULT_STATE, long_context_articles
from dataclaw.envcraft.runtime import Environment, Evaluator, Scenario, ToolSet


class CrossToolPipeline(Environment):
    """A media-monitoring desk: a four-phase pipeline (ingest → process → aggregate → render) over news
    articles, podcast and broadcast recordings and open-data tables about a city's transit agency."""

    name: ClassVar[str] = "cross_tool_pipeline"
    env_var_prefix: ClassVar[str] = "PIPELINE"
    DEFAULT_STATE: ClassVar[dict[str, Any]] = DEFAULT_STATE
    tools: ClassVar[ToolSet] = ToolSet.from_modules(ingest, process, aggregate, render)
    evaluator: ClassVar[Evaluator] = EVALUATOR

    def on_scenario_loaded(self, state: dict[str, Any], scenario: Scenario) -> None:
        """Long-context sessions add 60 routine transit articles to the news corpus as search distractors."""
        if state["meta"]["long_context"]:
            state["corpus"]["articles"] += long_context_articles()
