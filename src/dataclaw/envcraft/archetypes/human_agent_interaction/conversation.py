"""Conversation tools over the three state layers: conversation records (status, turn count), per-
conversation message histories, and context-variable dictionaries (the hidden persona's confidence,
valence, trend and item sets, plus agent-owned variables the agent may override)."""

from __future__ import annotations

from itertools import pairwise
from typing import Any, Literal

from dataclaw.envcraft.archetypes.human_agent_interaction.analysis import (
    analyze,
    apply_delta,
    mood,
    reply,
    trend,
)
from dataclaw.envcraft.runtime import (
    EnvError,
    ErrorCategory,
    invalid_argument,
    invalid_reference,
    invalid_transition,
    now,
    permission_denied,
    tool,
)
from dataclaw.envcraft.runtime.errors import echo

Channel = Literal["chat", "phone", "email"]
AGENT_KEYS = {"intent_hypothesis", "priority", "notes", "language"}
PERSONA_KEYS = {
    "confidence",
    "valence",
    "trend",
    "confirmed",
    "outstanding",
    "revealed",
    "latent_intent",
    "patience",
}
PRIORITIES = ("low", "normal", "high")
LANGUAGES = ("en", "pt", "de", "pl")


def conversation(session: dict[str, Any], conversation_id: str) -> dict[str, Any]:
    if conversation_id not in session["conversations"]:
        raise invalid_reference("conversation", conversation_id, list(session["conversations"]))
    return session["conversations"][conversation_id]


def active(session: dict[str, Any], conversation_id: str) -> dict[str, Any]:
    conv = conversation(session, conversation_id)
    if conv["status"] != "active":
        raise invalid_transition(
            "conversation", conversation_id, conv["status"], "active", "the conversation has ended"
        )
    return conv


def visible_context(session: dict[str, Any], conversation_id: str) -> dict[str, Any]:
    """What the agent may see: signals and the concerns the customer has raised, never the hidden persona."""
    ctx = session["contexts"][conversation_id]
    items = session["personas"][session["conversations"][conversation_id]["customer_id"]]["items"]
    return {
        "confidence": ctx["confidence"],
        "valence": ctx["valence"],
        "mood": mood(ctx["valence"]),
        "trend": ctx["trend"],
        "raised_concerns": [items[n]["description"] for n in ctx["revealed"]],
        "resolved_concerns": [items[n]["description"] for n in ctx["confirmed"]],
        **{k: ctx[k] for k in sorted(AGENT_KEYS)},
    }


def _public(conv: dict[str, Any]) -> dict[str, Any]:
    """A conversation record as the agent sees it: without the customer's hidden patience bound."""
    return {k: v for k, v in conv.items() if k != "patience"}


def _message(session: dict[str, Any], conversation_id: str, role: str, text: str, turn: int) -> None:
    session["histories"][conversation_id].append(
        {"turn": turn, "role": role, "text": text, "at": now(session)}
    )


@tool(
    "write",
    fields=["conversations", "histories", "contexts", "counters"],
    returns=["conversation", "message"],
)
def start_session(session: dict, customer_id: str, channel: Channel) -> dict:
    """Start a support conversation with a customer; their persona is configured from the customer record
    and the channel (phone callers are less patient, e-mail writers more). Returns the opening message.

    Args:
        customer_id: the customer, e.g. "C-1042".
        channel: how the customer contacted support.
    """
    if customer_id not in session["customers"]:
        raise invalid_reference("customer", customer_id, sorted(session["customers"]))
    for conv in session["conversations"].values():
        if conv["customer_id"] == customer_id and conv["status"] == "active":
            raise invalid_argument(
                "customer_id", f"{customer_id} already has an active conversation {conv['conversation_id']}"
            )
    persona = session["personas"][customer_id]
    number = session["counters"]["next_conversation"]
    session["counters"]["next_conversation"] = number + 1
    cid = f"CONV-{number}"
    patience = max(2, persona["patience"] + session["lexicon"]["channel_patience"][channel])
    conv = {
        "conversation_id": cid,
        "customer_id": customer_id,
        "customer_name": session["customers"][customer_id]["name"],
        "channel": channel,
        "status": "active",
        "turn_count": 0,
        "patience": patience,
        "started_at": now(session),
        "closed_at": None,
        "outcome": None,
        "escalation": None,
    }
    session["conversations"][cid] = conv
    session["histories"][cid] = []
    session["contexts"][cid] = {
        "confidence": persona["initial_confidence"],
        "valence": persona["initial_valence"],
        "trend": "stable",
        "outstanding": list(persona["items"]),
        "confirmed": [],
        "revealed": [],
        "trajectory": [
            {
                "turn": 0,
                "confidence": persona["initial_confidence"],
                "valence": persona["initial_valence"],
                "signals": [],
            }
        ],
        "intent_hypothesis": None,
        "priority": "normal",
        "notes": "",
        "language": "en",
    }
    _message(session, cid, "customer", persona["opening"], 0)
    return {"conversation": _public(conv), "message": persona["opening"]}


