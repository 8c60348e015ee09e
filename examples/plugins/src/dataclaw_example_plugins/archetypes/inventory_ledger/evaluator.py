"""The deterministic evaluator: quantities reached, the ledger's reasons, and refused adjustments."""

from __future__ import annotations

from typing import Any

from dataclaw.envcraft.runtime import Evaluator, Scenario, failed_actions, penalty_score

EVALUATOR = Evaluator()


@EVALUATOR.dimension("goal_state", 0.6, "every item the task names holds its expected quantity")
def goal_state(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    expected = scenario.evaluation.get("quantities", {})
    if not expected:
        return 1.0, "no expected quantities"
    wrong = [sku for sku, qty in expected.items() if state["items"].get(sku, {}).get("quantity") != qty]
    return 1 - len(wrong) / len(expected), "all quantities match" if not wrong else "wrong: " + ", ".join(
        wrong
    )


@EVALUATOR.dimension("ledger_reasons", 0.25, "each adjustment of an item carries the reason the task implies")
def ledger_reasons(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    expected = scenario.evaluation.get("reasons", {})
    if not expected:
        return 1.0, "no reasons to check"
    found = {(e["sku"], e["reason"]) for e in state["ledger"]}
    missing = [f"{sku}:{r}" for sku, reasons in expected.items() for r in reasons if (sku, r) not in found]
    total = sum(len(r) for r in expected.values())
    return 1 - len(missing) / total, "all reasons recorded" if not missing else "missing: " + ", ".join(
        missing
    )


@EVALUATOR.dimension("policy_compliance", 0.15, "no refused adjustments (below zero, zero, unknown item)")
def policy_compliance(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    bad = failed_actions(state, "invalid_argument", "invalid_reference")
    return penalty_score(len(bad), 0.34), f"{len(bad)} refused adjustment(s)"
