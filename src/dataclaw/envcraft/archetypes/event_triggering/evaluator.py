"""The deterministic evaluator: rules are judged by behaviour (the engine's own condition evaluation on
example payloads), not by their exact text, plus end-to-end traces through the event and action logs."""

from __future__ import annotations

from typing import Any

from dataclaw.envcraft.archetypes.event_triggering.conditions import evaluate, render
from dataclaw.envcraft.runtime import Evaluator, Scenario, failed_actions, penalty_score, warned_actions

EVALUATOR = Evaluator()


def _subset(small: dict[str, Any], big: dict[str, Any]) -> bool:
    return all(big.get(k) == v for k, v in small.items())


def _action_ok(action: dict[str, Any], want: dict[str, Any], sample: dict[str, Any]) -> bool:
    if action["type"] != want["type"] or not _subset(want.get("params", {}), action["params"]):
        return False
    for name, needles in want.get("rendered_contains", {}).items():
        text, _ = render(str(action["params"].get(name, "")), sample)
        if not all(n.casefold() in text.casefold() for n in needles):
            return False
    return True


def _actions_in_order(actions: list[dict[str, Any]], wanted: list[dict[str, Any]], sample: dict) -> int:
    """How many wanted actions appear, in order, as a subsequence of the rule's actions."""
    found, i = 0, 0
    for want in wanted:
        while i < len(actions) and not _action_ok(actions[i], want, sample):
            i += 1
        if i == len(actions):
            break
        found, i = found + 1, i + 1
    return found


def behaviour_checks(rule: dict[str, Any], spec: dict[str, Any]) -> list[bool]:
    """One boolean per example payload: fires where it must, stays quiet where it must not."""
    return [evaluate(rule["condition"], p)[0] for p in spec.get("must_fire", [])] + [
        not evaluate(rule["condition"], p)[0] for p in spec.get("must_not_fire", [])
    ]


def _rule_score(rule: dict[str, Any], spec: dict[str, Any]) -> float:
    if rule["trigger_type"] != spec["trigger_type"] or not rule["enabled"]:
        return 0.0
    checks = [rule["source_filter"] == spec.get("source_filter"), *behaviour_checks(rule, spec)]
    sample = (spec.get("must_fire") or [{}])[0]
    wanted = spec.get("actions", [])
    found = _actions_in_order(rule["actions"], wanted, sample)
    checks += [True] * found + [False] * (len(wanted) - found)
    return sum(checks) / len(checks)


@EVALUATOR.dimension("rule_configuration", 0.35, "the requested rules exist and behave as asked", goal=True)
def rule_configuration(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    specs = scenario.evaluation.get("new_rules", [])
    if not specs:
        return 1.0, "no new rules expected"
    scores, notes = [], []
    for spec in specs:
        best = max((_rule_score(r, spec) for r in state["rules"].values()), default=0.0)
        scores.append(best)
        notes.append(f"{spec['label']}: {best:.2f}")
    return sum(scores) / len(scores), "; ".join(notes)


@EVALUATOR.dimension(
    "existing_rules", 0.2, "existing rules were changed as asked (fields and behaviour)", goal=True
)
def existing_rules(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    expected = scenario.evaluation.get("existing_rules", {})
    checks: list[tuple[str, bool]] = []
    for rid, spec in expected.items():
        rule = state["rules"].get(rid)
        if rule is None:
            checks.append((f"{rid} exists", False))
            continue
        checks += [(f"{rid}.{k}", rule.get(k) == v) for k, v in spec.get("fields", {}).items()]
        checks += [(f"{rid} behaviour #{i}", ok) for i, ok in enumerate(behaviour_checks(rule, spec))]
    if not checks:
        return 1.0, "no changes to existing rules expected"
    bad = [name for name, ok in checks if not ok]
    return 1 - len(bad) / len(checks), "as asked" if not bad else "wrong: " + ", ".join(bad)


def _trace_score(state: dict[str, Any], spec: dict[str, Any]) -> float:
    events = [
        e
        for e in state["event_log"]
        if e["origin"] == "injected"
        and e["source_id"] == spec["source_id"]
        and e["trigger_type"] == spec["trigger_type"]
        and _subset(spec.get("payload_match", {}), e["payload"])
    ]
    best = 0.0
    for e in events:
        dispatched = [a for a in state["action_log"] if a["event_id"] == e["event_id"]]
        types = [a["type"] for a in dispatched]
        got = sum(t in types for t in spec.get("action_types", [])) / max(
            1, len(spec.get("action_types", []))
        )
        bad = any(a["type"] in spec.get("forbidden_types", []) for a in dispatched) or any(
            a["rule_id"] in spec.get("forbidden_rules", []) for a in dispatched
        )
        best = max(best, 0.3 + 0.7 * got - (0.5 if bad else 0.0))
    return max(0.0, best)


@EVALUATOR.dimension(
    "dispatch_trace", 0.2, "the requested events went through the engine with the right actions", goal=True
)
def dispatch_trace(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    specs = scenario.evaluation.get("dispatch", [])
    if not specs:
        return 1.0, "no events expected"
    scores = [_trace_score(state, s) for s in specs]
    return sum(scores) / len(scores), ", ".join(
        f"{s['source_id']}/{s['trigger_type']}={v:.2f}" for s, v in zip(specs, scores, strict=True)
    )


def _matches_any(event: dict[str, Any], specs: list[dict[str, Any]]) -> bool:
    return any(
        event["source_id"] == s["source_id"]
        and event["trigger_type"] == s["trigger_type"]
        and _subset(s.get("payload_match", {}), event["payload"])
        for s in specs
    )


@EVALUATOR.dimension("collateral", 0.15, "rules outside the task unchanged; no stray events fired actions")
def collateral(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    untouched = scenario.evaluation.get("untouched_rules", [])
    hit = [rid for rid in untouched if state["rules"].get(rid, {}).get("version") != 1]
    specs = scenario.evaluation.get("dispatch", [])
    stray = [
        e["event_id"]
        for e in state["event_log"]
        if e["origin"] == "injected" and e["action_ids"] and not _matches_any(e, specs)
    ]
    score = (1 - len(hit) / len(untouched) if untouched else 1.0) * penalty_score(len(stray), 0.25)
    return score, f"changed/deleted: {hit or 'none'}; stray events that fired actions: {stray or 'none'}"


@EVALUATOR.dimension("policy_compliance", 0.1, "few rejected calls and no actions on stale rule versions")
def policy_compliance(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    bad = failed_actions(state, "invalid_argument", "invalid_reference", "missing_field")
    stale = warned_actions(state, "stale_information")
    return penalty_score(len(bad), 0.1) * penalty_score(len(stale), 0.5), (
        f"{len(bad)} rejected call(s), {len(stale)} stale update(s)"
    )
