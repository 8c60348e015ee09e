"""Distributed workflow orchestration (EnvCraft B.3, archetype 8): CI/CD release pipelines and order
sagas as stage DAGs with capability-checked worker assignment, abort/skip/retry failure policies,
mode-dependent execution and compensating rollback."""

from dataclaw.envcraft.archetypes.workflow_orchestration.env import WorkflowOrchestration

ENVIRONMENT = WorkflowOrchestration

__all__ = ["ENVIRONMENT", "WorkflowOrchestration"]
