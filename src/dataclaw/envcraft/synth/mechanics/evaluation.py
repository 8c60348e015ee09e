"""The evaluator dimensions of compiled environments: pure functions of (state, scenario).

A compiled scenario's ``evaluation`` holds what the spec's scoring rules and gold facts became:
``expected`` (``{collection: {record id: {field: value}}}``, the goal state), ``untouched`` (every other
record of every collection with its S0 fields, ``{collection: {record id: {field: value}}}``),
``record_ids`` (each collection's S0 record ids: a record created or deleted is collateral too),
``scoring_rules`` and ``gold_facts`` (the spec's text, kept for the reader) and ``penalised`` (error
categories a failed action is penalised for). A compiled package's ``evaluator.py`` registers these three
dimensions; ``goal_state`` is the goal dimension the other two are gated on (an idle agent breaks no rule
and touches nothing, which pays only once the goal progressed: see
:mod:`dataclaw.envcraft.runtime.evaluation`).
"""

from __future__ import annotations

from typing import Any

from dataclaw.envcraft.runtime.evaluation import failed_actions, penalty_score

PENALISED = ("invalid_transition", "permission_denied", "invalid_reference", "rule_violation")
PENALTY_PER_ACTION = 0.34
PENALTY_PER_RECORD = 0.5  # each record the goal does not name that was changed, created or deleted
# (name, weight, description, goal dimension?)
DIMENSIONS = (
    ("goal_state", 0.6, "the records the scenario is about reached their expected field values", True),
    (
        "rule_compliance",
        0.25,
        "no action broke a lifecycle guard, a business rule, a permission or referenced a missing record",
        False,
    ),
    (
        "untouched",
        0.15,
        "records the scenario does not ask to change kept their initial values; none created or deleted",
        False,
    ),
)


def _checks(state: dict[str, Any], wanted: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    out = []
    for coll, records in sorted(wanted.items()):
        for rid, fields in sorted(records.items()):
            rec = state.get(coll, {}).get(rid) or {}
            out += [(f"{coll}/{rid}.{k}", rec.get(k), v) for k, v in sorted(fields.items())]
    return out


def _score(checks: list[tuple[str, Any, Any]], none: str) -> tuple[float, str]:
    if not checks:
        return 1.0, none
    wrong = [f"{name}: {got!r} (want {want!r})" for name, got, want in checks if got != want]
    return 1 - len(wrong) / len(checks), "; ".join(wrong[:5]) if wrong else "all as expected"


def goal_state(state: dict[str, Any], evaluation: dict[str, Any]) -> tuple[float, str]:
    """Fraction of expected field values reached."""
    return _score(_checks(state, evaluation.get("expected", {})), "no goal fields")


def rule_compliance(state: dict[str, Any], evaluation: dict[str, Any]) -> tuple[float, str]:
    """One minus a penalty per failed action of a penalised category (guards, permissions, references)."""
    bad = failed_actions(state, *evaluation.get("penalised", PENALISED))
    score = penalty_score(len(bad), PENALTY_PER_ACTION)
    if not bad:
        return score, "no forbidden action"
    return score, f"{len(bad)} forbidden action(s): " + ", ".join(str(a.get("tool")) for a in bad[:5])


def untouched(state: dict[str, Any], evaluation: dict[str, Any]) -> tuple[float, str]:
    """One minus a penalty per record outside the goal that changed, appeared or disappeared."""
    protected = evaluation.get("untouched", {})
    hit: list[str] = []
    for coll, records in sorted(protected.items()):
        have = state.get(coll, {})
        hit += [f"{coll}/{rid}" for rid, fields in sorted(records.items()) if _changed(have.get(rid), fields)]
    expected = evaluation.get("expected", {})
    for coll, ids in sorted(evaluation.get("record_ids", {}).items()):
        now, before = set(state.get(coll, {})), set(ids)
        hit += [f"{coll}/{rid} created" for rid in sorted(now - before - set(expected.get(coll, {})))]
        hit += [f"{coll}/{rid} deleted" for rid in sorted(before - now)]
    if not protected and not evaluation.get("record_ids"):
        return 1.0, "nothing protected"
    score = penalty_score(len(hit), PENALTY_PER_RECORD)
    return score, ("all other records as they were" if not hit else "changed: " + ", ".join(hit[:5]))


def _changed(rec: Any, fields: dict[str, Any]) -> bool:
    """Whether a protected record lost or changed any of its S0 fields (or is gone)."""
    if not isinstance(rec, dict):
        return True
    return any(rec.get(k) != v for k, v in fields.items())
