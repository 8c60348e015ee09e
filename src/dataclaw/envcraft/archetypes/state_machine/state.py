"""The repository layer: immutable world data from ``data/`` and the session template built from it.

Only this module reads ``data/``; domain modules see nothing but the session dict (Table 15, rules 3, 10).
World machines go through the same validators as agent-defined ones, so bad world data fails at import.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

from dataclaw.envcraft.archetypes.state_machine.guards import validate_guard, validate_hooks
from dataclaw.envcraft.runtime.state import parse_time

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


# Paths historical loans took through ``consumer_loan`` (edge ids), by outcome.
_HISTORY_PATHS = {
    "funded": (
        ("draft", None),
        ("submitted", "T1"),
        ("underwriting", "T2"),
        ("approved", "T6"),
        ("funded", "T9"),
    ),
    "declined": (("draft", None), ("submitted", "T1"), ("underwriting", "T2"), ("declined", "T7")),
    "withdrawn": (("draft", None), ("submitted", "T1"), ("withdrawn", "T11")),
}
_HISTORY_NAMES = ("Ahmed", "Birgit", "Carlos", "Dana", "Emeka", "Fiona", "Goran", "Hana", "Ivan", "Julia")
_HISTORY_SURNAMES = ("Novak", "Silva", "Brown", "Kowalski", "Nguyen", "Schulz")


def history_entities(base_time: str, count: int = 60) -> dict[str, dict[str, Any]]:
    """Deterministic completed loan applications for long-context sessions (distractors)."""
    base = parse_time(base_time)
    outcomes = ("funded", "funded", "declined", "withdrawn")
    out: dict[str, dict[str, Any]] = {}
    for i in range(count):
        outcome = outcomes[i % len(outcomes)]
        name = f"{_HISTORY_NAMES[i % 10]} {_HISTORY_SURNAMES[i % 6]}"
        start = base - timedelta(days=90 + 2 * i)
        history = [
            {"state": st, "at": (start + timedelta(days=k)).isoformat(), "via": via}
            for k, (st, via) in enumerate(_HISTORY_PATHS[outcome])
        ]
        eid = f"LN-{i + 1:04d}"
        raw = {
            "entity_id": eid,
            "machine_id": "consumer_loan",
            "label": f"{('Auto', 'Personal')[i % 2]} loan – {name}",
            "data": {
                "applicant": name,
                "requested_amount": 4000 + 750 * (i % 30),
                "credit_score": 560 + (i * 37) % 240 if outcome != "funded" else 690 + (i * 13) % 120,
                "dti_ratio": round(0.2 + (i % 9) * 0.04, 2),
                "income_verified": outcome == "funded",
                "kyc_status": "verified",
                "applicant_consent": True,
            },
            "current_state": history[-1]["state"],
            "history": history,
        }
        out[eid] = _entity(raw, DEFAULT_STATE["machines"])  # the same record (and checks) as world entities
    return out
