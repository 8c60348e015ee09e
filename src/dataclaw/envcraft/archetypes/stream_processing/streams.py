"""Typed streams: creation with a schema contract, prioritised publication with fan-out, history queries."""

from __future__ import annotations

import re
from typing import Any, Literal

from dataclaw.envcraft.archetypes.stream_processing.bus import (
    PRIORITIES,
    matches,
    publish,
    validate_payload,
    validate_schema,
)
from dataclaw.envcraft.runtime import invalid_argument, invalid_reference, now, tool

Priority = Literal["critical", "high", "normal", "low"]
STREAM_ID_RE = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*){0,3}$")
PRODUCER_RE = re.compile(r"^[a-z][a-z0-9-]{1,39}$")


def stream_of(session: dict[str, Any], stream_id: str) -> dict[str, Any]:
    streams = session["streams"]
    if stream_id not in streams:
        raise invalid_reference("stream", stream_id, sorted(streams))
    return streams[stream_id]


@tool("read", returns=["streams"])
def list_streams(session: dict) -> dict:
    """List the streams with their schema contract (field → type, '?' = optional), default priority,
    number of events and active subscriptions."""
    rows = []
    for s in sorted(session["streams"].values(), key=lambda s: s["stream_id"]):
        subs = [
            x
            for x in session["subscriptions"].values()
            if x["stream_id"] == s["stream_id"] and x["status"] == "active"
        ]
        rows.append({**s, "active_subscriptions": len(subs)})
    return {"streams": rows}


@tool("write", fields=["streams"], returns=["stream"])
def create_stream(
    session: dict, stream_id: str, schema: dict, description: str, default_priority: Priority = "normal"
) -> dict:
    """Declare a new typed stream with its schema contract; every publication is validated against it.

    Args:
        stream_id: dotted lowercase name, e.g. "gate.rtm" or "reefer.telemetry".
        schema: field name → type, types string | integer | number | boolean; append '?' for an optional
            field, e.g. {"gate": "string", "flagged": "boolean", "note": "string?"}.
        description: what flows on the stream (at least 10 characters).
        default_priority: the priority tier events get when the publisher names none.
    """
    if not STREAM_ID_RE.match(stream_id) or len(stream_id) > 60:
        raise invalid_argument(
            "stream_id", "use dotted lowercase segments, e.g. 'gate.rtm' (at most 60 characters)"
        )
    if stream_id in session["streams"]:
        raise invalid_argument(
            "stream_id", f"stream {stream_id} already exists (streams are append-only; reuse it)"
        )
    checked = validate_schema(schema)
    if not 10 <= len(description.strip()) <= 300:
        raise invalid_argument("description", "must be 10 to 300 characters")
    stream = {
        "stream_id": stream_id,
        "description": description.strip(),
        "owner": session.get("workspace_account") or "operator",
        "default_priority": default_priority,
        "created_at": now(session),
        "schema": checked,
        "length": 0,
        "origin": "agent",
    }
    session["streams"][stream_id] = stream
    return {"stream": stream}


@tool("write", fields=["streams", "events", "subscriptions", "counters"], returns=["event", "fanout"])
def publish_event(
    session: dict, stream_id: str, payload: dict, priority: Priority | None = None, producer: str = "operator"
) -> dict:
    """Publish an event: the payload is validated against the stream's schema, gets a priority tier, is
    appended to the stream's history and fanned out to every active subscription whose filter matches
    (its id lands in each one's pending queue; push subscriptions receive it immediately).

    Args:
        stream_id: the stream to publish on.
        payload: the event fields, exactly as the schema declares them.
        priority: critical | high | normal | low; defaults to the stream's default priority.
        producer: who publishes (lowercase id), e.g. "alerting-svc".
    """
    stream = stream_of(session, stream_id)
    if not PRODUCER_RE.match(producer):
        raise invalid_argument("producer", "use 2-40 lowercase letters, digits or '-'")
    validate_payload(stream["schema"], payload, stream_id)
    tier = priority or stream["default_priority"]
    event, fanout = publish(session, stream, payload, tier, producer, now(session), origin="agent")
    return {
        "event": event,
        "fanout": fanout,
        "backpressure": [f["subscription_id"] for f in fanout if f["backpressure"]],
    }


@tool("read", returns=["events", "count"])
def query_history(
    session: dict,
    stream_id: str,
    from_offset: int = 1,
    priority: Priority | None = None,
    where: dict | None = None,
    limit: int = 20,
) -> dict:
    """Read a stream's append-only history in publication order; each event shows the subscriptions in
    which it is still unacknowledged.

    Args:
        stream_id: the stream to read.
        from_offset: first stream offset to return (offsets start at 1).
        priority: only events of this priority tier.
        where: exact-equality filter over payload fields, e.g. {"container_id": "MSKU-4471"}.
        limit: at most this many events (1-200).
    """
    stream_of(session, stream_id)
    if not 1 <= limit <= 200:
        raise invalid_argument("limit", "must be between 1 and 200")
    if from_offset < 1:
        raise invalid_argument("from_offset", "offsets start at 1")
    where = where or {}
    rows = [
        e
        for e in session["events"].values()
        if e["stream_id"] == stream_id
        and e["offset"] >= from_offset
        and (priority is None or e["priority"] == priority)
        and matches(where, e["payload"])
    ]
    rows.sort(key=lambda e: e["offset"])
    pending_in: dict[str, list[str]] = {}
    for sub in session["subscriptions"].values():
        for eid in sub["pending"]:
            pending_in.setdefault(eid, []).append(sub["subscription_id"])
    out = [{**e, "pending_in": sorted(pending_in.get(e["event_id"], []))} for e in rows[:limit]]
    return {"events": out, "count": len(rows), "priorities": list(PRIORITIES)}
