"""Condition predicates of ECA rules: validation and a pure evaluation function (EnvCraft B.3, archetype 4).

A condition is ``{"field": <payload field>, "op": <operator>, "value": <operand>}``. Evaluation never raises
and has fixed fallback semantics: string operators degrade gracefully (a missing field reads as "", numbers
and booleans are compared through their text), numeric operators fail closed (a missing or non-numeric
value makes the condition false). Regular expressions run on RE2, whose matching time is linear in the
input, so an agent-supplied pattern cannot trigger catastrophic backtracking; pattern length and payload
text are bounded as well.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import re2

from dataclaw.envcraft.runtime import EnvError, ErrorCategory, invalid_argument, missing_field
from dataclaw.envcraft.runtime.errors import echo

MAX_PATTERN_CHARS = 200
MAX_TEXT_CHARS = 2000  # longest payload string an event may carry (enforced on injection)
_RE2_MAX_MEM = 1 << 20
_NUMERIC_TEXT = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
_PLACEHOLDER = re.compile(r"\{(\w{1,64})\}")


@dataclass(frozen=True)
class Operator:
    """One condition operator: its family (string/numeric/equality) and a total predicate."""

    name: str
    family: str
    description: str
    test: Callable[[Any, Any], bool]


def as_number(value: Any) -> float | None:
    """A finite float for numbers and numeric text; None otherwise (booleans are not numbers)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        out = float(value)
    elif isinstance(value, str) and _NUMERIC_TEXT.match(value.strip()):
        out = float(value.strip())
    else:
        return None
    return out if math.isfinite(out) else None


