"""The execution layer of the orchestration engine: DAG validation, topological order, readiness,
data-driven failures, the failure-policy strategies and the compensating rollback walk.

Pure functions over the session dict (no files, no clock except the session clock); the tool modules
call them after their guards passed.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from typing import Any

from dataclaw.envcraft.runtime import EnvError, ErrorCategory, echo, invalid_argument, now

STAGE_ID_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")
POLICIES = ("abort", "skip", "retry")
MAX_STAGES = 20
MAX_RETRY_CAP = 5
STAGE_KEYS = {"stage_id", "action", "depends_on", "on_failure", "max_retries"}
# a dependency is satisfied once its stage finished without aborting the pipeline
SATISFIED = ("completed", "skipped")
OPEN_PIPELINE = ("defined", "running")


# ---- definition-time validation ------------------------------------------------------------------


def _stage_def(raw: Any, i: int, actions: dict[str, Any]) -> dict[str, Any]:
    """One agent-supplied stage definition, checked field by field."""
    where = f"stages[{i}]"
    if not isinstance(raw, dict):
        raise invalid_argument(where, "each stage must be an object with stage_id, action, depends_on, ...")
    unknown = sorted(set(raw) - STAGE_KEYS)
    if unknown:
        raise invalid_argument(
            where, f"unknown key {echo(unknown[0])}; allowed: {', '.join(sorted(STAGE_KEYS))}"
        )
    sid = raw.get("stage_id")
    if not isinstance(sid, str) or not STAGE_ID_RE.match(sid):
        raise invalid_argument(
            f"{where}.stage_id", "use 1-40 lowercase letters, digits or '-' (e.g. 'charge')"
        )
    action = raw.get("action")
    if not isinstance(action, str) or action not in actions:
        raise invalid_argument(
            f"{where}.action", f"{echo(action)} is not a known action; known: {', '.join(sorted(actions))}"
        )
    deps = raw.get("depends_on", [])
    if not isinstance(deps, list) or not all(isinstance(d, str) for d in deps):
        raise invalid_argument(f"{where}.depends_on", "must be a list of stage ids")
    if len(set(deps)) != len(deps):
        raise invalid_argument(f"{where}.depends_on", "lists a stage twice")
    policy = raw.get("on_failure", "abort")
    if policy not in POLICIES:
        raise invalid_argument(f"{where}.on_failure", f"must be one of {', '.join(POLICIES)}")
    cap = raw.get("max_retries", 1 if policy == "retry" else 0)
    if not isinstance(cap, int) or isinstance(cap, bool) or not 0 <= cap <= MAX_RETRY_CAP:
        raise invalid_argument(f"{where}.max_retries", f"must be an integer from 0 to {MAX_RETRY_CAP}")
    if policy == "retry" and cap < 1:
        raise invalid_argument(f"{where}.max_retries", "a retry-policy stage needs a retry cap of at least 1")
    if policy != "retry" and cap:
        raise invalid_argument(
            f"{where}.max_retries", f"only retry-policy stages retry (policy is '{policy}')"
        )
    return new_stage(sid, action, deps, policy, cap)


def new_stage(sid: str, action: str, deps: list[str], policy: str, cap: int) -> dict[str, Any]:
    """A stage record in its initial (pending, unassigned) state."""
    return {
        "stage_id": sid,
        "action": action,
        "depends_on": list(deps),
        "on_failure": policy,
        "max_retries": cap,
        "retries": 0,
        "awaiting_retry": False,
        "worker": None,
        "status": "pending",
        "history": [],
        "result": None,
        "last_error": None,
    }


def validate_stages(raw: Any, actions: dict[str, Any]) -> list[dict[str, Any]]:
    """Check a stage array: shapes, unique ids, known dependencies, no self-loops, no cycles."""
    if not isinstance(raw, list) or not raw:
        raise invalid_argument("stages", "give a non-empty list of stage objects")
    if len(raw) > MAX_STAGES:
        raise invalid_argument("stages", f"at most {MAX_STAGES} stages per pipeline (got {len(raw)})")
    stages = [_stage_def(s, i, actions) for i, s in enumerate(raw)]
    ids = [s["stage_id"] for s in stages]
    dupes = sorted({x for x in ids if ids.count(x) > 1})
    if dupes:
        raise invalid_argument("stages", f"stage id {echo(dupes[0])} is used twice")
    check_dag(stages)
    return stages


def check_dag(stages: list[dict[str, Any]]) -> list[str]:
    """Unknown dependencies and cycles are refused; returns the topological order."""
    ids = {s["stage_id"] for s in stages}
    for s in stages:
        for d in s["depends_on"]:
            if d == s["stage_id"]:
                raise invalid_argument("stages", f"stage '{d}' depends on itself")
            if d not in ids:
                raise invalid_argument(
                    "stages",
                    f"stage '{s['stage_id']}' depends on unknown stage {echo(d)}; "
                    f"stages: {', '.join(sorted(ids))}",
                )
    order = topological_order(stages)
    if len(order) < len(stages):
        cycle = _find_cycle(stages, set(order))
        raise invalid_argument("stages", "the dependencies form a cycle: " + " → ".join(cycle))
    return order


def topological_order(stages: list[dict[str, Any]]) -> list[str]:
    """Kahn's algorithm, ties broken by array position (deterministic); omits stages on a cycle."""
    position = {s["stage_id"]: i for i, s in enumerate(stages)}
    indegree = {s["stage_id"]: len(s["depends_on"]) for s in stages}
    children: dict[str, list[str]] = {sid: [] for sid in position}
    for s in stages:
        for d in s["depends_on"]:
            children.setdefault(d, []).append(s["stage_id"])
    ready = sorted((sid for sid, n in indegree.items() if n == 0), key=position.__getitem__)
    order: list[str] = []
    while ready:
        sid = ready.pop(0)
        order.append(sid)
        for c in children[sid]:
            indegree[c] -= 1
            if indegree[c] == 0:
                ready.append(c)
        ready.sort(key=position.__getitem__)
    return order


