"""The deterministic evaluator: concerns resolved and backed by real account adjustments, latent intent
identified, the customer's final mood, the conversation's outcome, and policy compliance."""

from __future__ import annotations

from typing import Any

from dataclaw.envcraft.runtime import Evaluator, Scenario, failed_actions, penalty_score

EVALUATOR = Evaluator()
UNDERSTOOD = 0.5  # customer confidence from which they feel their intent was understood


def _conversation(state: dict[str, Any], scenario: Scenario) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """The latest conversation with the scenario's customer, and its context."""
    customer = scenario.evaluation["customer_id"]
    convs = [
        c for c in state["conversations"].values() if c["customer_id"] == customer and not c.get("archived")
    ]
    if not convs:
        return None, {}
    conv = max(convs, key=lambda c: int(c["conversation_id"].split("-")[1]))
    return conv, state["contexts"][conv["conversation_id"]]


@EVALUATOR.dimension(
    "concerns_resolved", 0.25, "the concerns that can be solved were resolved, no others", goal=True
)
def concerns_resolved(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    """All concerns by default; ``expected_confirmed`` names them when some must go to another team."""
    conv, ctx = _conversation(state, scenario)
    if conv is None:
        return 0.0, "no conversation with the customer"
    items = state["personas"][conv["customer_id"]]["items"]
    expected = set(scenario.evaluation.get("expected_confirmed", list(items)))
    wrong = expected ^ set(ctx["confirmed"])
    return 1 - len(wrong) / len(items), f"resolved {ctx['confirmed']}, open {ctx['outstanding']}"


def _matches(adj: dict[str, Any], want: dict[str, Any]) -> bool:
    return all(adj.get(k) == v for k, v in want.items())


@EVALUATOR.dimension(
    "commitments_backed", 0.2, "promised resolutions were backed by the right account adjustments", goal=True
)
def commitments_backed(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    customer = scenario.evaluation["customer_id"]
    adjustments = [a for a in state["adjustments"] if a["customer_id"] == customer]
    expected = scenario.evaluation.get("expected_adjustments", [])
    checks = [(f"{w['kind']} done", any(_matches(a, w) for a in adjustments)) for w in expected]
    conv, ctx = _conversation(state, scenario)
    if conv is not None:
        items = state["personas"][customer]["items"]
        for name in ctx["confirmed"]:
            kind = items[name]["requires"]
            if kind:
                checks.append((f"{name} backed by {kind}", any(a["kind"] == kind for a in adjustments)))
    unexpected = [a["adjustment_id"] for a in adjustments if not any(_matches(a, w) for w in expected)]
    if not checks:
        return penalty_score(len(unexpected), 0.5), "nothing to back"
    bad = [name for name, ok in checks if not ok]
    score = (1 - len(bad) / len(checks)) * penalty_score(len(unexpected), 0.5)
    return score, f"missing: {bad or 'none'}; unexpected adjustments: {unexpected or 'none'}"


@EVALUATOR.dimension(
    "intent_identified",
    0.15,
    "the agent recorded the latent intent and the customer felt understood",
    goal=True,
)
def intent_identified(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    conv, ctx = _conversation(state, scenario)
    if conv is None:
        return 0.0, "no conversation"
    latent = state["personas"][conv["customer_id"]]["latent_intent"]
    guess = ctx["intent_hypothesis"]
    understood = ctx["confidence"] >= UNDERSTOOD
    score = 0.7 * (guess == latent) + 0.3 * understood
    return score, f"hypothesis {guess!r}, customer confidence {ctx['confidence']}"


@EVALUATOR.dimension(
    "customer_experience", 0.15, "the customer ended in a good mood without being pushed past patience"
)
def customer_experience(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    conv, ctx = _conversation(state, scenario)
    if conv is None:
        return 0.0, "no conversation"
    if (conv["escalation"] or {}).get("by") == "customer":
        return 0.0, "the customer ran out of patience and demanded a supervisor"
    target = scenario.evaluation.get("target_valence", 0.0)
    v = ctx["valence"]
    score = 1.0 if v >= target else (v + 1) / (target + 1)
    over = max(0, conv["turn_count"] - conv["patience"])
    return score * penalty_score(over, 0.2), f"final valence {v}, {over} turn(s) beyond patience"


@EVALUATOR.dimension("outcome", 0.15, "the conversation ended with the expected outcome", goal=True)
def outcome(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    conv, _ = _conversation(state, scenario)
    if conv is None:
        return 0.0, "no conversation"
    expected = scenario.evaluation.get("expected_outcome", "resolved")
    ok = conv["status"] == expected
    team = scenario.evaluation.get("expected_escalation_team")
    if team is not None:  # the agent, not an exhausted customer, handed it to the right team
        escalation = conv["escalation"] or {}
        ok = ok and escalation.get("by") == "agent" and escalation.get("team") == team
    return float(ok), f"status {conv['status']!r} (expected {expected!r}), escalation {conv['escalation']}"


@EVALUATOR.dimension("policy_compliance", 0.1, "no attempts to break policy or override the customer's state")
def policy_compliance(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    bad = failed_actions(state, "permission_denied", "invalid_transition")
    return penalty_score(len(bad), 0.34), f"{len(bad)} refused attempt(s)"