@tool("write", fields=["conversations", "histories", "contexts"], returns=["reply", "context_delta"])
def send_message(session: dict, conversation_id: str, text: str) -> dict:
    """Send a message to the customer; returns their reply and how it changed the conversation context
    (confidence, valence, newly raised and resolved concerns, escalation).

    Args:
        conversation_id: the conversation, e.g. "CONV-1".
        text: your message (1-1000 characters).
    """
    conv = active(session, conversation_id)
    text = text.strip()
    if not 1 <= len(text) <= 1000:
        raise invalid_argument("text", "a message has 1 to 1000 characters")
    persona = session["personas"][conv["customer_id"]]
    ctx = session["contexts"][conversation_id]
    turn = conv["turn_count"] + 1
    delta = analyze(text, ctx, persona, session["lexicon"], turn, conv["patience"])
    conv["turn_count"] = turn
    _message(session, conversation_id, "agent", text, turn)
    apply_delta(ctx, delta, turn)
    answer = reply(text, turn, ctx, persona, delta, session["replies"])
    _message(session, conversation_id, "customer", answer, turn)
    if delta["escalate"]:
        conv["status"] = "escalated"
        conv["escalation"] = {
            "by": "customer",
            "team": "supervisor",
            "reason": "patience exhausted",
            "at": now(session),
        }
        conv["closed_at"] = now(session)
    items = persona["items"]
    report = {
        "confidence": delta["confidence"],
        "valence": delta["valence"],
        "mood": mood(ctx["valence"]),
        "trend": ctx["trend"],
        "newly_raised": [items[n]["description"] for n in delta["revealed"]],
        "newly_resolved": [items[n]["description"] for n in delta["resolved"]],
        "escalated": delta["escalate"],
    }
    return {"reply": answer, "context_delta": report, "turn": turn, "status": conv["status"]}


@tool("read", returns=["conversations", "count"])
def list_conversations(
    session: dict,
    customer_id: str | None = None,
    status: Literal["active", "resolved", "unresolved", "escalated"] | None = None,
) -> dict:
    """List conversation records (newest first), including past ones, by customer or status.

    Args:
        customer_id: only conversations with this customer.
        status: only conversations in this status.
    """
    rows = [
        _public(c)
        for c in session["conversations"].values()
        if (customer_id is None or c["customer_id"] == customer_id)
        and (status is None or c["status"] == status)
    ]
    rows.sort(key=lambda c: (c["started_at"], c["conversation_id"]), reverse=True)
    return {"conversations": rows, "count": len(rows)}


@tool("read", returns=["messages"])
def get_history(session: dict, conversation_id: str, last: int = 50) -> dict:
    """Show the message history of a conversation (oldest first).

    Args:
        conversation_id: the conversation.
        last: only the most recent this-many messages (1-200).
    """
    conversation(session, conversation_id)
    if not 1 <= last <= 200:
        raise invalid_argument("last", "must be between 1 and 200")
    return {"messages": session["histories"][conversation_id][-last:]}


@tool("read", returns=["conversation", "context"])
def get_context(session: dict, conversation_id: str) -> dict:
    """Show a conversation's record and its context variables: confidence, mood, trend, the concerns the
    customer raised and those resolved, and your own variables (intent_hypothesis, priority, notes, language).

    Args:
        conversation_id: the conversation.
    """
    conv = conversation(session, conversation_id)
    return {"conversation": _public(conv), "context": visible_context(session, conversation_id)}


def _check_value(session: dict[str, Any], key: str, value: str) -> str:
    if key == "intent_hypothesis" and value not in session["lexicon"]["intents"]:
        raise invalid_argument("value", f"intent must be one of {', '.join(session['lexicon']['intents'])}")
    if key == "priority" and value not in PRIORITIES:
        raise invalid_argument("value", f"priority must be one of {', '.join(PRIORITIES)}")
    if key == "language" and value not in LANGUAGES:
        raise invalid_argument("value", f"language must be one of {', '.join(LANGUAGES)}")
    if key == "notes" and len(value) > 500:
        raise invalid_argument("value", "notes are limited to 500 characters")
    return value