def _find_cycle(stages: list[dict[str, Any]], acyclic: set[str]) -> list[str]:
    deps = {s["stage_id"]: [d for d in s["depends_on"] if d not in acyclic] for s in stages}
    start = next(s["stage_id"] for s in stages if s["stage_id"] not in acyclic)
    path, seen = [start], {start: 0}
    while True:
        nxt = deps[path[-1]][0]
        if nxt in seen:
            return [*path[seen[nxt] :], nxt]
        seen[nxt] = len(path)
        path.append(nxt)


# ---- execution ---------------------------------------------------------------------------------


def stage_of(pipeline: dict[str, Any], stage_id: str) -> dict[str, Any] | None:
    return next((s for s in pipeline["stages"] if s["stage_id"] == stage_id), None)


def ancestors(pipeline: dict[str, Any], stage: dict[str, Any]) -> list[dict[str, Any]]:
    """Every stage ``stage`` transitively depends on, in array order."""
    seen: set[str] = set()
    todo = list(stage["depends_on"])
    while todo:
        sid = todo.pop()
        if sid not in seen:
            seen.add(sid)
            todo += stage_of(pipeline, sid)["depends_on"]
    return [s for s in pipeline["stages"] if s["stage_id"] in seen]


def unmet_dependencies(pipeline: dict[str, Any], stage: dict[str, Any]) -> list[str]:
    return [d for d in stage["depends_on"] if stage_of(pipeline, d)["status"] not in SATISFIED]


def blocker(session: dict[str, Any], pipeline: dict[str, Any], stage: dict[str, Any]) -> str | None:
    """Why ``stage`` cannot start now (None when it can): status, dependencies, worker, capabilities."""
    if pipeline["status"] not in OPEN_PIPELINE:
        return f"pipeline {pipeline['pipeline_id']} is '{pipeline['status']}'"
    if stage["status"] != "pending":
        return f"stage '{stage['stage_id']}' is '{stage['status']}', not pending"
    unmet = unmet_dependencies(pipeline, stage)
    if unmet:
        return f"waiting for {', '.join(unmet)} (dependencies must be completed or skipped)"
    if stage["worker"] is None:
        return f"stage '{stage['stage_id']}' has no worker assigned (use assign_stage)"
    missing = missing_capabilities(session, stage["worker"], stage["action"])
    if missing:
        return f"worker {stage['worker']} lacks capabilities {', '.join(missing)}"
    return None


