"""Pairwise compatibility scoring: a type-dispatched per-attribute calculator composed into a weighted
sum normalised to 0-100 (EnvCraft B.3, archetype 7). Pure functions; they never raise.

Per attribute, dispatched on the type of the demand side's value:

- number: proximity ``1 - |d - s| / max(|d|, |s|)`` (absolute distance normalised by magnitude);
- string: 1.0 on case-insensitive equality, :data:`PARTIAL_MATCH` when one contains the other or they
  share a word, else 0;
- list: Jaccard ratio ``|D ∩ S| / |D ∪ S|`` over case-folded items;
- boolean: 1.0 when equal.

A value missing on either side, or of another type, scores 0 (no evidence is no match).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

PARTIAL_MATCH = 0.5


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    return float(v) if math.isfinite(v) else None


def numeric_proximity(d: Any, s: Any) -> float:
    a, b = _num(d), _num(s)
    if a is None or b is None:
        return 0.0
    scale = max(abs(a), abs(b))
    return 1.0 if scale == 0 else max(0.0, 1.0 - abs(a - b) / scale)


def string_match(d: Any, s: Any) -> float:
    if not isinstance(d, str) or not isinstance(s, str):
        return 0.0
    a, b = d.strip().casefold(), s.strip().casefold()
    if not a or not b:
        return 0.0
    if a == b:
        return 1.0
    if a in b or b in a or set(a.split()) & set(b.split()):
        return PARTIAL_MATCH
    return 0.0


def _items(v: list[Any]) -> set[str]:
    return {
        str(x).strip().casefold() for x in v if isinstance(x, str | int | float) and not isinstance(x, bool)
    }


def jaccard(d: Any, s: Any) -> float:
    if not isinstance(d, list) or not isinstance(s, list):
        return 0.0
    a, b = _items(d), _items(s)
    union = a | b
    return len(a & b) / len(union) if union else 0.0


def boolean_match(d: Any, s: Any) -> float:
    return 1.0 if isinstance(d, bool) and isinstance(s, bool) and d == s else 0.0


SCORERS: dict[str, Callable[[Any, Any], float]] = {
    "number": numeric_proximity,
    "string": string_match,
    "list": jaccard,
    "boolean": boolean_match,
}


def kind(value: Any) -> str | None:
    """The scorer family of an attribute value (None for null and objects)."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    return None


def score_pair(
    criteria: dict[str, float], demand: dict[str, Any], supply: dict[str, Any]
) -> tuple[float, dict]:
    """Weighted compatibility in [0, 100] plus the per-attribute sub-scores (each in [0, 1])."""
    breakdown: dict[str, float] = {}
    total = sum(criteria.values())
    weighted = 0.0
    for attr, weight in sorted(criteria.items()):
        family = kind(demand.get(attr))
        sub = SCORERS[family](demand[attr], supply.get(attr)) if family and attr in supply else 0.0
        breakdown[attr] = round(sub, 4)
        weighted += weight * sub
    score = 100.0 * weighted / total if total > 0 else 0.0
    return round(score, 2), breakdown
