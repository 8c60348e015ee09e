"""Execution tools: single-stage execution, mode-dependent full-pipeline runs, explicit retry and
rollback with compensation. Guards are checked before anything changes; the engine does the work."""

from __future__ import annotations

from typing import Any

from dataclaw.envcraft.archetypes.workflow_orchestration.engine import (
    OPEN_PIPELINE,
    blocker,
    execute,
    require_open,
    rollback,
    run_blocker,
)
from dataclaw.envcraft.archetypes.workflow_orchestration.pipelines import pipeline_of, stage_in
from dataclaw.envcraft.runtime import EnvError, ErrorCategory, invalid_argument, invalid_transition, tool

FIELDS = ["pipelines", "workers", "execution_log"]


def _startable(session: dict[str, Any], p: dict[str, Any], stage: dict[str, Any]) -> None:
    why = blocker(session, p, stage)
    if why:
        raise EnvError(
            ErrorCategory.INVALID_TRANSITION,
            f"stage '{stage['stage_id']}' of {p['pipeline_id']} cannot run: {why}.",
            current=stage["status"],
        )


@tool("write", fields=FIELDS, returns=["execution", "pipeline_status"])
def execute_stage(session: dict, pipeline_id: str, stage_id: str) -> dict:
    """Execute one pending stage whose dependencies are completed or skipped, on its assigned worker. On
    failure the stage's policy applies: abort fails the pipeline, skip skips the stage, retry puts it back
    to pending for an explicit retry_stage (up to its retry cap).

    Args:
        pipeline_id: the pipeline, e.g. "P-101".
        stage_id: the stage to execute.
    """
    p = pipeline_of(session, pipeline_id)
    stage = stage_in(p, stage_id)
    require_open(p, "execute stages")
    if stage["awaiting_retry"]:
        raise invalid_transition(
            "stage",
            stage_id,
            "pending (awaiting retry)",
            "running",
            "a failed retry-policy stage is re-run with retry_stage",
        )
    _startable(session, p, stage)
    result = execute(session, p, stage, "execute_stage")
    return {"execution": result, "pipeline_status": p["status"]}


@tool("write", fields=FIELDS, returns=["executed", "blocked", "pipeline_status"])
def run_pipeline(session: dict, pipeline_id: str) -> dict:
    """Run a pipeline according to its mode. Sequential: walk the stages in array order once, executing
    each pending stage whose dependencies are satisfied, halting at an abort. Parallel: execute every stage
    that is ready now as one concurrent wave (call again for the next wave). Stages awaiting a retry are
    not re-run here (use retry_stage); unready stages are reported under "blocked".

    Args:
        pipeline_id: the pipeline, e.g. "P-102".
    """
    p = pipeline_of(session, pipeline_id)
    require_open(p, "run stages")
    executed: list[dict[str, Any]] = []
    blocked: list[dict[str, str]] = []
    pending = [s for s in p["stages"] if s["status"] == "pending"]
    if p["mode"] == "parallel":
        wave = []
        for s in pending:
            why = run_blocker(session, p, s)
            (blocked.append({"stage_id": s["stage_id"], "reason": why}) if why else wave.append(s))
        executed = [execute(session, p, s, "run_pipeline") for s in wave]  # all start together
    else:
        for s in pending:
            if p["status"] not in OPEN_PIPELINE:
                break  # an abort halted the run
            why = run_blocker(session, p, s)
            if why:
                blocked.append({"stage_id": s["stage_id"], "reason": why})
                continue
            executed.append(execute(session, p, s, "run_pipeline"))
    return {"executed": executed, "blocked": blocked, "pipeline_status": p["status"]}


@tool("write", fields=FIELDS, returns=["execution", "pipeline_status"])
def retry_stage(session: dict, pipeline_id: str, stage_id: str) -> dict:
    """Re-invoke a retry-policy stage that failed and was reset to pending (its retry counter was already
    incremented). You may reassign it to another worker first. Failing again past the cap aborts the pipeline.

    Args:
        pipeline_id: the pipeline, e.g. "P-101".
        stage_id: the stage awaiting a retry.
    """
    p = pipeline_of(session, pipeline_id)
    stage = stage_in(p, stage_id)
    require_open(p, "retry stages")
    if not stage["awaiting_retry"]:
        why = (
            f"its retry cap {stage['max_retries']} is exhausted"
            if stage["on_failure"] == "retry" and stage["status"] == "failed"
            else "only a failed retry-policy stage reset to pending can be retried"
        )
        raise invalid_transition("stage", stage_id, stage["status"], "retry", why)
    _startable(session, p, stage)
    result = execute(session, p, stage, "retry_stage")
    return {"execution": result, "retries_used": stage["retries"], "pipeline_status": p["status"]}


@tool("write", fields=FIELDS, returns=["rollback", "pipeline_status"])
def rollback_pipeline(session: dict, pipeline_id: str, reason: str) -> dict:
    """Roll a pipeline back: walk its completed stages in reverse topological order invoking each action's
    compensating action (e.g. refund_payment for charge_payment), cancel pending stages and free their
    workers. Allowed for running, failed or completed pipelines; the pipeline ends 'rolled_back'.

    Args:
        pipeline_id: the pipeline to roll back.
        reason: why (recorded with the rollback), at least 5 characters.
    """
    p = pipeline_of(session, pipeline_id)
    if p["status"] not in ("running", "failed", "completed"):
        why = "nothing has run yet" if p["status"] == "defined" else "it was already rolled back"
        raise invalid_transition("pipeline", pipeline_id, p["status"], "rolled_back", why)
    if len(reason.strip()) < 5:
        raise invalid_argument("reason", "say why the pipeline is rolled back (at least 5 characters)")
    result = rollback(session, p, reason.strip())
    return {"rollback": result, "pipeline_status": p["status"]}