def as_text(value: Any) -> str:
    """The text a string operator sees: "" for a missing value, lowercase true/false, numbers without .0."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list):
        return ", ".join(as_text(v) for v in value)
    return str(value)


def _equal(actual: Any, expected: Any) -> bool:
    a, b = as_number(actual), as_number(expected)
    if a is not None and b is not None and not isinstance(actual, str) and not isinstance(expected, str):
        return a == b
    return as_text(actual) == as_text(expected)


def _numeric(cmp: Callable[[float, float], bool]) -> Callable[[Any, Any], bool]:
    def test(actual: Any, expected: Any) -> bool:
        a, b = as_number(actual), as_number(expected)
        return a is not None and b is not None and cmp(a, b)  # fail closed

    return test


def _contains(actual: Any, expected: Any) -> bool:
    needle = as_text(expected).casefold()
    if isinstance(actual, list):
        return any(as_text(item).casefold() == needle for item in actual)
    return needle in as_text(actual).casefold()


def _regex(actual: Any, expected: Any) -> bool:
    return compile_pattern(str(expected)).search(as_text(actual)[:MAX_TEXT_CHARS]) is not None


OPERATORS: dict[str, Operator] = {}


def _register(op: Operator) -> None:
    if op.name in OPERATORS:
        raise ValueError(f"duplicate operator {op.name!r}")
    OPERATORS[op.name] = op


for _op in (
    Operator("eq", "equality", "equal (numbers numerically, anything else as text)", _equal),
    Operator("ne", "equality", "not equal (a missing field is not equal)", lambda a, b: not _equal(a, b)),
    Operator(
        "gt", "numeric", "greater than (false unless both sides are numbers)", _numeric(lambda a, b: a > b)
    ),
    Operator("gte", "numeric", "greater than or equal", _numeric(lambda a, b: a >= b)),
    Operator("lt", "numeric", "less than", _numeric(lambda a, b: a < b)),
    Operator("lte", "numeric", "less than or equal", _numeric(lambda a, b: a <= b)),
    Operator("contains", "string", "case-insensitive substring, or list membership", _contains),
    Operator("regex", "string", "RE2 regular expression search over the field's text", _regex),
):
    _register(_op)


def compile_pattern(pattern: str) -> Any:
    """Compile an agent-supplied pattern with RE2 (linear-time matching); agent-safe errors."""
    if not pattern:
        raise invalid_argument("condition.value", "a regex pattern cannot be empty")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise invalid_argument(
            "condition.value", f"regex patterns are limited to {MAX_PATTERN_CHARS} characters"
        )
    options = re2.Options()
    options.log_errors = False
    options.max_mem = _RE2_MAX_MEM
    try:
        return re2.compile(pattern, options)
    except (re2.error, TypeError, ValueError):
        raise invalid_argument(
            "condition.value",
            f"{echo(pattern)} is not a valid RE2 regular expression (backreferences and look-around "
            "are not supported; repetition counts must stay below 1000)",
        ) from None


def validate_condition(
    condition: dict[str, Any], fields: dict[str, str], trigger_type: str
) -> dict[str, Any]:
    """Check a condition against the payload fields the trigger type declares; return it normalised."""
    unknown = sorted(set(condition) - {"field", "op", "value"})
    if unknown:
        raise invalid_argument("condition", f"unknown key {echo(unknown[0])}; use field, op and value")
    for key in ("field", "op", "value"):
        if key not in condition:
            raise missing_field(f"condition.{key}", 'a condition is {"field": ..., "op": ..., "value": ...}')
    field, op, value = condition["field"], condition["op"], condition["value"]
    if not isinstance(field, str) or field not in fields:
        raise invalid_argument(
            "condition.field",
            f"{echo(field)} is not a payload field of '{trigger_type}' events; fields: {', '.join(fields)}",
        )
    if op not in OPERATORS:
        raise invalid_argument(
            "condition.op", f"{echo(op)} is not an operator; use one of {', '.join(OPERATORS)}"
        )
    family = OPERATORS[op].family
    if family == "numeric" and as_number(value) is None:
        raise invalid_argument("condition.value", f"operator '{op}' needs a number (got {echo(value)})")
    if family == "string" and not isinstance(value, str):
        raise invalid_argument("condition.value", f"operator '{op}' needs a text value (got {echo(value)})")
    if family == "equality" and not (value is None or isinstance(value, str | int | float | bool)):
        raise invalid_argument("condition.value", "eq/ne compare with a single text, number or boolean")
    if isinstance(value, str) and len(value) > MAX_TEXT_CHARS:
        raise invalid_argument("condition.value", f"at most {MAX_TEXT_CHARS} characters")
    if op == "regex":
        compile_pattern(value)
    if family == "numeric" and fields[field] != "number":
        raise EnvError(
            ErrorCategory.INVALID_ARGUMENT,
            f"Invalid value for 'condition.op': field '{field}' of '{trigger_type}' holds {fields[field]} "
            f"values, so '{op}' would never hold; use eq, ne, contains or regex.",
            field="condition.op",
        )
    if family == "numeric":
        value = as_number(value)
    return {"field": field, "op": op, "value": value}


def evaluate(condition: dict[str, Any] | None, payload: dict[str, Any]) -> tuple[bool, str]:
    """Pure evaluation of a (validated) condition against an event payload: (holds, reason)."""
    if condition is None:
        return True, "no condition"
    field, op, value = condition["field"], condition["op"], condition["value"]
    actual = payload.get(field)
    holds = OPERATORS[op].test(actual, value)
    shown = "missing" if field not in payload else echo(as_text(actual))
    return holds, f"{field} ({shown}) {op} {echo(as_text(value))}: {'true' if holds else 'false'}"


def render(template: str, payload: dict[str, Any]) -> tuple[str, list[str]]:
    """Fill ``{field}`` placeholders from the payload; unknown placeholders stay and are reported."""
    unresolved: list[str] = []

    def sub(m: re.Match[str]) -> str:
        if m.group(1) in payload:
            return as_text(payload[m.group(1)])
        unresolved.append(m.group(1))
        return m.group(0)

    return _PLACEHOLDER.sub(sub, template), unresolved
