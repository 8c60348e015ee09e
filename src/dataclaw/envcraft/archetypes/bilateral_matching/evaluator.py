"""The deterministic evaluator: weighted dimensions over the final pools, match records and action log."""

from __future__ import annotations

from typing import Any

from dataclaw.envcraft.runtime import Evaluator, Scenario, failed_actions, penalty_score, warned_actions

EVALUATOR = Evaluator()


def _find(state: dict[str, Any], want: dict[str, Any]) -> dict[str, Any] | None:
    for m in state["matches"].values():
        if (m["pool_id"], m["supply_id"], m["demand_id"]) == (
            want["pool_id"],
            want["supply_id"],
            want["demand_id"],
        ):
            return m
    return None


@EVALUATOR.dimension(
    "goal_state", 0.45, "the expected matches were accepted or rejected, and no others accepted", goal=True
)
def goal_state(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    decisions = scenario.evaluation.get("decisions", [])
    if not decisions:
        return 1.0, "no decisions expected"
    checks: list[tuple[str, bool]] = []
    for want in decisions:
        m = _find(state, want)
        name = f"{want['supply_id']}→{want['demand_id']} {want['status']}"
        ok = m is not None and m["status"] == want["status"]
        if ok and want.get("note_contains"):
            ok = want["note_contains"].casefold() in (m["note"] or "").casefold()
        checks.append((name, ok))
    pools = {d["pool_id"] for d in decisions}
    wanted = {(d["pool_id"], d["supply_id"], d["demand_id"]) for d in decisions if d["status"] == "accepted"}
    for m in state["matches"].values():
        key = (m["pool_id"], m["supply_id"], m["demand_id"])
        if m["pool_id"] in pools and m["status"] == "accepted" and key not in wanted:
            checks.append((f"unexpected acceptance {m['supply_id']}→{m['demand_id']}", False))
    bad = [n for n, ok in checks if not ok]
    return 1 - len(bad) / len(checks), ("all decisions right" if not bad else "wrong: " + ", ".join(bad))


@EVALUATOR.dimension("pool_setup", 0.2, "pools carry the requested criteria, top-K and candidates", goal=True)
def pool_setup(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    specs = scenario.evaluation.get("pools", {})
    if not specs:
        return 1.0, "no pool to set up"
    checks: list[tuple[str, bool]] = []
    for pid, spec in specs.items():
        p = state["pools"].get(pid)
        if p is None:
            checks.append((f"{pid} exists", False))
            continue
        if "criteria" in spec:
            got = p["criteria"]
            same = set(got) == set(spec["criteria"]) and all(
                abs(got[k] - spec["criteria"][k]) < 1e-9 for k in got
            )
            checks.append((f"{pid} criteria", same))
        if "top_k" in spec:
            checks.append((f"{pid} top_k", p["top_k"] == spec["top_k"]))
        for side in ("supply", "demand"):
            if side in spec:
                checks.append((f"{pid} {side}", set(p[side]) == set(spec[side])))
        for cid, attrs in spec.get("attributes", {}).items():
            member = p["supply"].get(cid) or p["demand"].get(cid) or {}
            checks.append((f"{cid} attributes", member.get("attributes") == attrs))
    bad = [n for n, ok in checks if not ok]
    return 1 - len(bad) / len(checks), ("set up as asked" if not bad else "wrong: " + ", ".join(bad))


@EVALUATOR.dimension("collateral", 0.15, "pools outside the task got no new candidates or matches")
def collateral(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    protected = scenario.evaluation.get("untouched_pools", [])
    if not protected:
        return 1.0, "no protected pools"
    hit = {m["pool_id"] for m in state["matches"].values() if m["pool_id"] in protected}
    hit |= {
        a["params"].get("pool_id")
        for a in state["actions"]
        if a["tool"] == "add_candidate"
        and a.get("status") == "ok"
        and a["params"].get("pool_id") in protected
    }
    return 1 - len(hit) / len(protected), ("untouched" if not hit else "touched: " + ", ".join(sorted(hit)))


@EVALUATOR.dimension(
    "policy_compliance", 0.15, "no refused decisions (double placement, re-deciding a match)"
)
def policy_compliance(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    bad = failed_actions(state, "invalid_transition")
    return penalty_score(len(bad), 0.34), f"{len(bad)} refused decision(s)"


@EVALUATOR.dimension("information_freshness", 0.1, "no acceptance based on a ranking the pool has outdated")
def information_freshness(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    stale = warned_actions(state, "stale_information")
    return penalty_score(len(stale), 0.5), f"{len(stale)} decision(s) on a stale ranking"
