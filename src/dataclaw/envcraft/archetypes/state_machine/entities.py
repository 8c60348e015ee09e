"""The entity tier: a runtime interpreter that walks each entity through its machine's graph.

A transition request has three outcomes: ``transitioned`` (an edge to the target exists and its guard
holds: exit hooks, state change, visitation history, enter hooks, log), ``blocked_by_guard`` (edges
exist but every guard fails on the entity's data) and ``no_such_transition`` (no edge from the current
state to the target). The last two are ``invalid_transition`` errors that say which result it was and
why. Entering a terminal state completes the entity and blocks every later transition or data change.
"""

from __future__ import annotations

from typing import Any

from dataclaw.envcraft.archetypes.state_machine.guards import (
    MAX_TEXT_CHARS,
    check_name,
    evaluate_guard,
    run_hooks,
    validate_guard,
)
from dataclaw.envcraft.archetypes.state_machine.machines import Trigger, get_machine_or_fail
from dataclaw.envcraft.runtime import (
    EnvError,
    ErrorCategory,
    invalid_argument,
    invalid_reference,
    invalid_transition,
    now,
    tool,
)
from dataclaw.envcraft.runtime.errors import echo

MAX_DATA_FIELDS = 40


def _entity(session: dict[str, Any], entity_id: str) -> dict[str, Any]:
    entities = session["entities"]
    if entity_id not in entities:
        raise invalid_reference("entity", entity_id)
    return entities[entity_id]


def _summary(e: dict[str, Any]) -> dict[str, Any]:
    keys = ("entity_id", "machine_id", "label", "current_state", "completed", "updated_at")
    return {k: e[k] for k in keys}


def _check_data(data: dict[str, Any], where: str) -> None:
    """Payload values are plain JSON scalars (or short lists of them) under names of ≤ 64 characters."""
    for key, value in data.items():
        check_name(key, f"{where} field")
        items = value if isinstance(value, list) else [value]
        if isinstance(value, list) and len(value) > 20:
            raise invalid_argument(where, f"list field {key!r} holds at most 20 items")
        for v in items:
            if isinstance(v, dict | list) or (isinstance(v, str) and len(v) > MAX_TEXT_CHARS):
                raise invalid_argument(
                    where,
                    f"field {key!r} must be text (≤ {MAX_TEXT_CHARS} chars), a number, true/false or null",
                )


def _closed(e: dict[str, Any], requested: str) -> EnvError:
    return invalid_transition(
        "entity",
        e["entity_id"],
        e["current_state"],
        requested,
        "it reached a terminal state and is completed; no further transitions or changes are allowed",
    )


def _log(session: dict[str, Any], kind: str, entry: dict[str, Any]) -> None:
    log = session[kind]
    log.append({"seq": len(log) + 1, "at": now(session), **entry})


@tool("write", fields=["entities", "machines", "hook_log", "transition_log"], returns=["entity"])
def create_entity(
    session: dict, machine_id: str, label: str, data: dict, initial_state: str | None = None
) -> dict:
    """Create an entity (e.g. a loan or lease application) at its machine's initial state; the
    initial state's on-enter hooks run. Its id is the machine's prefix plus a number (e.g. EQL-1001).

    Args:
        machine_id: the machine the entity follows.
        label: a human-readable label, e.g. "Kestrel Bakery – deck oven".
        data: the entity's payload that guards are checked against, e.g. {"paydex": 78}.
        initial_state: which initial state to start in; needed only when the machine has several.
    """
    m = get_machine_or_fail(session, machine_id)
    if not m["initial_states"]:
        raise invalid_argument("machine_id", f"machine '{machine_id}' has no initial state yet; add one")
    start = initial_state if initial_state is not None else m["initial_states"][0]
    if initial_state is None and len(m["initial_states"]) > 1:
        raise invalid_argument("initial_state", f"choose one of {m['initial_states']}")
    if start not in m["initial_states"]:
        raise invalid_argument("initial_state", f"'{start}' is not initial; choose {m['initial_states']}")
    if not label.strip() or len(label) > 120:
        raise invalid_argument("label", "needs 1-120 characters")
    if len(data) > MAX_DATA_FIELDS:
        raise invalid_argument("data", f"at most {MAX_DATA_FIELDS} fields")
    _check_data(data, "data")
    eid = f"{m['entity_prefix']}-{m['next_entity_number']}"
    at = now(session)
    entity = {
        "entity_id": eid,
        "machine_id": machine_id,
        "label": label.strip(),
        "data": dict(data),
        "current_state": start,
        "completed": False,
        "history": [{"state": start, "at": at, "via": None}],
        "notifications": [],
        "created_at": at,
        "updated_at": at,
    }
    m["next_entity_number"] += 1
    session["entities"][eid] = entity
    for line in run_hooks(entity, m["states"][start]["on_enter"], at):
        _log(session, "hook_log", {"entity_id": eid, "state": start, "phase": "on_enter", "did": line})
    return {"entity": entity}


