"""The repository layer: immutable world data from ``data/`` and the session template built from it.

The event history in ``data/event_history.json`` is run through the real engine when the template is
built, so the historical event and action logs are exactly what the rules would have produced.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

from dataclaw.envcraft.archetypes.event_triggering.engine import process_event, trigger_index
from dataclaw.envcraft.runtime.state import parse_time

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
    replay_history(state, _read("event_history.json"))
    return state


def replay_history(state: dict[str, Any], events: list[dict[str, Any]]) -> None:
    """Rebuild the event and action logs (and rule/source statistics) from ``events``, oldest first."""
    state["event_log"], state["action_log"] = [], []
    state["counters"].update(next_event=1, next_action=1)
    for src in state["sources"].values():
        src["event_count"] = 0
    for rule in state["rules"].values():
        rule.update(fire_count=0, last_fired_event=None)
    for ev in sorted(events, key=lambda e: e["at"]):  # stable: same-time events keep their order
        process_event(state, ev["source_id"], ev["trigger_type"], ev["payload"], ev["at"], "history")


def long_context_history() -> list[dict[str, Any]]:
    """The regular history plus a week of routine events before it (deterministic distractors)."""
    spec = _read("long_context.json")
    start = parse_time(spec["start"])
    out = []
    for i in range(spec["count"]):
        tpl = spec["templates"][i % len(spec["templates"])]
        payload = dict(tpl["payload"])
        val = tpl["value"]
        if "prefix" in val:
            payload[val["field"]] = f"{val['prefix']}{i:03d}"
        else:
            step = (i * 37) % 101 / 100  # a fixed pseudo-random walk in [0, 1)
            number = val["base"] + round(val["spread"] * step, 1)
            payload[val["field"]] = int(number) if isinstance(val["base"], int) else number
        at = (start + timedelta(minutes=spec["step_minutes"] * i)).isoformat()
        out.append(
            {"source_id": tpl["source_id"], "trigger_type": tpl["trigger_type"], "at": at, "payload": payload}
        )
    return out + _read("event_history.json")


# The template every session is deep-copied from (never mutated: the runtime copies it).
DEFAULT_STATE: dict[str, Any] = _default_state()
