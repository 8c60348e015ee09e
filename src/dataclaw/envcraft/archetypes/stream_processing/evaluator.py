"""The deterministic evaluator: weighted dimensions over the final queues, streams, subscriptions and log."""

from __future__ import annotations

from typing import Any

from dataclaw.envcraft.runtime import Evaluator, Scenario, failed_actions, penalty_score

EVALUATOR = Evaluator()


def _subset(want: dict[str, Any], got: dict[str, Any]) -> bool:
    return all(k in got and got[k] == v and type(got[k]) is type(v) for k, v in want.items())


def _find_subs(state: dict[str, Any], want: dict[str, Any]) -> list[dict[str, Any]]:
    """Subscriptions matching an expectation, by id or by (subscriber, stream) among active ones."""
    subs = state["subscriptions"]
    if "subscription_id" in want:
        return [subs[want["subscription_id"]]] if want["subscription_id"] in subs else []
    return [
        s
        for s in subs.values()
        if s["subscriber"] == want["subscriber"]
        and s["stream_id"] == want["stream_id"]
        and s["status"] == "active"
    ]


def _score(checks: list[tuple[str, bool]], empty: str) -> tuple[float, str]:
    if not checks:
        return 1.0, empty
    misses = [name for name, ok in checks if not ok]
    return 1 - len(misses) / len(checks), ("as expected" if not misses else "wrong: " + ", ".join(misses))


@EVALUATOR.dimension(
    "queue_state", 0.35, "pending queues hold exactly the events still to be processed", goal=True
)
def queue_state(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    checks = []
    for want in scenario.evaluation.get("queues", []):
        label = want.get("subscription_id") or f"{want['subscriber']}@{want['stream_id']}"
        subs = _find_subs(state, want)
        if len(subs) != 1:
            checks.append((f"{label} ({len(subs)} matching subscriptions)", False))
            continue
        pending = [state["events"][e] for e in subs[0]["pending"]]
        if "pending" in want:
            checks.append(
                (f"{label} pending ids", sorted(e["event_id"] for e in pending) == sorted(want["pending"]))
            )
        if "pending_payloads" in want:
            ok = len(pending) == len(want["pending_payloads"]) and all(
                any(_subset(w, e["payload"]) for e in pending) for w in want["pending_payloads"]
            )
            checks.append((f"{label} pending events ({len(pending)})", ok))
    return _score(checks, "no queue expectations")


@EVALUATOR.dimension(
    "publications", 0.25, "each expected event was published exactly once, with its priority", goal=True
)
def publications(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    agent = [e for e in state["events"].values() if e.get("origin") == "agent"]
    checks = []
    expected = scenario.evaluation.get("events", [])
    for want in expected:
        hits = [
            e for e in agent if e["stream_id"] == want["stream_id"] and _subset(want["match"], e["payload"])
        ]
        ok = len(hits) == 1 and hits[0]["priority"] == want["priority"]
        checks.append((f"{want['stream_id']} {want['match']} ×{len(hits)}", ok))
    for stream_id in sorted({w["stream_id"] for w in expected}):
        n_want = sum(1 for w in expected if w["stream_id"] == stream_id)
        n_got = sum(1 for e in agent if e["stream_id"] == stream_id)
        checks.append((f"{stream_id}: {n_got} agent events for {n_want} expected", n_got == n_want))
    return _score(checks, "no publications expected")


@EVALUATOR.dimension(
    "topology", 0.2, "streams and subscriptions have the expected contracts and settings", goal=True
)
def topology(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    checks = []
    for want in scenario.evaluation.get("streams", []):
        s = state["streams"].get(want["stream_id"])
        checks.append((f"stream {want['stream_id']}", s is not None and s["schema"] == want["schema"]))
    for want in scenario.evaluation.get("subscriptions", []):
        label = want.get("subscription_id") or f"{want['subscriber']}@{want['stream_id']}"
        subs = _find_subs(state, want)
        settings = {k: v for k, v in want.items() if k not in ("subscription_id", "subscriber", "stream_id")}
        checks.append((label, len(subs) == 1 and all(subs[0].get(k) == v for k, v in settings.items())))
    return _score(checks, "no topology expectations")


@EVALUATOR.dimension(
    "delivery_discipline", 0.2, "no refused deliveries/acks, no schema violations, no lost events"
)
def delivery_discipline(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    refused = failed_actions(state, "invalid_transition")
    schema = [a for a in failed_actions(state, "invalid_argument") if a.get("tool") == "publish_event"]
    allowed = set(scenario.evaluation.get("allowed_drops", []))
    lost = [e for sid, s in state["subscriptions"].items() if sid not in allowed for e in s["dropped"]]
    n = len(refused) + len(schema) + len(lost)
    return penalty_score(n, 0.25), (
        f"{len(refused)} refused operation(s), {len(schema)} schema violation(s), "
        f"{len(lost)} event(s) dropped"
    )
