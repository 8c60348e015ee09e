"""Deterministic, side-effect-free evaluators made of weighted dimensions (Table 15, rule 11).

The guarantee (docs/envcraft.md, "Evaluator guarantee"): dimensions marked ``goal=True`` measure the
scenario's goal; their *progress* is their score normalised against the scenario's initial state, so an
agent that does nothing scores 0 on them. Every other dimension ("nothing broken", "rules respected", which
an idle agent satisfies for free) is paid only in proportion to that progress. So the untouched state and a
move that makes no progress (a destructive one included) score 0, and full marks need the goal reached with
every other dimension intact. An evaluator without goal dimensions keeps the plain weighted mean.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dataclaw.envcraft.runtime.environment import Scenario

COLLATERAL_PENALTY = 0.25  # per record outside the reference's footprint that a run changed or created
RUNTIME_KEYS = frozenset({"actions", "meta", "counters"})
# statuses that end a record without completing it: reaching one the reference does not is destructive
_ENDED = re.compile(
    r"(cancel+ed|deleted|rejected|declined|failed|terminated|archived|revoked|withdrawn|aborted|removed|voided"
    r"|unsubscribed|deregistered|dropped|purged)",
    re.IGNORECASE,
)

DimensionFn = Callable[[dict[str, Any], "Scenario"], tuple[float, str]]


@dataclass(frozen=True)
class Dimension:
    """One scored aspect of a session: ``fn(state, scenario) -> (score in [0, 1], reason)``."""

    name: str
    weight: float
    fn: DimensionFn
    description: str
    goal: bool = False


class Evaluator:
    """A registry of weighted dimensions; ``overall_score`` is their weighted mean, gated on goal progress
    when some dimensions are marked ``goal`` (see the module docstring)."""

    def __init__(self) -> None:
        self._dims: dict[str, Dimension] = {}

    def dimension(
        self, name: str, weight: float, description: str = "", *, goal: bool = False
    ) -> Callable[[DimensionFn], DimensionFn]:
        """Register ``fn`` as a dimension (refuses duplicate names and non-positive weights); ``goal``
        marks a dimension that measures the scenario's goal (what the others' pay is gated on)."""
        if name in self._dims:
            raise ValueError(f"duplicate evaluation dimension {name!r}")
        if not weight > 0:
            raise ValueError(f"dimension {name!r} needs a positive weight, got {weight!r}")

        def wrap(fn: DimensionFn) -> DimensionFn:
            text = description or (fn.__doc__ or "").strip()
            self._dims[name] = Dimension(name, float(weight), fn, text, goal)
            return fn

        return wrap

    @property
    def dimensions(self) -> list[Dimension]:
        return list(self._dims.values())

    def evaluate(
        self,
        state: dict[str, Any],
        scenario: Scenario,
        initial: dict[str, Any] | None = None,
        reference: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Score ``state`` (the caller passes a private copy) against ``scenario``. ``initial`` is the
        scenario's initial state, which goal progress is measured from (none: from a score of 0);
        ``reference`` the state its reference solution reaches: with both, every record outside the
        reference's footprint that changed (or an extra one created) costs ``COLLATERAL_PENALTY``."""
        if not self._dims:
            raise ValueError("evaluator has no dimensions")
        raw = {d.name: _clip(d.fn(state, scenario)) for d in self._dims.values()}
        goals = [d for d in self._dims.values() if d.goal]
        progress, per = 1.0, {}
        if goals:
            start = {d.name: _clip(d.fn(initial, scenario))[0] for d in goals} if initial is not None else {}
            # a goal dimension already met at the start has nothing to measure here: it guards instead
            active = [d for d in goals if start.get(d.name, 0.0) < 1.0]
            per = {d.name: _progress(raw[d.name][0], start.get(d.name, 0.0)) for d in active}
            weight = sum(d.weight for d in active)
            progress = sum(d.weight * per[d.name] for d in active) / weight if weight else 0.0
        dims: dict[str, Any] = {}
        total = weighted = 0.0
        for dim in self._dims.values():
            score, reason = raw[dim.name]
            paid = per[dim.name] if dim.name in per else score * progress
            dims[dim.name] = {"score": round(score, 4), "weight": dim.weight, "reason": reason}
            if goals:
                dims[dim.name]["paid"] = round(paid, 4)
            total += dim.weight
            weighted += dim.weight * paid
        overall = weighted / total
        out: dict[str, Any] = {"dimensions": dims}
        if goals:
            out["goal_progress"] = round(progress, 4)
        if initial is not None and reference is not None:
            hits = collateral_writes(state, initial, reference)
            overall *= penalty_score(len(hits), COLLATERAL_PENALTY)
            out["collateral"] = hits
        out["overall_score"] = round(overall, 4)
        return out


