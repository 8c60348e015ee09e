"""At-least-once delivery: fetch (poll/batch), explicit acknowledgement, pending-queue inspection."""

from __future__ import annotations

from typing import Any

from dataclaw.envcraft.archetypes.stream_processing.bus import (
    acknowledge,
    deliver,
    depth_report,
    ordered_pending,
)
from dataclaw.envcraft.archetypes.stream_processing.subscriptions import require_active, subscription_of
from dataclaw.envcraft.runtime import (
    EnvError,
    ErrorCategory,
    echo,
    invalid_argument,
    invalid_transition,
    missing_field,
    tool,
)


def _events(session: dict[str, Any], sub: dict[str, Any], ids: list[str]) -> list[dict[str, Any]]:
    return [{**session["events"][e], "delivery_count": sub["deliveries"].get(e, 0)} for e in ids]


@tool("write", fields=["subscriptions"], returns=["events", "queue"])
def fetch_events(session: dict, subscription_id: str, max_events: int = 10, flush: bool = False) -> dict:
    """Fetch pending events of a poll or batch subscription, highest priority first, then oldest. Fetching
    does not remove them: an event stays pending (and is delivered again on the next fetch) until acked.
    Batch subscriptions return exactly batch_size events, or nothing until that many are pending (flush=true
    returns a short batch).

    Args:
        subscription_id: the subscription, e.g. "SUB-2".
        max_events: poll mode: at most this many events (1-100).
        flush: batch mode: return a short batch when fewer than batch_size are pending.
    """
    sub = subscription_of(session, subscription_id)
    require_active(sub, "fetch from")
    if sub["delivery_mode"] == "push":
        raise EnvError(
            ErrorCategory.INVALID_TRANSITION,
            f"subscription {subscription_id} is push: events are delivered at publication (unacked ones "
            "are pushed again with the next event); inspect them with get_pending, ack with ack_events.",
            current="push",
        )
    if not 1 <= max_events <= 100:
        raise invalid_argument("max_events", "must be between 1 and 100")
    queue = ordered_pending(session, sub)
    if sub["delivery_mode"] == "batch":
        size = sub["batch_size"]
        take = queue[:size] if len(queue) >= size or flush else []
        note = None if take else f"waiting for a full batch: {len(queue)}/{size} pending"
    else:
        take, note = queue[:max_events], None
    deliveries = deliver(sub, take)
    events = [{**session["events"][d["event_id"]], **d} for d in deliveries]
    out: dict[str, Any] = {"events": events, "queue": depth_report(sub)}
    if note:
        out["note"] = note
    return out


@tool("write", fields=["subscriptions"], returns=["acked", "queue"])
def ack_events(session: dict, subscription_id: str, event_ids: list[str]) -> dict:
    """Acknowledge processed events: they leave the subscription's pending queue for good. Only delivered
    events can be acked (fetch them first; push events are delivered at publication). All or nothing.

    Args:
        subscription_id: the subscription, e.g. "SUB-2".
        event_ids: the event ids to acknowledge, e.g. ["EV-0015"].
    """
    sub = subscription_of(session, subscription_id)
    require_active(sub, "acknowledge events on")
    if not event_ids:
        raise missing_field("event_ids", "list the event ids to acknowledge")
    ids = list(dict.fromkeys(event_ids))
    for eid in ids:
        if eid in sub["acked"]:
            raise invalid_transition(
                "event", eid, "acknowledged", "acknowledged", "it was already acknowledged"
            )
        if eid not in sub["pending"]:
            where = "exists but is not" if eid in session["events"] else "is not an event id"
            raise invalid_argument("event_ids", f"{echo(eid)} {where} pending in {subscription_id}")
        if not sub["deliveries"].get(eid):
            raise invalid_transition(
                "event",
                eid,
                "pending (not delivered)",
                "acknowledged",
                "it was never delivered: fetch it first",
            )
    acknowledge(sub, ids)
    return {"acked": ids, "queue": depth_report(sub)}


@tool("read", returns=["pending", "queue"])
def get_pending(session: dict, subscription_id: str, limit: int = 20) -> dict:
    """Inspect a subscription's unacknowledged events in delivery order (priority tier, then sequence),
    with how often each was delivered, and the queue depth against its backpressure threshold.

    Args:
        subscription_id: the subscription, e.g. "SUB-2".
        limit: at most this many events (1-200).
    """
    sub = subscription_of(session, subscription_id)
    if not 1 <= limit <= 200:
        raise invalid_argument("limit", "must be between 1 and 200")
    queue = ordered_pending(session, sub)
    return {
        "pending": _events(session, sub, queue[:limit]),
        "queue": depth_report(sub) | {"status": sub["status"]},
    }
