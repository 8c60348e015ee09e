"""Subscription lifecycle: create (filter + delivery mode), update, unsubscribe, list with queue depth."""

from __future__ import annotations

from typing import Any, Literal

from dataclaw.envcraft.archetypes.stream_processing.bus import depth_report, new_subscription, validate_filter
from dataclaw.envcraft.archetypes.stream_processing.streams import stream_of
from dataclaw.envcraft.runtime import (
    EnvError,
    ErrorCategory,
    invalid_argument,
    invalid_reference,
    invalid_transition,
    missing_field,
    now,
    tool,
)

Mode = Literal["push", "poll", "batch"]
MAX_BATCH = 100
MAX_PENDING_CAP = 10_000


def subscription_of(session: dict[str, Any], subscription_id: str) -> dict[str, Any]:
    subs = session["subscriptions"]
    if subscription_id not in subs:
        raise invalid_reference("subscription", subscription_id, sorted(subs))
    return subs[subscription_id]


def require_active(sub: dict[str, Any], doing: str) -> None:
    if sub["status"] != "active":
        raise EnvError(
            ErrorCategory.INVALID_TRANSITION,
            f"subscription {sub['subscription_id']} is cancelled: you cannot {doing} it.",
            current=sub["status"],
        )


def _batch_size(mode: str, batch_size: int | None) -> int | None:
    if mode != "batch":
        if batch_size is not None:
            raise invalid_argument(
                "batch_size", f"only batch subscriptions have a batch size (mode is {mode})"
            )
        return None
    if batch_size is None:
        raise missing_field("batch_size", "batch delivery needs a batch size (1-100)")
    if not 1 <= batch_size <= MAX_BATCH:
        raise invalid_argument("batch_size", f"must be between 1 and {MAX_BATCH}")
    return batch_size


def _max_pending(value: int) -> int:
    if not 1 <= value <= MAX_PENDING_CAP:
        raise invalid_argument("max_pending", f"must be between 1 and {MAX_PENDING_CAP}")
    return value


def _summary(sub: dict[str, Any]) -> dict[str, Any]:
    keys = ("subscription_id", "subscriber", "stream_id", "delivery_mode", "filter", "batch_size", "status")
    return (
        {k: sub[k] for k in keys}
        | depth_report(sub)
        | {"acked": len(sub["acked"]), "dropped": len(sub["dropped"])}
    )


@tool("write", fields=["subscriptions", "counters"], returns=["subscription"])
def subscribe(
    session: dict,
    stream_id: str,
    subscriber: str,
    delivery_mode: Mode,
    filter: dict | None = None,
    batch_size: int | None = None,
    max_pending: int = 100,
) -> dict:
    """Attach a consumer to a stream. Only events published from now on that match the filter are queued.

    Args:
        stream_id: the stream to consume.
        subscriber: the consumer service id (e.g. "compliance-archive").
        delivery_mode: push (delivered at publication), poll (fetch_events returns pending events) or
            batch (fetch_events returns full batches of batch_size).
        filter: exact-equality conditions over payload fields, e.g. {"alarm": true}; empty = every event.
        batch_size: events per batch (batch mode only, 1-100).
        max_pending: queue depth above which the subscription reports backpressure.
    """
    stream = stream_of(session, stream_id)
    if subscriber not in session["consumers"]:
        raise invalid_reference("consumer", subscriber, sorted(session["consumers"]))
    flt = validate_filter(stream["schema"], filter or {})
    size = _batch_size(delivery_mode, batch_size)
    number = session["counters"]["next_subscription_number"]
    session["counters"]["next_subscription_number"] = number + 1
    sub = new_subscription(
        f"SUB-{number}",
        subscriber,
        stream_id,
        delivery_mode,
        flt,
        size,
        _max_pending(max_pending),
        now(session),
    )
    session["subscriptions"][sub["subscription_id"]] = sub
    return {"subscription": sub}


@tool("write", fields=["subscriptions"], returns=["subscription"])
def update_subscription(
    session: dict,
    subscription_id: str,
    filter: dict | None = None,
    delivery_mode: Mode | None = None,
    batch_size: int | None = None,
    max_pending: int | None = None,
) -> dict:
    """Change an active subscription's filter, delivery mode, batch size or backpressure threshold. Events
    already pending stay pending (they still need an ack); the new filter applies to future events.

    Args:
        subscription_id: the subscription, e.g. "SUB-1".
        filter: the new exact-equality filter (replaces the old one; {} = every event).
        delivery_mode: the new delivery mode.
        batch_size: the new batch size (batch mode only).
        max_pending: the new backpressure threshold.
    """
    sub = subscription_of(session, subscription_id)
    require_active(sub, "update")
    if filter is None and delivery_mode is None and batch_size is None and max_pending is None:
        raise missing_field(
            "filter/delivery_mode/batch_size/max_pending", "give at least one setting to change"
        )
    stream = session["streams"][sub["stream_id"]]
    flt = validate_filter(stream["schema"], filter) if filter is not None else sub["filter"]
    mode = delivery_mode or sub["delivery_mode"]
    size = _batch_size(
        mode, batch_size if batch_size is not None else (sub["batch_size"] if mode == "batch" else None)
    )
    cap = _max_pending(max_pending) if max_pending is not None else sub["max_pending"]
    before = {k: sub[k] for k in ("filter", "delivery_mode", "batch_size", "max_pending")}
    sub.update(filter=flt, delivery_mode=mode, batch_size=size, max_pending=cap, updated_at=now(session))
    changed = {k: [v, sub[k]] for k, v in before.items() if sub[k] != v}
    return {"subscription": _summary(sub), "changed": changed}


@tool("write", fields=["subscriptions"], returns=["subscription"])
def unsubscribe(session: dict, subscription_id: str, drop_pending: bool = False) -> dict:
    """Cancel a subscription. Unacknowledged events are never lost silently: with events still pending,
    it is refused unless drop_pending is true (which discards them on purpose).

    Args:
        subscription_id: the subscription to cancel.
        drop_pending: discard the still-unacknowledged events and cancel anyway.
    """
    sub = subscription_of(session, subscription_id)
    require_active(sub, "unsubscribe")
    if sub["pending"] and not drop_pending:
        raise invalid_transition(
            "subscription",
            subscription_id,
            "active",
            "cancelled",
            f"{len(sub['pending'])} event(s) are still unacknowledged; "
            "acknowledge them or pass drop_pending=true",
        )
    sub["dropped"] += sub["pending"]
    dropped = list(sub["pending"])
    sub.update(status="cancelled", pending=[], deliveries={}, updated_at=now(session))
    return {"subscription": _summary(sub), "dropped_events": dropped}


@tool("read", returns=["subscriptions", "count"])
def list_subscriptions(
    session: dict,
    stream_id: str | None = None,
    subscriber: str | None = None,
    include_cancelled: bool = False,
) -> dict:
    """List subscriptions with delivery mode, filter, queue depth and backpressure.

    Args:
        stream_id: only subscriptions on this stream.
        subscriber: only this consumer's subscriptions.
        include_cancelled: also list cancelled subscriptions.
    """
    rows = [
        _summary(s)
        for s in session["subscriptions"].values()
        if (stream_id is None or s["stream_id"] == stream_id)
        and (subscriber is None or s["subscriber"] == subscriber)
        and (include_cancelled or s["status"] == "active")
    ]
    rows.sort(key=lambda s: int(s["subscription_id"].split("-")[1]))
    return {"subscriptions": rows, "count": len(rows)}
