"""Guard predicates and state hooks: validation plus pure evaluation (EnvCraft B.3, archetype 5).

A guard is ``{field: {op: value, ...}, ...}``: every operator of every field must hold (AND across fields
and across the operators of one field). Evaluation is a standalone pure function that never raises and
fails closed: a missing field, or a value of the wrong type for a numeric operator, fails the check.

A hook is ``{"action": <name>, ...}`` from the :data:`HOOKS` registry; hooks run when an entity exits
(``on_exit``) or enters (``on_enter``) a state and may stamp or set payload fields or notify someone.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dataclaw.envcraft.runtime import invalid_argument
from dataclaw.envcraft.runtime.errors import echo

MAX_GUARD_FIELDS = 12
MAX_NAME_CHARS = 64
MAX_TEXT_CHARS = 300
MAX_LIST_ITEMS = 50
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


def _number(value: Any) -> float | None:
    """A finite float for ints and floats (never booleans); None otherwise."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    out = float(value)
    return out if math.isfinite(out) else None


def _same(a: Any, b: Any) -> bool:
    """JSON equality that keeps booleans apart from numbers (``True`` is not ``1``)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    na, nb = _number(a), _number(b)
    if na is not None and nb is not None:
        return na == nb
    return type(a) is type(b) and a == b


def _numeric(cmp: Callable[[float, float], bool]) -> Callable[[Any, Any], bool]:
    def test(actual: Any, expected: Any) -> bool:
        a, b = _number(actual), _number(expected)
        return a is not None and b is not None and cmp(a, b)  # fail closed

    return test


@dataclass(frozen=True)
class Operator:
    """A guard operator: a total predicate ``test(actual, expected)`` and what its operand must be."""

    name: str
    operand: str  # "scalar" | "number" | "list"
    test: Callable[[Any, Any], bool]


OPERATORS: dict[str, Operator] = {}


def _register(op: Operator) -> None:
    if op.name in OPERATORS:
        raise ValueError(f"duplicate guard operator {op.name!r}")
    OPERATORS[op.name] = op


for _op in (
    Operator("eq", "scalar", _same),
    Operator("ne", "scalar", lambda a, b: not _same(a, b)),
    Operator("gt", "number", _numeric(lambda a, b: a > b)),
    Operator("gte", "number", _numeric(lambda a, b: a >= b)),
    Operator("lt", "number", _numeric(lambda a, b: a < b)),
    Operator("lte", "number", _numeric(lambda a, b: a <= b)),
    Operator("in", "list", lambda a, b: any(_same(a, x) for x in b)),
    Operator("not_in", "list", lambda a, b: not any(_same(a, x) for x in b)),
):
    _register(_op)


def _scalar_ok(value: Any) -> bool:
    if isinstance(value, str):
        return len(value) <= MAX_TEXT_CHARS
    return value is None or isinstance(value, bool) or _number(value) is not None


def check_name(name: Any, what: str) -> str:
    """A field or state name: a letter or _, then letters, digits or _ (at most 64 characters)."""
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise invalid_argument(
            what,
            f"{echo(name)} must be 1-{MAX_NAME_CHARS} letters, digits or _, not starting with a digit",
        )
    return name


def validate_guard(guard: Any, where: str = "guard") -> dict[str, dict[str, Any]]:
    """Check a ``{field: {op: value}}`` guard; returns it unchanged or raises ``invalid_argument``."""
    if not isinstance(guard, dict):
        raise invalid_argument(where, 'must be an object like {"credit_score": {"gte": 680}}')
    if len(guard) > MAX_GUARD_FIELDS:
        raise invalid_argument(where, f"at most {MAX_GUARD_FIELDS} fields")
    for field, checks in guard.items():
        check_name(field, f"{where} field")
        if not isinstance(checks, dict) or not checks:
            raise invalid_argument(
                where, f'field {echo(field)} needs an object of operator → value, e.g. {{"gte": 680}}'
            )
        for op, value in checks.items():
            spec = OPERATORS.get(op)
            if spec is None:
                raise invalid_argument(
                    where, f"unknown operator {echo(op)}; use one of {', '.join(OPERATORS)}"
                )
            if spec.operand == "number" and _number(value) is None:
                raise invalid_argument(where, f"'{op}' on {echo(field)} needs a finite number")
            if spec.operand == "list" and not (
                isinstance(value, list) and len(value) <= MAX_LIST_ITEMS and all(_scalar_ok(v) for v in value)
            ):
                raise invalid_argument(where, f"'{op}' on {echo(field)} needs a list of plain values")
            if spec.operand == "scalar" and not _scalar_ok(value):
                raise invalid_argument(where, f"'{op}' on {echo(field)} needs a plain value")
    return guard


def evaluate_guard(guard: dict[str, dict[str, Any]] | None, data: dict[str, Any]) -> list[str]:
    """The checks of ``guard`` that ``data`` fails (empty list = the guard passes). Pure, never raises.

    AND semantics over every field and every operator; a missing field fails every check on it."""
    failures: list[str] = []
    for field, checks in (guard or {}).items():
        for op, expected in checks.items():
            spec = OPERATORS.get(op)
            if field not in data:
                failures.append(f"{field} {op} {expected!r} (field missing)")
            elif spec is None or not spec.test(data[field], expected):
                failures.append(f"{field} {op} {expected!r} (is {data[field]!r})")
    return failures


# ---- hooks -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hook:
    """A hook action: the keys it needs and what it does to the entity (returns a log line)."""

    name: str
    keys: tuple[str, ...]
    run: Callable[[dict[str, Any], dict[str, Any], str], str]


def _set_field(entity: dict[str, Any], hook: dict[str, Any], at: str) -> str:
    entity["data"][hook["field"]] = hook["value"]
    return f"set {hook['field']} = {hook['value']!r}"


def _stamp(entity: dict[str, Any], hook: dict[str, Any], at: str) -> str:
    entity["data"][hook["field"]] = at
    return f"stamped {hook['field']} = {at}"


def _notify(entity: dict[str, Any], hook: dict[str, Any], at: str) -> str:
    entity["notifications"].append({"to": hook["recipient"], "message": hook["message"], "at": at})
    return f"notified {hook['recipient']}: {hook['message']}"


HOOKS: dict[str, Hook] = {
    h.name: h
    for h in (
        Hook("set_field", ("field", "value"), _set_field),
        Hook("stamp", ("field",), _stamp),
        Hook("notify", ("recipient", "message"), _notify),
    )
}


def validate_hooks(hooks: Any, where: str) -> list[dict[str, Any]]:
    """Check a list of hook specs (``[{"action": "stamp", "field": "approved_at"}, ...]``)."""
    if not isinstance(hooks, list) or len(hooks) > 10:
        raise invalid_argument(where, "must be a list of at most 10 hook objects")
    for hook in hooks:
        spec = HOOKS.get(hook.get("action")) if isinstance(hook, dict) else None
        if spec is None:
            raise invalid_argument(
                where, f"each hook needs an 'action' out of {', '.join(HOOKS)}, got {echo(hook)}"
            )
        wanted = {"action", *spec.keys}
        if set(hook) != wanted:
            raise invalid_argument(where, f"a '{spec.name}' hook takes exactly the keys {sorted(wanted)}")
        if "field" in hook:
            check_name(hook["field"], f"{where} field")
        for key in ("recipient", "message"):
            if key in hook and not (isinstance(hook[key], str) and 0 < len(hook[key]) <= MAX_TEXT_CHARS):
                raise invalid_argument(where, f"'{key}' must be text of 1-{MAX_TEXT_CHARS} characters")
        if "value" in hook and not _scalar_ok(hook["value"]):
            raise invalid_argument(where, "'value' must be a plain value (text, number, boolean or null)")
    return hooks


def run_hooks(entity: dict[str, Any], hooks: list[dict[str, Any]], at: str) -> list[str]:
    """Run validated hooks against ``entity`` in order; returns what each did."""
    return [HOOKS[h["action"]].run(entity, h, at) for h in hooks]
