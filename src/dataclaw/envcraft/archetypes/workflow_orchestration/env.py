"""The workflow-orchestration environment (EnvCraft B.3 archetype 8: distributed workflow orchestration)."""

from __future__ import annotations

from typing import Any, ClassVar

from dataclaw.envcraft.archetypes.workflow_orchestration import execution, pipelines, workers
from dataclaw.envcraft.archetypes.workflow_orchestration.evaluator import EVALUATOR
from dataclaw.envcraft.archetypes.workflow_orchestration.state import DEFAULT_STATE, history_pipelines
from dataclaw.envcraft.runtime import Environment, Evaluator, Scenario, ToolSet


class WorkflowOrchestration(Environment):
    """A two-layer orchestration engine: the pipeline layer defines DAG topology through dependency
    lists; the execution layer enforces dependencies, manages worker states (idle ↔ busy), delegates
    failures to policy strategies (abort | skip | retry) and rolls back in reverse topological order."""

    name: ClassVar[str] = "workflow_orchestration"
    env_var_prefix: ClassVar[str] = "ORCHESTRATOR"
    DEFAULT_STATE: ClassVar[dict[str, Any]] = DEFAULT_STATE
    tools: ClassVar[ToolSet] = ToolSet.from_modules(workers, pipelines, execution)
    evaluator: ClassVar[Evaluator] = EVALUATOR

    def on_scenario_loaded(self, state: dict[str, Any], scenario: Scenario) -> None:
        """Long-context sessions carry 40 finished release pipelines as distractors."""
        if state["meta"]["long_context"]:
            state["pipelines"] = {**history_pipelines(scenario.base_time), **state["pipelines"]}
