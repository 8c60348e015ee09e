"""The repository layer: immutable world data from ``data/`` and the session template built from it.

Only this module reads ``data/``; domain modules see nothing but the session dict (Table 15, rules 3, 10).
World streams and filters go through the same validators as agent input, and the recorded history is
replayed through the bus (publication + fan-out), then each subscription's recorded acknowledgements and
deliveries are applied — so world queues always obey the delivery rules.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

from dataclaw.envcraft.archetypes.stream_processing.bus import (
    acknowledge,
    new_subscription,
    publish,
    validate_filter,
    validate_payload,
    validate_schema,
)
from dataclaw.envcraft.runtime.state import parse_time

DATA = Path(__file__).resolve().parent / "data"


def _read(name: str) -> Any:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def _world_stream(raw: dict[str, Any]) -> dict[str, Any]:
    """A stream record from world data (its schema checked like an agent's), still empty."""
    return {**raw, "schema": validate_schema(raw["schema"]), "length": 0, "origin": "world"}


def _default_state() -> dict[str, Any]:
    streams = {raw["stream_id"]: _world_stream(raw) for raw in _read("streams.json")["streams"]}
    subs_spec = _read("subscriptions.json")
    state: dict[str, Any] = {
        "workspace_account": None,
        "consumers": _read("consumers.json"),
        "streams": streams,
        "events": {},
        "subscriptions": {},
        "counters": {"next_event_number": 1, "next_subscription_number": subs_spec["next_number"]},
    }
    for raw in subs_spec["subscriptions"]:
        stream = streams[raw["stream_id"]]
        assert raw["subscriber"] in state["consumers"], raw
        flt = validate_filter(stream["schema"], raw["filter"])
        sub = new_subscription(
            raw["subscription_id"],
            raw["subscriber"],
            raw["stream_id"],
            raw["delivery_mode"],
            flt,
            raw.get("batch_size"),
            raw["max_pending"],
            raw["created_at"],
        )
        state["subscriptions"][sub["subscription_id"]] = sub
    for raw in _read("history.json")["events"]:
        stream = streams[raw["stream_id"]]
        validate_payload(stream["schema"], raw["payload"], stream["stream_id"])
        publish(state, stream, raw["payload"], raw["priority"], raw["producer"], raw["published_at"])
    for raw in subs_spec["subscriptions"]:
        sub = state["subscriptions"][raw["subscription_id"]]
        through = raw.get("acked_through")
        acked = {e for e in sub["pending"] if through and e <= through} | set(raw.get("acked", []))
        for eid, count in raw.get("deliveries", {}).items():
            assert eid in sub["pending"], (sub["subscription_id"], eid)
            sub["deliveries"][eid] = max(count, sub["deliveries"].get(eid, 0))
        acknowledge(sub, [e for e in sub["pending"] if e in acked])
    return state


# The template every session is deep-copied from (never mutated: the runtime copies it).
DEFAULT_STATE: dict[str, Any] = _default_state()


def long_context_positions() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Long-context distractors: the ``fleet.positions`` stream and 144 AIS pings (8 vessels × 18),
    as (stream, publications) from ``data/long_context.json``."""
    spec = _read("long_context.json")
    stream = _world_stream(spec["stream"])
    start = parse_time(spec["start"])
    pubs = []
    for k in range(spec["pings"]):
        at = (start + timedelta(minutes=spec["interval_min"] * k)).isoformat()
        for v in spec["vessels"]:
            payload = {
                "vessel": v["vessel"],
                "imo": v["imo"],
                "lat": round(v["lat"] + v["dlat"] * k, 4),
                "lon": round(v["lon"] + v["dlon"] * k, 4),
                "speed_kn": v["speed_kn"],
                "reefers_on_board": v["reefers_on_board"],
            }
            validate_payload(stream["schema"], payload, stream["stream_id"])
            pubs.append({"payload": payload, "at": at})
    return stream, pubs
