"""The deterministic evaluator: weighted dimensions over the final pipelines, fleet, messages and log."""

from __future__ import annotations

from typing import Any

from dataclaw.envcraft.runtime import Evaluator, Scenario, failed_actions, penalty_score

EVALUATOR = Evaluator()


def _stage_statuses(p: dict[str, Any]) -> dict[str, str]:
    return {s["stage_id"]: s["status"] for s in p["stages"]}


def _defined_matches(p: dict[str, Any], want: dict[str, Any]) -> list[str]:
    """Misses of an agent-defined pipeline against the expected shape (deps compared by action label)."""
    misses = []
    if p["mode"] != want["mode"]:
        misses.append(f"mode {p['mode']}")
    if p["status"] != want["status"]:
        misses.append(f"status {p['status']}")
    action = {s["stage_id"]: s["action"] for s in p["stages"]}
    deps = {s["action"]: sorted(action[d] for d in s["depends_on"]) for s in p["stages"]}
    expected = {a: sorted(d) for a, d in want["dependencies"].items()}
    if deps != expected:
        misses.append("dependency structure")
    policies = {s["action"]: s["on_failure"] for s in p["stages"]}
    misses += [
        f"{a} policy {policies.get(a)}"
        for a, pol in want.get("policies", {}).items()
        if policies.get(a) != pol
    ]
    return misses


@EVALUATOR.dimension(
    "pipeline_outcome", 0.4, "pipelines and their stages ended in the expected statuses", goal=True
)
def pipeline_outcome(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    ev = scenario.evaluation
    checks: list[tuple[str, bool]] = []
    for pid, want in ev.get("expected", {}).items():
        p = state["pipelines"].get(pid)
        checks.append((f"{pid} status", p is not None and p["status"] == want["status"]))
        got = _stage_statuses(p) if p else {}
        checks += [(f"{pid}.{sid}", got.get(sid) == st) for sid, st in want.get("stages", {}).items()]
    for want in ev.get("expected_defined", []):
        candidates = [
            p
            for p in state["pipelines"].values()
            if p["origin"] == "agent" and all(p["parameters"].get(k) == v for k, v in want["match"].items())
        ]
        best = min(
            (_defined_matches(p, want) for p in candidates), key=len, default=["no such pipeline defined"]
        )
        label = "defined pipeline " + ",".join(f"{k}={v}" for k, v in want["match"].items())
        checks.append((f"{label}: {'; '.join(best)}", not best))
    if not checks:
        return 1.0, "nothing expected"
    misses = [name for name, ok in checks if not ok]
    return 1 - len(misses) / len(checks), ("as expected" if not misses else "wrong: " + ", ".join(misses))


@EVALUATOR.dimension(
    "rollback_correctness", 0.2, "exactly the expected compensations, in reverse topological order", goal=True
)
def rollback_correctness(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    expected = scenario.evaluation.get("expected_compensations", {})
    actual = {
        pid: [c["stage_id"] for c in p["rollback"]["compensations"]]
        for pid, p in state["pipelines"].items()
        if p["rollback"] is not None
    }
    keys = sorted(set(expected) | set(actual))
    if not keys:
        return 1.0, "no rollback expected or done"
    wrong = [pid for pid in keys if pid not in actual or actual[pid] != expected.get(pid)]
    return 1 - len(wrong) / len(keys), ("correct" if not wrong else "wrong rollback of: " + ", ".join(wrong))


@EVALUATOR.dimension(
    "worker_fleet", 0.15, "the worker registry holds exactly the expected changes", goal=True
)
def worker_fleet(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    ev = scenario.evaluation
    checks = [(f"{w} registered", w in state["workers"]) for w in ev.get("registered", [])]
    checks += [(f"{w} deregistered", w not in state["workers"]) for w in ev.get("deregistered", [])]
    if not checks:
        return 1.0, "no fleet expectations"
    misses = [name for name, ok in checks if not ok]
    return 1 - len(misses) / len(checks), ("as expected" if not misses else "wrong: " + ", ".join(misses))


@EVALUATOR.dimension("coordination", 0.1, "the expected inter-worker messages were sent", goal=True)
def coordination(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    wanted = scenario.evaluation.get("messages", [])
    if not wanted:
        return 1.0, "no messages expected"

    def sent(w: dict[str, Any]) -> bool:
        return any(
            m["to_worker"] == w["to"]
            and m["topic"] == w["topic"]
            and (w.get("from_role") is None or m["from_role"] == w["from_role"])
            and all(m["payload"].get(k) == v for k, v in w.get("payload", {}).items())
            for m in state["messages"]
        )

    missing = [f"{w['topic']}→{w['to']}" for w in wanted if not sent(w)]
    return 1 - len(missing) / len(wanted), ("all sent" if not missing else "missing: " + ", ".join(missing))


@EVALUATOR.dimension("policy_compliance", 0.15, "no refused lifecycle or busy-state violations")
def policy_compliance(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    bad = failed_actions(state, "invalid_transition", "permission_denied")
    return penalty_score(len(bad), 0.34), f"{len(bad)} refused operation(s)"
