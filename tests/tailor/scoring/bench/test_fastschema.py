"""The compiled schema check agrees with jsonschema (Draft 2020-12) on every built-in intent schema, for
valid answers and for generated mutations of them; unsupported keywords fall back."""

from __future__ import annotations

import copy
import random
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dataclaw.tailor.intents.registry import IntentCatalog
from dataclaw.tailor.scoring.bench.fastschema import compile_schema, validity

CATALOG = IntentCatalog.builtin()


def example(schema: dict[str, Any], rng: random.Random) -> Any:
    """A value valid against ``schema`` (the subset intent schemas use)."""
    if "enum" in schema:
        return rng.choice(schema["enum"])
    t = schema.get("type")
    if t == "object":
        return {k: example(s, rng) for k, s in schema.get("properties", {}).items()}
    if t == "array":
        n = max(schema.get("minItems", 0), min(2, schema.get("maxItems", 2)))
        return [example(schema["items"], rng) for _ in range(n)]
    if t == "string":
        return "x" * max(schema.get("minLength", 0), min(12, schema.get("maxLength", 12)))
    if t == "integer":
        return int(schema.get("minimum", 3))
    if t == "number":
        return float(schema.get("minimum", 0.5))
    return None


def mutations(value: Any, rng: random.Random) -> list[Any]:
    """Values near ``value``: keys dropped or added, types swapped, lengths broken, 1.0 for 1, bools."""
    out = []
    paths: list[tuple[Any, Any]] = []

    def walk(v: Any, parent: Any = None, key: Any = None) -> None:
        paths.append((parent, key))
        if isinstance(v, dict):
            for k, x in v.items():
                walk(x, v, k)
        elif isinstance(v, list):
            for i, x in enumerate(v):
                walk(x, v, i)

    walk(value)
    replacements = [None, True, 1.0, 2.5, -1, 0, "", "y" * 1000, [], {}, ["x"], {"a": 1}, 7]
    for _ in range(60):
        v = copy.deepcopy(value)
        paths.clear()
        walk(v)
        parent, key = rng.choice(paths[1:]) if len(paths) > 1 else (None, None)
        if parent is None:
            out.append(rng.choice(replacements))
            continue
        roll = rng.random()
        if roll < 0.2 and isinstance(parent, dict):
            del parent[key]
        elif roll < 0.3 and isinstance(parent, dict):
            parent["unexpected"] = 1
        elif roll < 0.4 and isinstance(parent, list):
            parent.extend(copy.deepcopy(parent) * 8)
        else:
            parent[key] = rng.choice(replacements)
        out.append(v)
    return out


@pytest.mark.parametrize("intent", CATALOG.ids())
def test_agrees_with_jsonschema_on_builtin_schemas(intent: str) -> None:
    schema = CATALOG.get(intent).output_schema
    fast = compile_schema(schema)
    assert fast is not None, "the built-in schemas use only the compiled subset"
    slow = jsonschema.Draft202012Validator(schema)
    rng = random.Random(intent)
    good = example(schema, rng)
    assert fast(good) and slow.is_valid(good)
    near = mutations(good, rng)
    for value in near:
        assert fast(value) == slow.is_valid(value), value
    assert sum(not slow.is_valid(v) for v in near) > 20  # the mutations do break the schema


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(-5, 5, allow_nan=False) | st.text(max_size=4),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.sampled_from("abc"), children, max_size=3)
    ),
    max_leaves=8,
)
SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["a"],
    "properties": {
        "a": {"type": "integer", "minimum": 0, "maximum": 3},
        "b": {"type": "array", "maxItems": 2, "items": {"type": ["string", "null"], "maxLength": 2}},
        "c": {"enum": [1, "1", True, None, [1]]},
    },
}


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_agrees_with_jsonschema_on_arbitrary_json(value: Any) -> None:
    fast = compile_schema(SCHEMA)
    assert fast is not None
    assert fast(value) == jsonschema.Draft202012Validator(SCHEMA).is_valid(value)
    wrapped = {"a": 1, "c": value}
    assert fast(wrapped) == jsonschema.Draft202012Validator(SCHEMA).is_valid(wrapped)


def test_unsupported_keywords_fall_back_to_jsonschema() -> None:
    schema = {"type": "string", "pattern": "^a+$"}
    assert compile_schema(schema) is None
    check = validity(schema)
    assert check("aaa") and not check("ab")
