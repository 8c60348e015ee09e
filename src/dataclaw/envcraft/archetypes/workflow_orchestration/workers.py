"""The worker registry (idle ↔ busy, with busy-state protection) and in-band inter-worker messaging."""

from __future__ import annotations

import math
import re
from typing import Any, Literal

from dataclaw.envcraft.runtime import (
    EnvError,
    ErrorCategory,
    echo,
    invalid_argument,
    invalid_reference,
    missing_field,
    now,
    tool,
)

WORKER_ID_RE = re.compile(r"^[a-z][a-z0-9-]{2,39}$")
TOPIC_RE = re.compile(r"^[a-z][a-z0-9_]{1,39}$")
MAX_PAYLOAD_KEYS = 10


def worker_of(session: dict[str, Any], worker_id: str) -> dict[str, Any]:
    workers = session["workers"]
    if worker_id not in workers:
        raise invalid_reference("worker", worker_id, sorted(workers))
    return workers[worker_id]


def _capability_vocabulary(session: dict[str, Any]) -> set[str]:
    caps = {c for a in session["action_catalog"].values() for c in a["requires"]}
    return caps | {c for w in session["workers"].values() for c in w["capabilities"]}


def _view(session: dict[str, Any], w: dict[str, Any]) -> dict[str, Any]:
    inbox = [m for m in session["messages"] if m["to_worker"] == w["worker_id"]]
    return {**w, "inbox": inbox}


@tool("read", returns=["workers", "count"])
def list_workers(
    session: dict,
    capability: str | None = None,
    status: Literal["idle", "busy"] | None = None,
    role: str | None = None,
) -> dict:
    """List registered workers with role, capability tags, idle/busy status, current assignment and inbox.

    Args:
        capability: only workers carrying this capability tag (e.g. "test", "production").
        status: only idle or only busy workers.
        role: only workers with this role (e.g. "ci_runner", "release_manager").
    """
    rows = [
        _view(session, w)
        for w in session["workers"].values()
        if (capability is None or capability in w["capabilities"])
        and (status is None or w["status"] == status)
        and (role is None or w["role"] == role)
    ]
    rows.sort(key=lambda w: w["worker_id"])
    return {"workers": rows, "count": len(rows)}


@tool("write", fields=["workers", "deregistered"], returns=["worker"])
def register_worker(session: dict, worker_id: str, name: str, role: str, capabilities: list[str]) -> dict:
    """Register a worker so stages can be assigned to it; it starts idle.

    Args:
        worker_id: a new id, 3-40 lowercase letters, digits or '-' (e.g. "ci-runner-x86-03").
        name: a human-readable description of the worker.
        role: a known role: ci_runner, security_scanner, deployer, qa, service_worker, release_manager.
        capabilities: capability tags the worker offers (e.g. ["build", "test", "linux-x86"]).
    """
    if not WORKER_ID_RE.match(worker_id):
        raise invalid_argument(
            "worker_id", "use 3-40 lowercase letters, digits or '-', starting with a letter"
        )
    if worker_id in session["workers"]:
        raise invalid_argument("worker_id", f"worker {worker_id} is already registered")
    if not 3 <= len(name.strip()) <= 80:
        raise invalid_argument("name", "must be 3 to 80 characters")
    if role not in session["roles"]:
        raise invalid_argument(
            "role", f"{echo(role)} is not a known role; roles: {', '.join(sorted(session['roles']))}"
        )
    if not capabilities:
        raise missing_field("capabilities", "give at least one capability tag")
    vocab = _capability_vocabulary(session)
    unknown = [c for c in capabilities if c not in vocab]
    if unknown:
        raise invalid_argument(
            "capabilities", f"unknown tag {echo(unknown[0])}; known: {', '.join(sorted(vocab))}"
        )
    worker = {
        "worker_id": worker_id,
        "name": name.strip(),
        "role": role,
        "capabilities": sorted(set(capabilities)),
        "status": "idle",
        "assignment": None,
        "registered_at": now(session),
    }
    session["workers"][worker_id] = worker
    session["deregistered"] = [d for d in session["deregistered"] if d["worker_id"] != worker_id]
    return {"worker": worker}


@tool("write", fields=["workers", "deregistered"], returns=["deregistered"])
def deregister_worker(session: dict, worker_id: str) -> dict:
    """Remove an idle worker from the registry. A busy worker (holding a stage assignment) is refused:
    reassign its stage to another worker first.

    Args:
        worker_id: the worker to remove.
    """
    w = worker_of(session, worker_id)
    if w["status"] == "busy":
        a = w["assignment"]
        raise EnvError(
            ErrorCategory.INVALID_TRANSITION,
            f"worker {worker_id} is busy with stage '{a['stage_id']}' of pipeline {a['pipeline_id']}: "
            "reassign that stage to another worker (assign_stage) or roll the pipeline back first.",
            current="busy",
        )
    del session["workers"][worker_id]
    record = {"worker_id": worker_id, "role": w["role"], "at": now(session)}
    session["deregistered"].append(record)
    return {"deregistered": record}


@tool("write", fields=["messages", "counters"], returns=["message"])
def send_message(
    session: dict, from_worker: str, to_worker: str, topic: str, body: str, payload: dict | None = None
) -> dict:
    """Send an in-band message from one worker to another. Payload keys become inputs of stages assigned
    to the recipient (e.g. a release manager sends {"change_ticket": "CHG-..."} to a production deployer).

    Args:
        from_worker: the sending worker's id.
        to_worker: the receiving worker's id.
        topic: a short topic in snake_case, e.g. "approval" or "payment_declined".
        body: the message text (1-500 characters).
        payload: flat key → value data (strings, numbers or booleans), at most 10 keys.
    """
    sender = worker_of(session, from_worker)
    worker_of(session, to_worker)
    if from_worker == to_worker:
        raise invalid_argument("to_worker", "a worker cannot message itself")
    if not TOPIC_RE.match(topic):
        raise invalid_argument("topic", "use 2-40 lowercase letters, digits or '_' (e.g. 'approval')")
    if not 1 <= len(body.strip()) <= 500:
        raise invalid_argument("body", "must be 1 to 500 characters")
    payload = payload or {}
    if len(payload) > MAX_PAYLOAD_KEYS:
        raise invalid_argument("payload", f"at most {MAX_PAYLOAD_KEYS} keys")
    for key, value in payload.items():
        scalar = isinstance(value, str | int | float | bool)
        if not key or not scalar or (isinstance(value, float) and not math.isfinite(value)):
            raise invalid_argument("payload", f"key {echo(key)} needs a string, number or boolean value")
    number = session["counters"]["next_message_number"]
    session["counters"]["next_message_number"] = number + 1
    msg = {
        "message_id": f"M-{number:04d}",
        "from_worker": from_worker,
        "from_role": sender["role"],
        "to_worker": to_worker,
        "topic": topic,
        "body": body.strip(),
        "payload": payload,
        "at": now(session),
    }
    session["messages"].append(msg)
    return {"message": msg}
