"""The deterministic evaluator: weighted dimensions over the final calendars, events and action log."""

from __future__ import annotations

from typing import Any

from dataclaw.envcraft.runtime import Evaluator, Scenario, failed_actions, penalty_score

EVALUATOR = Evaluator()


def _fields(got: dict[str, Any] | None, want: dict[str, Any], name: str) -> list[tuple[str, bool]]:
    if got is None:
        return [(f"{name} exists", False)]
    return [(f"{name}.{k}", got.get(k) == v) for k, v in want.items()]


def _find_new(state: dict[str, Any], calendar_id: str, title: str) -> dict[str, Any] | None:
    hits = [
        e
        for e in state["events"].values()
        if e["calendar_id"] == calendar_id
        and e["title"].casefold() == title.casefold()
        and e["status"] != "cancelled"
    ]
    return sorted(hits, key=lambda e: e["event_id"])[0] if hits else None


@EVALUATOR.dimension(
    "goal_state", 0.5, "events, splits, new bookings and calendars hold their target values", goal=True
)
def goal_state(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    ev = scenario.evaluation
    checks: list[tuple[str, bool]] = []
    for eid, want in ev.get("expected_events", {}).items():
        checks += _fields(state["events"].get(eid), want, eid)
    for parent, want in ev.get("expected_splits", {}).items():
        conts = [
            e
            for e in state["events"].values()
            if e.get("split_from") == parent and e["status"] != "cancelled"
        ]
        checks += _fields(conts[0] if len(conts) == 1 else None, want, f"continuation of {parent}")
    for want in ev.get("expected_new", []):
        got = _find_new(state, want["calendar_id"], want["title"])
        checks += _fields(got, {k: v for k, v in want.items() if k != "title"}, repr(want["title"]))
    for cid, want in ev.get("expected_calendars", {}).items():
        checks += _fields(state["calendars"].get(cid), want, cid)
    if not checks:
        return 1.0, "nothing expected"
    bad = [name for name, ok in checks if not ok]
    return 1 - len(bad) / len(checks), ("all in place" if not bad else "wrong: " + ", ".join(bad))


@EVALUATOR.dimension(
    "conflicts_cleared", 0.2, "no double bookings remain on the calendars in scope", goal=True
)
def conflicts_cleared(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    scope = scenario.evaluation.get("clear_calendars", [])
    left = sorted(
        e["event_id"]
        for e in state["events"].values()
        if e["calendar_id"] in scope and e["status"] == "conflicted"
    )
    return penalty_score(len(left), 0.25), (
        "no conflicts left" if not left else "conflicted: " + ", ".join(left)
    )


@EVALUATOR.dimension("collateral", 0.15, "events outside the task were neither changed nor double-booked")
def collateral(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    untouched = scenario.evaluation.get("untouched", [])
    if not untouched:
        return 1.0, "no protected events"
    hit = [
        eid
        for eid in untouched
        if (e := state["events"].get(eid)) is None or e["revision"] > 0 or e["status"] == "conflicted"
    ]
    return 1 - len(hit) / len(untouched), ("none affected" if not hit else "affected: " + ", ".join(hit))


@EVALUATOR.dimension(
    "policy_compliance", 0.15, "no refused resolutions (override of equal/higher priority, final events)"
)
def policy_compliance(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    bad = failed_actions(state, "invalid_transition")
    return penalty_score(len(bad), 0.34), f"{len(bad)} refused resolution attempt(s)"
