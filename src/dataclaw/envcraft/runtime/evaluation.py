"""Deterministic, side-effect-free evaluators made of weighted dimensions (Table 15, rule 11)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dataclaw.envcraft.runtime.environment import Scenario

DimensionFn = Callable[[dict[str, Any], "Scenario"], tuple[float, str]]


@dataclass(frozen=True)
class Dimension:
    """One scored aspect of a session: ``fn(state, scenario) -> (score in [0, 1], reason)``."""

    name: str
    weight: float
    fn: DimensionFn
    description: str


class Evaluator:
    """A registry of weighted dimensions; ``overall_score`` is their weighted mean."""

    def __init__(self) -> None:
        self._dims: dict[str, Dimension] = {}

    def dimension(
        self, name: str, weight: float, description: str = ""
    ) -> Callable[[DimensionFn], DimensionFn]:
        """Register ``fn`` as a dimension (refuses duplicate names and non-positive weights)."""
        if name in self._dims:
            raise ValueError(f"duplicate evaluation dimension {name!r}")
        if not weight > 0:
            raise ValueError(f"dimension {name!r} needs a positive weight, got {weight!r}")

        def wrap(fn: DimensionFn) -> DimensionFn:
            self._dims[name] = Dimension(name, float(weight), fn, description or (fn.__doc__ or "").strip())
            return fn

        return wrap

    @property
    def dimensions(self) -> list[Dimension]:
        return list(self._dims.values())

    def evaluate(self, state: dict[str, Any], scenario: Scenario) -> dict[str, Any]:
        """Score ``state`` (the caller passes a private copy) against ``scenario``."""
        if not self._dims:
            raise ValueError("evaluator has no dimensions")
        dims: dict[str, Any] = {}
        total = weighted = 0.0
        for dim in self._dims.values():
            score, reason = dim.fn(state, scenario)
            score = min(1.0, max(0.0, float(score)))
            dims[dim.name] = {"score": round(score, 4), "weight": dim.weight, "reason": reason}
            total += dim.weight
            weighted += dim.weight * score
        return {"dimensions": dims, "overall_score": round(weighted / total, 4)}


# ---- helpers over the action log, shared by evaluators ------------------------------------------------


def failed_actions(state: dict[str, Any], *categories: str) -> list[dict[str, Any]]:
    """Action records that failed with one of ``categories`` (all failures when none is given)."""
    return [
        a
        for a in state.get("actions", [])
        if a.get("status") == "error" and (not categories or a.get("error", {}).get("category") in categories)
    ]


def warned_actions(state: dict[str, Any], category: str) -> list[dict[str, Any]]:
    """Action records that carried a warning of ``category`` (e.g. ``stale_information``)."""
    return [
        a
        for a in state.get("actions", [])
        if any(w.get("category") == category for w in a.get("warnings", []))
    ]


def penalty_score(count: int, per_item: float) -> float:
    """``1 - count × per_item``, floored at 0."""
    return max(0.0, 1.0 - count * per_item)