def _records(*values: Any) -> bool:
    """Whether every value is a dict of records (``{id: {...}}``)."""
    return all(isinstance(v, dict) and all(isinstance(r, dict) for r in v.values()) for v in values)


def _allowed_list(key: str) -> bool:
    """Lists a correct run may grow freely: the action log and logs (``*_log``), the documented allowance."""
    return key in RUNTIME_KEYS or key.endswith("log")


def _ended(now: dict[str, Any], before: dict[str, Any], ref: dict[str, Any]) -> str | None:
    """The field by which a record the reference changes was ended instead (a status moved to cancelled,
    deleted, revoked, … that the reference does not reach), if any."""
    for field, value in now.items():
        if (
            isinstance(value, str)
            and value != before.get(field)
            and value != ref.get(field)
            and _ENDED.fullmatch(value)
        ):
            return field
    return None


def collateral_writes(state: dict[str, Any], initial: dict[str, Any], reference: dict[str, Any]) -> list[str]:
    """What ``state`` changed outside the reference solution's footprint: records of a top-level
    collection (``{id: {...}}``) that the reference left as in ``initial`` but ``state`` changed, records the
    reference keeps (changed or not) that ``state`` deleted or ended instead (a status moved to cancelled,
    revoked, … that the reference does not reach),
    more records created than the reference created, and more items appended to a top-level list (logs
    and the action log excepted) than the reference appended."""
    hits: list[str] = []
    for key, before in initial.items():
        if key in RUNTIME_KEYS:
            continue
        now, ref = state.get(key), reference.get(key)
        if isinstance(before, dict) and _records(before, now if now is not None else {}, ref or {}):
            now, ref = now or {}, ref or {}
            for rid, rec in before.items():
                if rid not in now and rid in ref:
                    hits.append(f"{key}/{rid} deleted")  # the goal keeps it (changed or not)
                elif ref.get(rid) == rec and now.get(rid) != rec:
                    hits.append(f"{key}/{rid} changed")
                elif rid in now and rid in ref and (field := _ended(now[rid], rec, ref[rid])):
                    hits.append(f"{key}/{rid} {field} → {now[rid][field]}")  # the goal needs it alive
            extra = len(set(now) - set(before)) - len(set(ref) - set(before))
            if extra > 0:
                hits.append(f"{key}: {extra} record(s) created beyond the goal")
        elif isinstance(before, list) and not _allowed_list(key):
            grown = len(now) if isinstance(now, list) else 0
            extra = grown - (len(ref) if isinstance(ref, list) else len(before))
            if extra > 0:
                hits.append(f"{key}: {extra} item(s) added beyond the goal")
    return hits


def _clip(result: tuple[float, str]) -> tuple[float, str]:
    score, reason = result
    return min(1.0, max(0.0, float(score))), reason


def _progress(score: float, start: float) -> float:
    """How far a goal dimension moved from its initial score (< 1) towards 1; 0 when it did not move or
    fell back."""
    return max(0.0, (score - start) / (1.0 - start))


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
