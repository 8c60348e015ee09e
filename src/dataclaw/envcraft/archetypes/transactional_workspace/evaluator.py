"""The deterministic evaluator: weighted dimensions over the final session state and its action log."""

from __future__ import annotations

from typing import Any

from dataclaw.envcraft.runtime import Evaluator, Scenario, failed_actions, penalty_score, warned_actions

EVALUATOR = Evaluator()


def _get(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


@EVALUATOR.dimension("goal_state", 0.45, "expected ticket fields hold their target values", goal=True)
def goal_state(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    expected = scenario.evaluation.get("expected", {})
    checks = [(tid, f, v) for tid, fields in expected.items() for f, v in fields.items()]
    if not checks:
        return 1.0, "no expected fields"
    misses = [f"{tid}.{f}" for tid, f, v in checks if _get(state["tickets"].get(tid), f) != v]
    return 1 - len(misses) / len(checks), (
        "all expected fields match" if not misses else "wrong: " + ", ".join(misses)
    )


@EVALUATOR.dimension(
    "documentation", 0.2, "resolution notes and comments carry the required facts", goal=True
)
def documentation(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    checks: list[tuple[str, bool]] = []
    for tid, words in scenario.evaluation.get("note_keywords", {}).items():
        note = (_get(state["tickets"].get(tid), "resolution.note") or "").lower()
        checks += [(f"{tid} note '{w}'", w.lower() in note) for w in words]
    for tid, words in scenario.evaluation.get("comment_keywords", {}).items():
        comments = (state["tickets"].get(tid) or {}).get("comments", [])
        new = " ".join(c["body"].lower() for c in comments if c["author"] == state.get("workspace_account"))
        checks += [(f"{tid} comment '{w}'", w.lower() in new) for w in words]
    if not checks:
        return 1.0, "nothing to document"
    missing = [name for name, ok in checks if not ok]
    return 1 - len(missing) / len(checks), ("complete" if not missing else "missing: " + ", ".join(missing))


@EVALUATOR.dimension("collateral", 0.15, "tickets outside the task were not modified")
def collateral(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    untouched = set(scenario.evaluation.get("untouched", []))
    if not untouched:
        return 1.0, "no protected tickets"
    hit = sorted({e["ticket_id"] for e in state["audit_log"] if e["ticket_id"] in untouched})
    return 1 - len(hit) / len(untouched), ("none modified" if not hit else "modified: " + ", ".join(hit))


@EVALUATOR.dimension("policy_compliance", 0.1, "no forbidden attempts (permission or lifecycle violations)")
def policy_compliance(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    bad = failed_actions(state, "permission_denied", "invalid_transition")
    return penalty_score(len(bad), 0.34), f"{len(bad)} forbidden attempt(s)"


@EVALUATOR.dimension("information_freshness", 0.1, "no actions based on stale information")
def information_freshness(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    stale = warned_actions(state, "stale_information")
    return penalty_score(len(stale), 0.5), f"{len(stale)} action(s) on stale information"
