"""The evaluator dimensions of compiled environments: pure functions of (state, scenario).

A compiled scenario's ``evaluation`` holds what the spec's scoring rules and gold facts became:
``expected`` (``{collection: {record id: {field: value}}}``, the goal state), ``untouched`` (records that
must keep their S0 values, ``{collection: {record id: {field: value}}}``), ``scoring_rules`` and
``gold_facts`` (the spec's text, kept for the reader) and ``penalised`` (error categories a failed
action is penalised for). A compiled package's ``evaluator.py`` registers these three dimensions.
"""

from __future__ import annotations

from typing import Any

from dataclaw.envcraft.runtime.evaluation import failed_actions, penalty_score

PENALISED = ("invalid_transition", "permission_denied", "invalid_reference")
PENALTY_PER_ACTION = 0.34
DIMENSIONS = (
    ("goal_state", 0.6, "the records the scenario is about reached their expected field values"),
    (
        "rule_compliance",
        0.25,
        "no action broke a lifecycle guard, a permission or referenced a missing record",
    ),
    ("untouched", 0.15, "records the scenario does not ask to change kept their initial values"),
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
    """Fraction of protected field values still as in S0."""
    return _score(_checks(state, evaluation.get("untouched", {})), "nothing protected")
