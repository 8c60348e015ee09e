"""The repository layer: immutable world data from ``data/`` and the session template built from it.

Only this module reads ``data/``; domain modules see nothing but the session dict (Table 15, rules 3, 10).
World machines go through the same validators as agent-defined ones, so bad world data fails at import.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dataclaw.envcraft.archetypes.state_machine.guards import validate_guard, validate_hooks

DATA = Path(__file__).resolve().parent / "data"
TRIGGER_MODES = ("manual", "automatic", "external_event", "timer")


def _read(name: str) -> Any:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def _machine(raw: dict[str, Any]) -> dict[str, Any]:
    mid = raw["machine_id"]
    states = raw["states"]
    for name, st in states.items():
        validate_hooks(st["on_enter"], f"{mid}.{name}.on_enter")
        validate_hooks(st["on_exit"], f"{mid}.{name}.on_exit")
    for edge in raw["transitions"]:
        assert edge["source"] in states and edge["target"] in states, edge
        assert edge["trigger"] in TRIGGER_MODES, edge
        validate_guard(edge["guard"], f"{mid}.{edge['transition_id']}")
    assert set(raw["initial_states"]) <= set(states) and set(raw["terminal_states"]) <= set(states)
    return raw


def _entity(raw: dict[str, Any], machines: dict[str, Any]) -> dict[str, Any]:
    machine = machines[raw["machine_id"]]
    assert raw["current_state"] in machine["states"], raw["entity_id"]
    history = [{"state": s["state"], "at": s["at"], "via": s.get("via")} for s in raw["history"]]
    assert history and history[-1]["state"] == raw["current_state"], raw["entity_id"]
    return {
        "entity_id": raw["entity_id"],
        "machine_id": raw["machine_id"],
        "label": raw["label"],
        "data": raw["data"],
        "current_state": raw["current_state"],
        "completed": raw["current_state"] in machine["terminal_states"],
        "history": history,
        "notifications": [],
        "created_at": history[0]["at"],
        "updated_at": history[-1]["at"],
    }


def _default_state() -> dict[str, Any]:
    machines = {m["machine_id"]: _machine(m) for m in _read("machines.json")}
    entities = {e["entity_id"]: _entity(e, machines) for e in _read("applications.json")}
    return {
        "workspace_account": None,
        "machines": machines,
        "entities": entities,
        "transition_log": [],
        "hook_log": [],
    }


# The template every session is deep-copied from (never mutated: the runtime copies it).
DEFAULT_STATE: dict[str, Any] = _default_state()
