"""The repository layer: customers, plans, hidden personas, the keyword lexicon and the reply template bank,
read once from ``data/`` into the session template. Only this module touches ``data/``."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

from dataclaw.envcraft.runtime.state import parse_time

DATA = Path(__file__).resolve().parent / "data"


def _read(name: str) -> Any:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def _default_state() -> dict[str, Any]:
    accounts = _read("accounts.json")
    personas = _read("personas.json")
    missing = sorted(set(accounts["customers"]) - set(personas))
    if missing:
        raise ValueError(f"customers without a persona: {missing}")
    return {
        "workspace_account": None,
        "plans": accounts["plans"],
        "customers": accounts["customers"],
        "personas": personas,  # hidden: never returned to the agent
        "lexicon": _read("lexicon.json"),
        "replies": _read("replies.json"),
        # the three conversation layers
        "conversations": {},
        "histories": {},
        "contexts": {},
        "adjustments": [],
        "counters": {"next_conversation": 1, "next_adjustment": 1},
    }


# The template every session is deep-copied from (never mutated: the runtime copies it).
DEFAULT_STATE: dict[str, Any] = _default_state()


def archived_conversations(customers: list[str]) -> list[tuple[dict, list[dict], dict]]:
    """Past, closed conversations for long-context sessions: (record, history, context) triples filled
    deterministically from ``data/long_context.json``; ids ``ARCH-nnn`` never collide with new ones."""
    spec = _read("long_context.json")
    start = parse_time(spec["start"])
    out = []
    for i in range(spec["count"]):
        tpl = spec["templates"][(i // len(customers)) % len(spec["templates"])]  # varies per customer
        at = (start + timedelta(hours=spec["step_hours"] * i)).isoformat()
        cid = f"ARCH-{i + 1:03d}"
        record = {
            "conversation_id": cid,
            "customer_id": customers[i % len(customers)],
            "channel": tpl["channel"],
            "status": tpl["outcome"],
            "outcome": tpl["outcome"],
            "turn_count": sum(role == "agent" for role, _ in tpl["messages"]),
            "patience": 6,
            "started_at": at,
            "closed_at": at,
            "escalation": None,
            "archived": True,
        }
        history = [
            {"turn": (n + 1) // 2, "role": role, "text": text, "at": at}
            for n, (role, text) in enumerate(tpl["messages"])
        ]
        context = {
            "confidence": 0.8,
            "valence": 0.2,
            "trend": "stable",
            "outstanding": [],
            "confirmed": [],
            "revealed": [],
            "trajectory": [{"turn": 0, "confidence": 0.8, "valence": 0.2, "signals": []}],
            "intent_hypothesis": None,
            "priority": "normal",
            "notes": "",
            "language": "en",
        }
        out.append((record, history, context))
    return out
