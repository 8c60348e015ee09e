"""The asynchronous pub-sub bus: schema contracts, the exact-equality filter predicate, publication with
fan-out into per-subscription pending queues, priority ordering, at-least-once delivery bookkeeping.

Pure functions over the session dict; the tool modules call them after their guards passed. The world's
event history is replayed through :func:`publish` at load time, so world queues obey the same rules.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from dataclaw.envcraft.runtime import echo, invalid_argument

PRIORITIES = ("critical", "high", "normal", "low")
PRIORITY_RANK = {p: i for i, p in enumerate(PRIORITIES)}
DELIVERY_MODES = ("push", "poll", "batch")
FIELD_RE = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
MAX_FIELDS = 20
MAX_STRING = 500


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


# field type → value check (the schema contract's type vocabulary); "type?" marks an optional field
FIELD_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str) and len(v) <= MAX_STRING,
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": _is_number,
    "boolean": lambda v: isinstance(v, bool),
}


def _base(kind: str) -> tuple[str, bool]:
    return (kind[:-1], True) if kind.endswith("?") else (kind, False)


def validate_schema(schema: Any) -> dict[str, str]:
    """A schema contract: 1-20 snake_case field names, each mapped to a known type (``?`` = optional)."""
    if not isinstance(schema, dict) or not schema:
        raise invalid_argument("schema", "give a non-empty object mapping field names to types")
    if len(schema) > MAX_FIELDS:
        raise invalid_argument("schema", f"at most {MAX_FIELDS} fields")
    for name, kind in schema.items():
        if not FIELD_RE.match(name):
            raise invalid_argument("schema", f"field name {echo(name)} must be snake_case (a-z, 0-9, _)")
        if not isinstance(kind, str) or _base(kind)[0] not in FIELD_TYPES:
            types = ", ".join(FIELD_TYPES)
            raise invalid_argument(
                "schema", f"field '{name}' has type {echo(kind)}; use one of {types} (suffix ? = optional)"
            )
    if all(_base(k)[1] for k in schema.values()):
        raise invalid_argument("schema", "at least one field must be required")
    return dict(schema)


def validate_payload(schema: dict[str, str], payload: dict[str, Any], stream_id: str) -> None:
    """Publication-time contract check: no unknown fields, every required field present, types match."""
    unknown = sorted(set(payload) - set(schema))
    if unknown:
        raise invalid_argument(
            "payload", f"field {echo(unknown[0])} is not in the schema of {stream_id} ({', '.join(schema)})"
        )
    for name, kind in schema.items():
        base, optional = _base(kind)
        if name not in payload or payload[name] is None:
            if optional:
                continue
            raise invalid_argument("payload", f"required field '{name}' ({base}) is missing")
        if not FIELD_TYPES[base](payload[name]):
            raise invalid_argument("payload", f"field '{name}' must be {base}, got {echo(payload[name])}")


def validate_filter(schema: dict[str, str], flt: dict[str, Any]) -> dict[str, Any]:
    """An exact-equality filter: only schema fields, each value of the field's type."""
    for name, value in flt.items():
        if name not in schema:
            raise invalid_argument(
                "filter", f"field {echo(name)} is not in the stream schema ({', '.join(schema)})"
            )
        base = _base(schema[name])[0]
        if not FIELD_TYPES[base](value):
            raise invalid_argument("filter", f"'{name}' is {base}; {echo(value)} can never match it")
    return dict(flt)


def _equal(a: Any, b: Any) -> bool:
    """Exact equality without Python's bool/int coercion (True does not match 1)."""
    if isinstance(a, bool | str) or isinstance(b, bool | str):
        return type(a) is type(b) and a == b
    return a == b


def matches(flt: dict[str, Any], payload: dict[str, Any]) -> bool:
    """The pure filter predicate: every filter field equals the payload's value."""
    return all(name in payload and _equal(payload[name], value) for name, value in flt.items())


def ordered_pending(session: dict[str, Any], sub: dict[str, Any]) -> list[str]:
    """Pending event ids by priority tier (critical first), then publication sequence."""
    events = session["events"]
    return sorted(
        sub["pending"], key=lambda eid: (PRIORITY_RANK[events[eid]["priority"]], events[eid]["sequence"])
    )


def depth_report(sub: dict[str, Any]) -> dict[str, Any]:
    depth = len(sub["pending"])
    return {
        "subscription_id": sub["subscription_id"],
        "queue_depth": depth,
        "max_pending": sub["max_pending"],
        "backpressure": depth > sub["max_pending"],
    }


def deliver(sub: dict[str, Any], event_ids: list[str]) -> list[dict[str, Any]]:
    """Record one delivery of each event (a second delivery of an unacked event is a redelivery)."""
    out = []
    for eid in event_ids:
        count = sub["deliveries"].get(eid, 0) + 1
        sub["deliveries"][eid] = count
        out.append({"event_id": eid, "delivery_count": count, "redelivered": count > 1})
    return out


def publish(
    session: dict[str, Any],
    stream: dict[str, Any],
    payload: dict[str, Any],
    priority: str,
    producer: str,
    at: str,
    origin: str = "world",
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Append to the stream's history, then fan out to every active matching subscription."""
    number = session["counters"]["next_event_number"]
    session["counters"]["next_event_number"] = number + 1
    stream["length"] += 1
    event = {
        "event_id": f"EV-{number:04d}",
        "stream_id": stream["stream_id"],
        "offset": stream["length"],
        "sequence": number,
        "priority": priority,
        "payload": dict(payload),
        "producer": producer,
        "published_at": at,
        "origin": origin,
    }
    session["events"][event["event_id"]] = event
    fanout = []
    for sub in session["subscriptions"].values():
        if (
            sub["status"] != "active"
            or sub["stream_id"] != stream["stream_id"]
            or not matches(sub["filter"], payload)
        ):
            continue
        sub["pending"].append(event["event_id"])
        entry = depth_report(sub) | {"delivery_mode": sub["delivery_mode"]}
        if sub["delivery_mode"] == "push":  # pushed now, with every still-unacked event pushed again
            entry["pushed"] = deliver(sub, ordered_pending(session, sub))
        fanout.append(entry)
    return event, fanout


def new_subscription(
    sid: str,
    subscriber: str,
    stream_id: str,
    mode: str,
    flt: dict[str, Any],
    batch_size: int | None,
    max_pending: int,
    at: str,
) -> dict[str, Any]:
    return {
        "subscription_id": sid,
        "subscriber": subscriber,
        "stream_id": stream_id,
        "delivery_mode": mode,
        "filter": flt,
        "batch_size": batch_size,
        "max_pending": max_pending,
        "status": "active",
        "pending": [],
        "deliveries": {},
        "acked": [],
        "dropped": [],
        "created_at": at,
        "updated_at": at,
    }


def acknowledge(sub: dict[str, Any], event_ids: list[str]) -> None:
    """Ack is the only way an event leaves a pending queue (besides an explicit drop on unsubscribe)."""
    gone = set(event_ids)
    sub["pending"] = [e for e in sub["pending"] if e not in gone]
    for eid in event_ids:
        sub["deliveries"].pop(eid, None)
        sub["acked"].append(eid)
