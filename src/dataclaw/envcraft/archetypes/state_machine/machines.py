"""The machine tier: declarative definition of finite state machines (pure graphs with labelled edges).

A machine is named states (each with on-enter/on-exit hooks), a set of initial and a set of terminal
states, and a transition table of edges ``{source, target, trigger, guard}``. Definitions only grow:
states and edges are added, never silently rewritten, so entities already walking the graph stay valid.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from dataclaw.envcraft.archetypes.state_machine.guards import check_name, validate_guard, validate_hooks
from dataclaw.envcraft.runtime import EnvError, ErrorCategory, invalid_argument, invalid_reference, now, tool
from dataclaw.envcraft.runtime.errors import echo

Trigger = Literal["manual", "automatic", "external_event", "timer"]  # = state.TRIGGER_MODES
_ID_RE = re.compile(r"^[a-z][a-z0-9_]{1,39}$")
_PREFIX_RE = re.compile(r"^[A-Z]{2,5}$")
MAX_STATES = 40
MAX_TRANSITIONS = 120


def get_machine_or_fail(session: dict[str, Any], machine_id: str) -> dict[str, Any]:
    machines = session["machines"]
    if machine_id not in machines:
        raise invalid_reference("machine", machine_id, sorted(machines))
    return machines[machine_id]


def _summary(m: dict[str, Any]) -> dict[str, Any]:
    return {
        "machine_id": m["machine_id"],
        "name": m["name"],
        "states": len(m["states"]),
        "transitions": len(m["transitions"]),
        "initial_states": m["initial_states"],
        "terminal_states": m["terminal_states"],
    }


@tool("read", returns=["machines"])
def list_machines(session: dict) -> dict:
    """List the declared state machines with their size and initial/terminal states."""
    machines = session["machines"]
    return {"machines": [_summary(machines[k]) for k in sorted(machines)]}


@tool("read", returns=["machine"])
def get_machine(session: dict, machine_id: str) -> dict:
    """Show a machine's full definition: states with hooks, initial and terminal sets, and every
    transition edge (id, source, target, trigger mode, guard).

    Args:
        machine_id: the machine, e.g. "consumer_loan".
    """
    return {"machine": get_machine_or_fail(session, machine_id)}


@tool("write", fields=["machines"], returns=["machine"])
def create_machine(
    session: dict, machine_id: str, name: str, entity_prefix: str, description: str = ""
) -> dict:
    """Declare a new, empty state machine; add its states and transitions next.

    Args:
        machine_id: new id, lowercase letters, digits and underscores (2-40 chars), e.g. "equipment_lease".
        name: human-readable name.
        entity_prefix: 2-5 capital letters for the ids of its entities, e.g. "EQL" gives EQL-1001, EQL-1002.
        description: what the machine models and which policy its guards encode.
    """
    if not _ID_RE.match(machine_id):
        raise invalid_argument("machine_id", f"{echo(machine_id)} must be 2-40 lowercase letters/digits/_")
    if machine_id in session["machines"]:
        raise EnvError(ErrorCategory.INVALID_ARGUMENT, f"machine '{machine_id}' already exists.")
    if not _PREFIX_RE.match(entity_prefix):
        raise invalid_argument("entity_prefix", f"{echo(entity_prefix)} must be 2-5 capital letters")
    used = {m["entity_prefix"] for m in session["machines"].values()}
    if entity_prefix in used:
        raise invalid_argument("entity_prefix", f"'{entity_prefix}' is already used by another machine")
    if not name.strip() or len(name) > 120 or len(description) > 1000:
        raise invalid_argument("name", "needs 1-120 characters (description at most 1000)")
    machine = {
        "machine_id": machine_id,
        "name": name.strip(),
        "description": description.strip(),
        "entity_prefix": entity_prefix,
        "next_entity_number": 1001,
        "created_at": now(session),
        "initial_states": [],
        "terminal_states": [],
        "states": {},
        "transitions": [],
    }
    session["machines"][machine_id] = machine
    return {"machine": machine}


@tool("write", fields=["machines"], returns=["state", "machine"])
def add_state(
    session: dict,
    machine_id: str,
    state: str,
    description: str = "",
    initial: bool = False,
    terminal: bool = False,
    on_enter: list[dict] | None = None,
    on_exit: list[dict] | None = None,
) -> dict:
    """Add a named state to a machine, optionally initial and/or terminal, with hooks run when an
    entity enters or leaves it. Hook objects: {"action": "stamp", "field": F} (write the current time
    into payload field F), {"action": "set_field", "field": F, "value": V},
    {"action": "notify", "recipient": R, "message": M}.

    Args:
        machine_id: the machine to extend.
        state: the new state's name, unique within the machine (e.g. "credit_review").
        description: what the state means.
        initial: true if new entities may start here.
        terminal: true if entering it completes the entity (no further transitions).
        on_enter: hooks run, in order, when an entity enters this state.
        on_exit: hooks run, in order, when an entity leaves this state.
    """
    m = get_machine_or_fail(session, machine_id)
    check_name(state, "state")
    if state in m["states"]:
        raise invalid_argument("state", f"'{state}' already exists in machine '{machine_id}'")
    if len(m["states"]) >= MAX_STATES:
        raise invalid_argument("state", f"a machine holds at most {MAX_STATES} states")
    if initial and terminal:
        raise invalid_argument("terminal", "a state cannot be both initial and terminal")
    if len(description) > 300:
        raise invalid_argument("description", "at most 300 characters")
    enter = validate_hooks(on_enter or [], "on_enter")
    leave = validate_hooks(on_exit or [], "on_exit")
    m["states"][state] = {"description": description.strip(), "on_enter": enter, "on_exit": leave}
    if initial:
        m["initial_states"].append(state)
    if terminal:
        m["terminal_states"].append(state)
    return {"state": {"name": state, **m["states"][state]}, "machine": _summary(m)}


@tool("write", fields=["machines"], returns=["transition"])
def add_transition(
    session: dict,
    machine_id: str,
    source: str,
    target: str,
    trigger: Trigger = "manual",
    guard: dict | None = None,
) -> dict:
    """Add a guarded edge source → target to a machine's transition table. The guard is
    {field: {op: value}} over the entity's data; every check must hold (AND). Operators: eq, ne, gt,
    gte, lt, lte, in, not_in. A missing field fails its checks (fail-closed).

    Args:
        machine_id: the machine to extend.
        source: the state the edge leaves (must exist and not be terminal).
        target: the state the edge enters (must exist).
        trigger: how the move is meant to happen: manual, automatic, external_event or timer.
        guard: conditions on entity data, e.g. {"paydex": {"gte": 70}, "equipment_cost": {"lte": 250000}}.
    """
    m = get_machine_or_fail(session, machine_id)
    for role, name in (("source", source), ("target", target)):
        if name not in m["states"]:
            raise invalid_reference(f"{role} state", name, sorted(m["states"]))
    if source in m["terminal_states"]:
        raise invalid_argument("source", f"'{source}' is terminal: no edge may leave it")
    if source == target:
        raise invalid_argument("target", "a transition must change the state")
    checked = validate_guard(guard or {}, "guard")
    for edge in m["transitions"]:
        if (edge["source"], edge["target"], edge["trigger"], edge["guard"]) == (
            source,
            target,
            trigger,
            checked,
        ):
            raise invalid_argument("guard", f"the same edge already exists as {edge['transition_id']}")
    if len(m["transitions"]) >= MAX_TRANSITIONS:
        raise invalid_argument("machine_id", f"a machine holds at most {MAX_TRANSITIONS} transitions")
    edge = {
        "transition_id": f"T{len(m['transitions']) + 1}",
        "source": source,
        "target": target,
        "trigger": trigger,
        "guard": checked,
    }
    m["transitions"].append(edge)
    return {"transition": edge}
