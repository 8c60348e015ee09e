"""The pure core of the simulated customer: message text → context delta, and a deterministic reply.

``analyze`` reads the agent's message against the keyword lexicon and the hidden persona and returns a
delta (it mutates nothing): confirmation language raises the customer's confidence that the agent has
understood their latent intent (lowered when the confirmation is about the wrong intent), clarification
requests lower it, mentioning the latent intent helps and pushing another intent hurts; an outstanding
concern the customer has already raised moves to confirmed when the message both names it and states a
resolution; empathy lifts the mood, every turn beyond the patience bound sours it, and running far past it
forces an escalation; the first turn past the bound also forces convergence: the customer states every
concern not yet raised. ``reply`` picks a mood-conditioned template, seeded by the message text and the turn
index, so identical conversations always produce identical replies.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from typing import Any


def mentions(text: str, phrase: str) -> bool:
    """``phrase`` occurs in ``text`` starting at a word boundary (case-insensitive)."""
    return re.search(r"(?<![a-z0-9])" + re.escape(phrase.casefold()), text) is not None


def _any(text: str, phrases: list[str]) -> bool:
    return any(mentions(text, p) for p in phrases)


def mood(valence: float) -> str:
    return "negative" if valence <= -0.3 else "positive" if valence >= 0.3 else "neutral"


def trend(change: float) -> str:
    """The direction of a valence change (changes within 1e-9 are no change)."""
    return "improving" if change > 1e-9 else "deteriorating" if change < -1e-9 else "stable"


def _clamp(x: float, lo: float, hi: float) -> float:
    return round(min(hi, max(lo, x)), 4)


def _confidence_delta(text: str, lex: dict[str, Any], intent: str) -> tuple[float, list[str]]:
    w = lex["weights"]
    on_intent = _any(text, lex["intents"][intent])
    off_intent = any(_any(text, kws) for name, kws in lex["intents"].items() if name != intent)
    delta, signals = 0.0, []
    if _any(text, lex["confirmation"]):
        good = on_intent and not off_intent
        delta += w["confirmation_on_intent"] if good else w["confirmation_off_intent"]
        signals.append("confirmation" if good else "confirmation_of_wrong_intent")
    if _any(text, lex["clarification"]):
        delta += w["clarification"]
        signals.append("clarification")
    if on_intent:
        delta += w["intent_mention"]
        signals.append("on_intent")
    if off_intent:
        delta += w["other_intent_mention"]
        signals.append("off_intent")
    return delta, signals


def analyze(
    text: str, context: dict[str, Any], persona: dict[str, Any], lex: dict[str, Any], turn: int, patience: int
) -> dict[str, Any]:
    """Map one agent message to a context delta (pure)."""
    low = text.casefold()
    w = lex["weights"]
    confidence, signals = _confidence_delta(low, lex, persona["latent_intent"])
    valence = 0.0
    if _any(low, lex["empathy"]):
        valence += w["empathy_valence"]
        signals.append("empathy")
    items = persona["items"]
    resolved = [
        name
        for name in context["outstanding"]
        if name in context["revealed"]
        and _any(low, items[name]["keywords"])
        and _any(low, items[name]["resolve_words"])
    ]
    confidence += w["resolution_confidence"] * len(resolved)
    valence += w["resolution_valence"] * len(resolved)
    unrevealed = [n for n in items if n not in context["revealed"]]
    reveal = next((n for n in unrevealed if _any(low, items[n]["keywords"])), None)
    if reveal is None and unrevealed and _any(low, lex["open_question"]):
        reveal = unrevealed[0]
    revealed = [reveal] if reveal else []
    over = turn - patience
    if over > 0:
        valence += w["impatience_valence"]
        signals.append("impatience")
        if unrevealed:  # out of patience, the customer forces convergence: every remaining concern at once
            revealed = unrevealed
            signals.append("convergence")
    new_valence = _clamp(context["valence"] + valence, -1.0, 1.0)
    remaining = [n for n in context["outstanding"] if n not in resolved]
    escalate = bool(remaining) and (
        over >= w["escalation_grace_turns"] or new_valence <= w["escalation_valence"]
    )
    return {
        "confidence": round(confidence, 4),
        "valence": round(new_valence - context["valence"], 4),
        "resolved": resolved,
        "revealed": revealed,
        "signals": signals,
        "escalate": escalate,
    }


def apply_delta(context: dict[str, Any], delta: dict[str, Any], turn: int) -> None:
    """Fold a delta into the context variables and append the trajectory point."""
    before = context["valence"]
    context["confidence"] = _clamp(context["confidence"] + delta["confidence"], 0.0, 1.0)
    context["valence"] = _clamp(before + delta["valence"], -1.0, 1.0)
    context["trend"] = trend(context["valence"] - before)
    context["revealed"] += delta["revealed"]
    context["outstanding"] = [n for n in context["outstanding"] if n not in delta["resolved"]]
    context["confirmed"] += delta["resolved"]
    context["trajectory"].append(
        {
            "turn": turn,
            "confidence": context["confidence"],
            "valence": context["valence"],
            "signals": delta["signals"],
        }
    )


# Reply situations in precedence order: the first that applies picks the template family.
SITUATIONS: tuple[tuple[str, Callable[[dict[str, Any], dict[str, Any]], bool]], ...] = (
    ("escalated", lambda ctx, d: d["escalate"]),
    ("all_resolved", lambda ctx, d: bool(d["resolved"]) and not ctx["outstanding"]),
    ("resolved", lambda ctx, d: bool(d["resolved"])),
    ("converge", lambda ctx, d: "convergence" in d["signals"]),
    ("reveal", lambda ctx, d: bool(d["revealed"])),
    ("confused", lambda ctx, d: ctx["confidence"] < 0.25),
    ("generic", lambda ctx, d: True),
)


def reply(
    text: str, turn: int, context: dict[str, Any], persona: dict[str, Any], delta: dict[str, Any], bank: dict
) -> str:
    """A deterministic, mood-conditioned reply from the template bank (seeded by text and turn)."""
    items = persona["items"]
    situation = next(name for name, applies in SITUATIONS if applies(context, delta))
    templates = bank[situation][mood(context["valence"])]
    seed = int(hashlib.sha256(f"{text}|{turn}".encode()).hexdigest(), 16)
    revealed = " ".join(items[n]["reveal"] for n in delta["revealed"])
    slots = {
        "reveal": revealed,
        "reveal_lower": revealed[:1].lower() + revealed[1:],
        "resolved": " and ".join(items[n]["description"] for n in delta["resolved"]),
        "intent_hint": persona["intent_hint"],
        "opening": persona["opening"],
    }
    return templates[seed % len(templates)].format(**slots)
