"""Session-state helpers: the deterministic clock, JSON copies, scenario overrides and state hashes."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

# Keys excluded from the state hash: they name the session, not what happened in it.
HASH_EXCLUDED = ("session_id",)
DEFAULT_TIME_STEP_S = 60


def jsoncopy(value: Any) -> Any:
    """A deep copy through JSON (fast with orjson; also proves the value is JSON-serialisable)."""
    return orjson.loads(orjson.dumps(value))


def deep_merge(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """Apply ``overrides`` onto ``base`` in place: dicts merge recursively, everything else replaces.

    A value of ``None`` under a dict key deletes that key (so a scenario can remove a default entity)."""
    for key, value in overrides.items():
        if value is None and key in base and isinstance(base[key], dict):
            del base[key]
        elif isinstance(value, dict) and isinstance(base.get(key), dict):
            deep_merge(base[key], value)
        else:
            base[key] = jsoncopy(value) if isinstance(value, dict | list) else value
    return base


def state_hash(state: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of ``state`` without the session id: same actions → same hash."""
    body = {k: v for k, v in state.items() if k not in HASH_EXCLUDED}
    return hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()


def parse_time(text: str) -> datetime:
    dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def now(session: dict[str, Any]) -> str:
    """The session's current time: ``meta.base_time + meta.action_index × meta.time_step_s`` (ISO 8601).

    Never the wall clock (Table 15, rule 6), so replaying the same actions yields the same timestamps."""
    meta = session["meta"]
    step = meta.get("time_step_s", DEFAULT_TIME_STEP_S)
    t = parse_time(meta["base_time"]) + timedelta(seconds=step * meta["action_index"])
    return t.isoformat()
