"""The repository layer: customers, plans, hidden personas, the keyword lexicon and the reply template bank,
read once from ``data/`` into the session template. Only this module touches ``data/``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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
