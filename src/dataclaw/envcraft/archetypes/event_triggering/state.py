"""The repository layer: immutable world data from ``data/`` and the session template built from it.

The event history in ``data/event_history.json`` is run through the real engine when the template is
built, so the historical event and action logs are exactly what the rules would have produced.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dataclaw.envcraft.archetypes.event_triggering.engine import process_event, trigger_index

DATA = Path(__file__).resolve().parent / "data"


def _read(name: str) -> Any:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def _default_state() -> dict[str, Any]:
    taxonomy = _read("taxonomy.json")
    trigger_index(taxonomy)  # refuses a trigger type listed under two categories
    rules = _read("rules.json")
    state: dict[str, Any] = {
        "workspace_account": None,
        "taxonomy": taxonomy,
        "action_types": _read("action_types.json"),
        "directory": _read("directory.json"),
        "sources": {
            sid: {"source_id": sid, **s, "registered_at": "2026-01-05T09:00:00+00:00", "event_count": 0}
            for sid, s in _read("sources.json").items()
        },
        "rules": {
            r["rule_id"]: {
                **r,
                "version": 1,
                "created_at": "2026-02-01T09:00:00+00:00",
                "updated_at": "2026-02-01T09:00:00+00:00",
                "fire_count": 0,
                "last_fired_event": None,
            }
            for r in rules["rules"]
        },
        "counters": {"next_rule": rules["next_number"], "next_event": 1, "next_action": 1},
        "event_log": [],
        "action_log": [],
    }
    for ev in _read("event_history.json"):
        process_event(state, ev["source_id"], ev["trigger_type"], ev["payload"], ev["at"], "history")
    return state


# The template every session is deep-copied from (never mutated: the runtime copies it).
DEFAULT_STATE: dict[str, Any] = _default_state()
