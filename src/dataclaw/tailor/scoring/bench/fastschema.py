"""A compiled validity check for the JSON Schema subset intent schemas use, for the reward hot path.

``jsonschema`` spends ~0.4 ms per Tailor answer building a validator per sub-schema it descends into;
the GRPO format reward checks every rollout. Intent schemas use a small subset of keywords (type,
properties, required, additionalProperties, enum, const, minimum/maximum and their exclusive forms,
minLength/maxLength, items, minItems/maxItems, plus annotations), so a schema made only of those is
compiled once into nested closures that answer ``is_valid`` with the semantics of JSON Schema 2020-12
(integers include 1.0, booleans are not numbers, enum and const compare JSON values). A schema with any
other keyword is not compiled (:func:`compile_schema` returns None) and the caller uses ``jsonschema``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

Check = Callable[[Any], bool]

ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "$comment", "$schema", "$id", "format"}
)
KEYWORDS = frozenset(
    {
        "type", "properties", "required", "additionalProperties", "enum", "const", "minimum", "maximum",
        "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "items", "minItems", "maxItems",
    }
) | ANNOTATIONS  # fmt: skip


def _is_type(value: Any, name: str) -> bool:
    if name == "string":
        return isinstance(value, str)
    if name == "integer":
        if isinstance(value, bool):
            return False
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if name == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, list)
    if name == "null":
        return value is None
    return False


def _key(value: Any) -> str:
    """JSON equality as a string: 1 == 1.0, True != 1, key order ignored."""

    def norm(v: Any) -> Any:
        if isinstance(v, bool) or v is None or isinstance(v, str):
            return v
        if isinstance(v, int | float):
            return float(v)
        if isinstance(v, list):
            return [norm(x) for x in v]
        if isinstance(v, dict):
            return {k: norm(x) for k, x in v.items()}
        return repr(v)

    return json.dumps(norm(value), sort_keys=True)


def _compile(schema: Any) -> Check | None:
    if schema is True:
        return lambda v: True
    if schema is False:
        return lambda v: False
    if not isinstance(schema, dict) or not set(schema) <= KEYWORDS:
        return None
    checks: list[Check] = []
    types = schema.get("type")
    if types is not None:
        names = [types] if isinstance(types, str) else list(types)
        checks.append(lambda v, names=names: any(_is_type(v, n) for n in names))
    if "enum" in schema:
        allowed = {_key(e) for e in schema["enum"]}
        checks.append(lambda v, allowed=allowed: _key(v) in allowed)
    if "const" in schema:
        const = _key(schema["const"])
        checks.append(lambda v, const=const: _key(v) == const)
    num = lambda v: isinstance(v, int | float) and not isinstance(v, bool)  # noqa: E731
    for kw, op in (
        ("minimum", lambda v, b: v >= b),
        ("maximum", lambda v, b: v <= b),
        ("exclusiveMinimum", lambda v, b: v > b),
        ("exclusiveMaximum", lambda v, b: v < b),
    ):
        if kw in schema:
            checks.append(lambda v, b=schema[kw], op=op: not num(v) or op(v, b))
    if "minLength" in schema:
        checks.append(lambda v, n=schema["minLength"]: not isinstance(v, str) or len(v) >= n)
    if "maxLength" in schema:
        checks.append(lambda v, n=schema["maxLength"]: not isinstance(v, str) or len(v) <= n)
    if "minItems" in schema:
        checks.append(lambda v, n=schema["minItems"]: not isinstance(v, list) or len(v) >= n)
    if "maxItems" in schema:
        checks.append(lambda v, n=schema["maxItems"]: not isinstance(v, list) or len(v) <= n)
    if "items" in schema:
        item = _compile(schema["items"])
        if item is None:
            return None
        checks.append(lambda v, item=item: not isinstance(v, list) or all(item(x) for x in v))
    if "required" in schema:
        req = list(schema["required"])
        checks.append(lambda v, req=req: not isinstance(v, dict) or all(k in v for k in req))
    if "properties" in schema or "additionalProperties" in schema:
        props: dict[str, Check] = {}
        for name, sub in (schema.get("properties") or {}).items():
            c = _compile(sub)
            if c is None:
                return None
            props[name] = c
        extra = _compile(schema.get("additionalProperties", True))
        if extra is None:
            return None

        def obj(v: Any, props: dict[str, Check] = props, extra: Check = extra) -> bool:
            if not isinstance(v, dict):
                return True
            for k, x in v.items():
                c = props.get(k)
                if not (c(x) if c is not None else extra(x)):
                    return False
            return True

        checks.append(obj)
    return lambda v: all(c(v) for c in checks)


@functools.lru_cache(maxsize=512)
def _compiled(canonical: str) -> Check | None:
    return _compile(json.loads(canonical))


def compile_schema(schema: dict[str, Any]) -> Check | None:
    """``is_valid`` for ``schema`` when it uses only the supported keywords, else None."""
    return _compiled(json.dumps(schema, sort_keys=True))


def validity(schema: dict[str, Any]) -> Check:
    """``is_valid`` for any schema: compiled when it can be, ``jsonschema`` otherwise."""
    fast = compile_schema(schema)
    if fast is not None:
        return fast
    from dataclaw.models.schema import check_schema

    return check_schema(schema).is_valid