@tool("write", fields=["contexts"], returns=["context"])
def set_context(session: dict, conversation_id: str, key: str, value: str) -> dict:
    """Override one of your context variables: intent_hypothesis (your reading of what the customer really
    wants), priority, notes or language. The customer's own state (confidence, mood, concerns) is read-only.

    Args:
        conversation_id: the conversation.
        key: intent_hypothesis, priority, notes or language.
        value: the new value; intents are billing_dispute, technical_issue, cancel_service, reduce_cost,
            moving_home.
    """
    active(session, conversation_id)
    if key in PERSONA_KEYS:
        raise permission_denied(
            "support agent",
            f"override '{key}' of",
            f"conversation {conversation_id} (it is the customer's state)",
        )
    if key not in AGENT_KEYS:
        raise invalid_argument(
            "key", f"{echo(key)} is not a context variable; use {', '.join(sorted(AGENT_KEYS))}"
        )
    session["contexts"][conversation_id][key] = _check_value(session, key, value.strip())
    return {"context": visible_context(session, conversation_id)}


@tool("read", returns=["summary"])
def summarize_session(session: dict, conversation_id: str) -> dict:
    """Summarise a conversation with a trajectory analysis: confidence and mood per turn, overall trend,
    turns of deteriorating mood, concerns raised and resolved, and the outcome.

    Args:
        conversation_id: the conversation.
    """
    conv = conversation(session, conversation_id)
    ctx = session["contexts"][conversation_id]
    points = ctx["trajectory"]
    first, last = points[0], points[-1]
    drops = [p["turn"] for prev, p in pairwise(points) if p["valence"] < prev["valence"]]
    items = session["personas"][conv["customer_id"]]["items"]
    summary = {
        "conversation_id": conversation_id,
        "customer": conv["customer_name"],
        "status": conv["status"],
        "outcome": conv["outcome"],
        "turns": conv["turn_count"],
        "confidence": {
            "start": first["confidence"],
            "end": last["confidence"],
            "series": [p["confidence"] for p in points],
        },
        "valence": {
            "start": first["valence"],
            "end": last["valence"],
            "series": [p["valence"] for p in points],
        },
        "overall_trend": trend(last["valence"] - first["valence"]),
        "deteriorating_turns": drops,
        "concerns_raised": [items[n]["description"] for n in ctx["revealed"]],
        "concerns_resolved": [items[n]["description"] for n in ctx["confirmed"]],
        "intent_hypothesis": ctx["intent_hypothesis"],
        "escalation": conv["escalation"],
    }
    return {"summary": summary}


@tool("write", fields=["conversations", "histories"], returns=["conversation"])
def close_session(
    session: dict, conversation_id: str, outcome: Literal["resolved", "unresolved"], note: str
) -> dict:
    """End a conversation. "resolved" is accepted only when the customer has no open concerns left.

    Args:
        conversation_id: the conversation.
        outcome: resolved or unresolved.
        note: a closing note for the customer record (at least 10 characters).
    """
    conv = active(session, conversation_id)
    if len(note.strip()) < 10:
        raise invalid_argument("note", "write at least 10 characters")
    if outcome == "resolved" and session["contexts"][conversation_id]["outstanding"]:
        raise EnvError(
            ErrorCategory.INVALID_TRANSITION,
            f"conversation {conversation_id} cannot be closed as resolved: the customer still has open "
            "concerns. Keep talking, or close it as unresolved.",
            current="active",
            requested="resolved",
        )
    conv.update(status=outcome, outcome=outcome, closed_at=now(session), note=note.strip())
    _message(session, conversation_id, "system", f"Conversation closed ({outcome}).", conv["turn_count"])
    return {"conversation": _public(conv)}


@tool("write", fields=["conversations", "histories"], returns=["conversation"])
def escalate_session(
    session: dict,
    conversation_id: str,
    team: Literal["billing_specialist", "technical", "retention", "supervisor"],
    reason: str,
) -> dict:
    """Hand the conversation over to another team; it ends for you.

    Args:
        conversation_id: the conversation.
        team: who takes over.
        reason: why (at least 10 characters).
    """
    conv = active(session, conversation_id)
    if len(reason.strip()) < 10:
        raise invalid_argument("reason", "write at least 10 characters")
    conv.update(status="escalated", closed_at=now(session))
    conv["escalation"] = {"by": "agent", "team": team, "reason": reason.strip(), "at": now(session)}
    _message(session, conversation_id, "system", f"Escalated to {team}.", conv["turn_count"])
    return {"conversation": _public(conv)}
