"""The pipeline layer: the action catalogue, DAG definition (validated at definition time), stage-to-worker
assignment with capability checks, and result collection."""

from __future__ import annotations

import math
from typing import Any, Literal

from dataclaw.envcraft.archetypes.workflow_orchestration.engine import (
    missing_capabilities,
    release,
    require_open,
    run_blocker,
    stage_of,
    topological_order,
    validate_stages,
)
from dataclaw.envcraft.archetypes.workflow_orchestration.workers import worker_of
from dataclaw.envcraft.runtime import (
    EnvError,
    ErrorCategory,
    echo,
    invalid_argument,
    invalid_reference,
    invalid_transition,
    now,
    tool,
)

MAX_PARAMETERS = 10


def pipeline_of(session: dict[str, Any], pipeline_id: str) -> dict[str, Any]:
    pipelines = session["pipelines"]
    if pipeline_id not in pipelines:
        raise invalid_reference("pipeline", pipeline_id, sorted(pipelines))
    return pipelines[pipeline_id]


def stage_in(pipeline: dict[str, Any], stage_id: str) -> dict[str, Any]:
    stage = stage_of(pipeline, stage_id)
    if stage is None:
        raise invalid_reference(
            f"{pipeline['pipeline_id']} stage", stage_id, [s["stage_id"] for s in pipeline["stages"]]
        )
    return stage


@tool("read", returns=["actions"])
def list_actions(session: dict) -> dict:
    """Show the action catalogue: per action label the capability tags a worker needs, the inputs it
    consumes, the outputs it produces and its compensating action (used by rollback)."""
    return {"actions": session["action_catalog"]}


@tool("write", fields=["pipelines", "counters"], returns=["pipeline"])
def define_pipeline(
    session: dict,
    name: str,
    mode: Literal["sequential", "parallel"],
    stages: list[dict],
    parameters: dict | None = None,
) -> dict:
    """Define a pipeline as an ordered array of stages forming a DAG (unknown dependencies and cycles are
    refused). Stages start pending and unassigned.

    Args:
        name: a descriptive name, 3-80 characters.
        mode: sequential (run_pipeline walks stages in array order, halting on an abort) or parallel
            (run_pipeline executes every ready stage at once, one wave per call).
        stages: list of {"stage_id", "action", "depends_on": [stage ids],
            "on_failure": "abort"|"skip"|"retry", "max_retries": retry cap (retry policy only, 1-5)}.
        parameters: flat key → value inputs available to every stage (e.g. {"order_id": "ORD-1"}).
    """
    if not 3 <= len(name.strip()) <= 80:
        raise invalid_argument("name", "must be 3 to 80 characters")
    parameters = parameters or {}
    if len(parameters) > MAX_PARAMETERS:
        raise invalid_argument("parameters", f"at most {MAX_PARAMETERS} keys")
    for key, value in parameters.items():
        ok = isinstance(value, str | int | float | bool) and not (
            isinstance(value, float) and not math.isfinite(value)
        )
        if not key or not ok:
            raise invalid_argument("parameters", f"key {echo(key)} needs a string, number or boolean value")
    checked = validate_stages(stages, session["action_catalog"])
    number = session["counters"]["next_pipeline_number"]
    pid = f"P-{number}"
    session["counters"]["next_pipeline_number"] = number + 1
    pipeline = {
        "pipeline_id": pid,
        "name": name.strip(),
        "mode": mode,
        "status": "defined",
        "parameters": parameters,
        "origin": "agent",
        "defined_at": now(session),
        "stages": checked,
        "failure": None,
        "rollback": None,
    }
    session["pipelines"][pid] = pipeline
    return {"pipeline": pipeline, "topological_order": topological_order(checked)}


@tool("write", fields=["pipelines", "workers"], returns=["stage"])
def assign_stage(session: dict, pipeline_id: str, stage_id: str, worker_id: str) -> dict:
    """Assign a pending stage to an idle worker whose capability tags cover the stage's action. A worker
    holds one assignment at a time (it is busy until the stage finishes); reassigning frees the old worker.

    Args:
        pipeline_id: the pipeline, e.g. "P-101".
        stage_id: the stage to assign.
        worker_id: the idle worker to run it.
    """
    p = pipeline_of(session, pipeline_id)
    stage = stage_in(p, stage_id)
    worker = worker_of(session, worker_id)
    require_open(p, "assign stages")
    if stage["status"] != "pending":
        raise invalid_transition(
            "stage", stage_id, stage["status"], "assigned", "only pending stages can be (re)assigned"
        )
    if stage["worker"] == worker_id:
        raise invalid_argument("worker_id", f"stage '{stage_id}' is already assigned to {worker_id}")
    missing = missing_capabilities(session, worker_id, stage["action"])
    if missing:
        raise invalid_argument(
            "worker_id",
            f"{worker_id} lacks capability {', '.join(missing)} needed by action '{stage['action']}' "
            f"(needs {', '.join(session['action_catalog'][stage['action']]['requires'])})",
        )
    if worker["status"] == "busy":
        a = worker["assignment"]
        raise EnvError(
            ErrorCategory.INVALID_TRANSITION,
            f"worker {worker_id} is busy with stage '{a['stage_id']}' of pipeline {a['pipeline_id']}; "
            "pick an idle worker.",
            current="busy",
        )
    previous = stage["worker"]
    release(session, previous)
    stage["worker"] = worker_id
    worker.update(status="busy", assignment={"pipeline_id": pipeline_id, "stage_id": stage_id})
    return {"stage": stage, "previous_worker": previous}


PipelineStatus = Literal["defined", "running", "completed", "failed", "rolled_back"]


def _overview(p: dict[str, Any]) -> dict[str, Any]:
    counts: dict[str, int] = {}
    for s in p["stages"]:
        counts[s["status"]] = counts.get(s["status"], 0) + 1
    keys = ("pipeline_id", "name", "mode", "status", "parameters", "defined_at")
    return {k: p[k] for k in keys} | {"stage_statuses": counts}


@tool("read", returns=["pipeline", "pipelines"])
def collect_results(
    session: dict, pipeline_id: str | None = None, status: PipelineStatus | None = None
) -> dict:
    """Show one pipeline: status, every stage (worker, status, attempts, retries, last error, result), the
    collected outputs of completed stages, which stages are ready or blocked, and any failure or rollback.
    Without pipeline_id: a one-line overview of every pipeline (newest first).

    Args:
        pipeline_id: the pipeline, e.g. "P-101"; omit it for the overview.
        status: overview only: just pipelines in this status.
    """
    if pipeline_id is None:
        rows = [
            _overview(p) for p in session["pipelines"].values() if status is None or p["status"] == status
        ]
        rows.sort(key=lambda r: int(r["pipeline_id"].split("-")[1]), reverse=True)
        return {"pipelines": rows, "count": len(rows)}
    p = pipeline_of(session, pipeline_id)
    outputs: dict[str, Any] = {}
    readiness = {}
    for s in p["stages"]:
        if s["status"] == "completed":
            outputs.update(s["result"] or {})
        if s["status"] == "pending":
            readiness[s["stage_id"]] = run_blocker(session, p, s) or "ready"
    return {"pipeline": p, "outputs": outputs, "pending_stages": readiness}