@tool("write", fields=["entities"], returns=["entity"])
def update_entity_data(session: dict, entity_id: str, fields: dict) -> dict:
    """Set fields of an entity's data payload (e.g. after verifying documents); a null value removes
    the field. Completed entities cannot change.

    Args:
        entity_id: the entity, e.g. "LN-1004".
        fields: field → new value, e.g. {"income_verified": true}.
    """
    e = _entity(session, entity_id)
    if e["completed"]:
        raise _closed(e, e["current_state"])
    if not fields:
        raise invalid_argument("fields", "give at least one field to change")
    _check_data(fields, "fields")
    merged = {**e["data"], **fields}
    merged = {k: v for k, v in merged.items() if v is not None}
    if len(merged) > MAX_DATA_FIELDS:
        raise invalid_argument("fields", f"an entity holds at most {MAX_DATA_FIELDS} fields")
    e["data"] = merged
    e["updated_at"] = now(session)
    return {"entity": _summary(e) | {"data": e["data"]}}


def _edges(m: dict[str, Any], source: str, target: str, trigger: str | None) -> list[dict[str, Any]]:
    return [
        t
        for t in m["transitions"]
        if t["source"] == source and t["target"] == target and trigger in (None, t["trigger"])
    ]


@tool("write", fields=["entities", "hook_log", "transition_log"], returns=["result", "entity"])
def transition_entity(session: dict, entity_id: str, target: str, trigger: Trigger | None = None) -> dict:
    """Move an entity to a target state. The result is 'transitioned' when an edge from its current
    state to the target exists and its guard holds; otherwise an invalid_transition error says
    'blocked_by_guard' (with the failed checks) or 'no_such_transition' (with the reachable targets).

    Args:
        entity_id: the entity to move, e.g. "LN-1003".
        target: the state to move it to.
        trigger: only use edges with this trigger mode (default: any edge to the target).
    """
    e = _entity(session, entity_id)
    m = session["machines"][e["machine_id"]]
    current = e["current_state"]
    if e["completed"]:
        raise _closed(e, target)
    edges = _edges(m, current, target, trigger)
    if not edges:
        reachable = sorted({t["target"] for t in m["transitions"] if t["source"] == current})
        raise EnvError(
            ErrorCategory.INVALID_TRANSITION,
            f"no_such_transition: entity {entity_id} is '{current}' and machine '{m['machine_id']}' has no "
            f"edge '{current}' → {echo(target)}"
            + (f" with trigger '{trigger}'" if trigger else "")
            + f". Reachable from '{current}': {', '.join(reachable) or 'nothing'}.",
            result="no_such_transition",
            current=current,
            requested=target,
        )
    failed = {t["transition_id"]: evaluate_guard(t["guard"], e["data"]) for t in edges}
    passing = [t for t in edges if not failed[t["transition_id"]]]
    if not passing:
        why = "; ".join(f"{tid}: " + ", ".join(checks) for tid, checks in failed.items())
        raise EnvError(
            ErrorCategory.INVALID_TRANSITION,
            f"blocked_by_guard: entity {entity_id} cannot move '{current}' → '{target}'; "
            f"failed checks: {why}.",
            result="blocked_by_guard",
            current=current,
            requested=target,
            failed_checks=failed,
        )
    edge = passing[0]
    at = now(session)
    hooks = [("on_exit", current, line) for line in run_hooks(e, m["states"][current]["on_exit"], at)]
    e["current_state"] = target
    e["history"].append({"state": target, "at": at, "via": edge["transition_id"]})
    hooks += [("on_enter", target, line) for line in run_hooks(e, m["states"][target]["on_enter"], at)]
    e["completed"] = target in m["terminal_states"]
    e["updated_at"] = at
    for phase, state, line in hooks:
        _log(session, "hook_log", {"entity_id": entity_id, "state": state, "phase": phase, "did": line})
    _log(
        session,
        "transition_log",
        {
            "entity_id": entity_id,
            "machine_id": m["machine_id"],
            "transition_id": edge["transition_id"],
            "from": current,
            "to": target,
            "trigger": edge["trigger"],
        },
    )
    return {
        "result": "transitioned",
        "entity": _summary(e),
        "via": edge["transition_id"],
        "hooks_run": [line for _, _, line in hooks],
    }