def run_blocker(session: dict[str, Any], pipeline: dict[str, Any], stage: dict[str, Any]) -> str | None:
    """Why run_pipeline does not start a pending stage now: an awaited explicit retry, or its blocker."""
    if stage["awaiting_retry"]:
        return "awaiting explicit retry (retry_stage)"
    return blocker(session, pipeline, stage)


def missing_capabilities(session: dict[str, Any], worker_id: str, action: str) -> list[str]:
    caps = set(session["workers"][worker_id]["capabilities"])
    return [c for c in session["action_catalog"][action]["requires"] if c not in caps]


def available_inputs(
    session: dict[str, Any], pipeline: dict[str, Any], stage: dict[str, Any]
) -> dict[str, Any]:
    """Pipeline parameters, outputs of completed ancestor stages, and payloads of messages sent to the
    stage's worker. A key with a required sender role (e.g. a change ticket from a release manager)
    counts only when a worker of that role sent it."""
    inputs = dict(pipeline["parameters"])
    for up in ancestors(pipeline, stage):
        if up["status"] == "completed" and up["result"]:
            inputs.update(up["result"])
    sources = session["action_catalog"][stage["action"]].get("input_sources", {})
    for key in sources:
        inputs.pop(key, None)
    for msg in session["messages"]:
        if msg["to_worker"] == stage["worker"]:
            for key, value in msg["payload"].items():
                if sources.get(key) in (None, msg["from_role"]):
                    inputs[key] = value
    return inputs


def failure_reason(
    session: dict[str, Any], pipeline: dict[str, Any], stage: dict[str, Any], worker_attempt: int
) -> str | None:
    """Deterministic, data-driven failure: missing inputs, or a fault in the world's fault table."""
    action = session["action_catalog"][stage["action"]]
    inputs = available_inputs(session, pipeline, stage)
    missing = [k for k in action["inputs"] if k not in inputs]
    if missing:
        return f"missing input(s) {', '.join(missing)}"
    for fault in session["faults"]:
        if fault["action"] != stage["action"] or fault["worker"] not in ("*", stage["worker"]):
            continue
        if any(pipeline["parameters"].get(k) != v for k, v in fault.get("when", {}).items()):
            continue
        if fault["attempts"] == "all" or worker_attempt in fault["attempts"]:
            return fault["reason"]
    return None


def _outputs(
    session: dict[str, Any], pipeline: dict[str, Any], stage: dict[str, Any], attempt: int
) -> dict[str, str]:
    seed = f"{pipeline['pipeline_id']}/{stage['stage_id']}/{attempt}"
    digest = hashlib.sha1(seed.encode()).hexdigest()[:8]
    return {
        k: f"{prefix}{digest}" for k, prefix in session["action_catalog"][stage["action"]]["outputs"].items()
    }


def release(session: dict[str, Any], worker_id: str | None) -> None:
    """Busy → idle (no-op for an unassigned stage or a worker already gone)."""
    w = session["workers"].get(worker_id) if worker_id else None
    if w is not None:
        w["status"], w["assignment"] = "idle", None


def _policy_abort(
    session: dict[str, Any], pipeline: dict[str, Any], stage: dict[str, Any], reason: str
) -> str:
    stage["status"] = "failed"
    pipeline["status"] = "failed"
    pipeline["failure"] = {"stage_id": stage["stage_id"], "reason": reason, "at": now(session)}
    release(session, stage["worker"])
    return "failed"


def _policy_skip(
    session: dict[str, Any], pipeline: dict[str, Any], stage: dict[str, Any], reason: str
) -> str:
    stage["status"] = "skipped"
    release(session, stage["worker"])
    return "skipped"


