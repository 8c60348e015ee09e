"""The deterministic evaluator: weighted dimensions over the final machines, entities and logs."""

from __future__ import annotations

import json
from typing import Any

from dataclaw.envcraft.runtime import Evaluator, Scenario, failed_actions, penalty_score

EVALUATOR = Evaluator()


def _by_label(state: dict[str, Any], machine_id: str, label: str) -> dict[str, Any] | None:
    for e in state["entities"].values():
        if e["machine_id"] == machine_id and e["label"].casefold() == label.casefold():
            return e
    return None


@EVALUATOR.dimension(
    "goal_state", 0.45, "entities ended in their expected states with the expected data", goal=True
)
def goal_state(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    ev = scenario.evaluation
    checks: list[tuple[str, Any, Any]] = []
    for eid, want in ev.get("expected_states", {}).items():
        e = state["entities"].get(eid)
        checks.append((eid, e["current_state"] if e else None, want))
    for mid, labels in ev.get("expected_by_label", {}).items():
        for label, want in labels.items():
            e = _by_label(state, mid, label)
            checks.append((label, e["current_state"] if e else None, want))
    for eid, fields in ev.get("expected_data", {}).items():
        data = (state["entities"].get(eid) or {}).get("data", {})
        checks += [(f"{eid}.data.{k}", data.get(k), v) for k, v in fields.items()]
    if not checks:
        return 1.0, "no expected states"
    wrong = [f"{name}: {got!r} (want {want!r})" for name, got, want in checks if got != want]
    return 1 - len(wrong) / len(checks), ("all in place" if not wrong else "; ".join(wrong))


def _edge_key(t: dict[str, Any]) -> tuple[str, str, str, str]:
    return t["source"], t["target"], t["trigger"], json.dumps(t.get("guard") or {}, sort_keys=True)


@EVALUATOR.dimension(
    "machine_definition", 0.25, "declared machines match the requested definition", goal=True
)
def machine_definition(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    specs = scenario.evaluation.get("machines", {})
    if not specs:
        return 1.0, "no machine to define"
    checks: list[tuple[str, bool]] = []
    for mid, spec in specs.items():
        m = state["machines"].get(mid)
        if m is None:
            checks.append((f"{mid} exists", False))
            continue
        checks.append((f"{mid} states", set(m["states"]) == set(spec["states"])))
        checks.append((f"{mid} initial", set(m["initial_states"]) == set(spec["initial_states"])))
        checks.append((f"{mid} terminal", set(m["terminal_states"]) == set(spec["terminal_states"])))
        have = {_edge_key(t) for t in m["transitions"]}
        for t in spec["transitions"]:
            checks.append((f"{mid} edge {t['source']}→{t['target']}", _edge_key(t) in have))
        extra = have - {_edge_key(t) for t in spec["transitions"]}
        checks.append((f"{mid} no extra edges", not extra))
        for st, hooks in spec.get("hooks", {}).items():
            for phase, wanted in hooks.items():
                got = (m["states"].get(st) or {}).get(phase, [])
                checks.append((f"{mid} {st}.{phase}", got == wanted))
    bad = [name for name, ok in checks if not ok]
    return 1 - len(bad) / len(checks), ("definition complete" if not bad else "wrong: " + ", ".join(bad))


@EVALUATOR.dimension("collateral", 0.15, "entities outside the task were not transitioned or edited")
def collateral(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    untouched = scenario.evaluation.get("untouched", [])
    if not untouched:
        return 1.0, "no protected entities"
    moved = {t["entity_id"] for t in state["transition_log"]}
    edited = {
        a["params"].get("entity_id")
        for a in state["actions"]
        if a["tool"] == "update_entity_data" and a.get("status") == "ok"
    }
    hit = sorted(set(untouched) & (moved | edited))
    return 1 - len(hit) / len(untouched), ("none touched" if not hit else "touched: " + ", ".join(hit))


@EVALUATOR.dimension("constraint_respect", 0.15, "no transitions attempted against the machine's guards")
def constraint_respect(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    bad = failed_actions(state, "invalid_transition")
    return penalty_score(len(bad), 0.34), f"{len(bad)} blocked or impossible transition attempt(s)"