@tool("read", returns=["entity_id", "current_state", "targets"])
def available_transitions(session: dict, entity_id: str) -> dict:
    """List the edges leaving an entity's current state and whether each guard holds on its data now
    (with the failed checks when it does not). Completed entities have none.

    Args:
        entity_id: the entity, e.g. "LN-1006".
    """
    e = _entity(session, entity_id)
    m = session["machines"][e["machine_id"]]
    targets = []
    if not e["completed"]:
        for t in m["transitions"]:
            if t["source"] == e["current_state"]:
                failed = evaluate_guard(t["guard"], e["data"])
                targets.append(
                    {
                        "transition_id": t["transition_id"],
                        "target": t["target"],
                        "trigger": t["trigger"],
                        "guard": t["guard"],
                        "allowed": not failed,
                        "failed_checks": failed,
                    }
                )
    return {
        "entity_id": entity_id,
        "current_state": e["current_state"],
        "completed": e["completed"],
        "targets": targets,
    }


@tool("read", returns=["entity"])
def get_entity(session: dict, entity_id: str) -> dict:
    """Show one entity: data payload, current state, completion, visitation history, notifications.

    Args:
        entity_id: the entity, e.g. "LN-1009".
    """
    return {"entity": _entity(session, entity_id)}


@tool("read", returns=["entities", "count"])
def list_entities(
    session: dict,
    machine_id: str | None = None,
    state: str | None = None,
    completed: bool | None = None,
    where: dict | None = None,
    limit: int = 50,
) -> dict:
    """List entities, filtered by machine, current state, completion and a data filter written like
    a guard (e.g. {"credit_score": {"gte": 680}}).

    Args:
        machine_id: only entities of this machine.
        state: only entities currently in this state.
        completed: only completed (true) or open (false) entities.
        where: a guard-style filter over the entity data; entities missing a field do not match.
        limit: at most this many entities (1-200).
    """
    if machine_id is not None:
        get_machine_or_fail(session, machine_id)
    if not 1 <= limit <= 200:
        raise invalid_argument("limit", "must be between 1 and 200")
    flt = validate_guard(where, "where") if where is not None else None
    rows = [
        _summary(e) | {"data": e["data"]}
        for _, e in sorted(session["entities"].items())
        if machine_id in (None, e["machine_id"])
        and state in (None, e["current_state"])
        and completed in (None, e["completed"])
        and (flt is None or not evaluate_guard(flt, e["data"]))
    ]
    return {"entities": rows[:limit], "count": len(rows)}


@tool("read", returns=["entries", "count"])
def list_transition_log(
    session: dict,
    entity_id: str | None = None,
    machine_id: str | None = None,
    to_state: str | None = None,
    include_hooks: bool = False,
    limit: int = 50,
) -> dict:
    """Show the log of transitions made in this session (newest last), filtered by entity, machine or
    target state; optionally with the hooks those transitions ran.

    Args:
        entity_id: only transitions of this entity.
        machine_id: only transitions within this machine.
        to_state: only transitions into this state.
        include_hooks: also return the hook log for the same entities.
        limit: at most this many entries (1-200).
    """
    if not 1 <= limit <= 200:
        raise invalid_argument("limit", "must be between 1 and 200")
    rows = [
        t
        for t in session["transition_log"]
        if entity_id in (None, t["entity_id"])
        and machine_id in (None, t["machine_id"])
        and to_state in (None, t["to"])
    ]
    out: dict[str, Any] = {"entries": rows[-limit:], "count": len(rows)}
    if include_hooks:
        ids = {t["entity_id"] for t in rows}
        hooks = [h for h in session["hook_log"] if h["entity_id"] in ids or entity_id == h["entity_id"]]
        out["hooks"] = hooks[-limit:]
    return out