def _policy_retry(
    session: dict[str, Any], pipeline: dict[str, Any], stage: dict[str, Any], reason: str
) -> str:
    if stage["retries"] >= stage["max_retries"]:
        stage["last_error"] = f"retry cap {stage['max_retries']} exhausted: {reason}"
        return _policy_abort(session, pipeline, stage, stage["last_error"])
    stage["retries"] += 1
    stage["status"] = "pending"
    stage["awaiting_retry"] = True  # re-invoked only explicitly, with retry_stage; the worker stays reserved
    return "retry_scheduled"


POLICY_STRATEGIES: dict[str, Callable[[dict[str, Any], dict[str, Any], dict[str, Any], str], str]] = {
    "abort": _policy_abort,
    "skip": _policy_skip,
    "retry": _policy_retry,
}


def execute(
    session: dict[str, Any], pipeline: dict[str, Any], stage: dict[str, Any], trigger: str
) -> dict[str, Any]:
    """Run one stage whose guards passed: succeed, or hand the failure to the stage's policy strategy."""
    worker = stage["worker"]
    worker_attempt = 1 + sum(1 for h in stage["history"] if h["worker"] == worker)
    attempt = len(stage["history"]) + 1
    if pipeline["status"] == "defined":
        pipeline["status"] = "running"
    reason = failure_reason(session, pipeline, stage, worker_attempt)
    stage["awaiting_retry"] = False
    if reason is None:
        stage["status"] = "completed"
        stage["result"] = _outputs(session, pipeline, stage, attempt)
        stage["last_error"] = None
        release(session, worker)
        outcome = "completed"
    else:
        stage["last_error"] = reason
        outcome = POLICY_STRATEGIES[stage["on_failure"]](session, pipeline, stage, reason)
    entry = {"attempt": attempt, "worker": worker, "outcome": outcome, "at": now(session)}
    if reason:
        entry["reason"] = stage["last_error"]
    stage["history"].append(entry)
    session["execution_log"].append(
        {"pipeline_id": pipeline["pipeline_id"], "stage_id": stage["stage_id"], "trigger": trigger, **entry}
    )
    if pipeline["status"] == "running" and all(s["status"] in SATISFIED for s in pipeline["stages"]):
        pipeline["status"] = "completed"
    out = {"stage_id": stage["stage_id"], "action": stage["action"], **entry}
    if outcome == "completed":
        out["outputs"] = stage["result"]
    if outcome == "retry_scheduled":
        out["retries_left"] = stage["max_retries"] - stage["retries"]
    return out


def require_open(pipeline: dict[str, Any], doing: str) -> None:
    if pipeline["status"] not in OPEN_PIPELINE:
        raise EnvError(
            ErrorCategory.INVALID_TRANSITION,
            f"pipeline {pipeline['pipeline_id']} is '{pipeline['status']}': you cannot {doing} in it "
            "(only defined or running pipelines accept work).",
            current=pipeline["status"],
        )


def rollback(session: dict[str, Any], pipeline: dict[str, Any], reason: str) -> dict[str, Any]:
    """Reverse-topological walk: compensate completed stages, cancel pending ones, free their workers."""
    order = topological_order(pipeline["stages"])
    compensations, untouched = [], []
    for sid in reversed(order):
        stage = stage_of(pipeline, sid)
        if stage["status"] == "completed":
            comp = session["action_catalog"][stage["action"]]["compensation"]
            if comp is None:
                untouched.append(sid)
                continue
            stage["status"] = "compensated"
            compensations.append(
                {
                    "stage_id": sid,
                    "action": comp,
                    "undoes": stage["action"],
                    "worker": stage["worker"],
                    "at": now(session),
                }
            )
        elif stage["status"] == "pending":
            stage["status"] = "cancelled"
            stage["awaiting_retry"] = False
            release(session, stage["worker"])
    pipeline["status"] = "rolled_back"
    pipeline["rollback"] = {
        "reason": reason,
        "at": now(session),
        "compensations": compensations,
        "nothing_to_undo": untouched,
    }
    return pipeline["rollback"]
