"""Structured output: check a schema before sending it and validate what came back (every server has open
bugs where the schema is not enforced, so we always check). Each server kind's own request form for a
schema is in :mod:`dataclaw.models.servers`.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import jsonschema
from jsonschema.validators import validator_for

from dataclaw.core.ids import canonical_json
from dataclaw.core.moved import keep_old_names
from dataclaw.models.errors import InvalidSchemaError, ModelOutputError


@functools.lru_cache(maxsize=256)
def _checked_validator(canonical: str) -> Any:
    """A validator for the schema serialised as ``canonical``, after checking the schema itself.
    Cached: checking against the metaschema costs milliseconds and a run sends one schema many times."""
    schema = json.loads(canonical)
    cls = validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "<root>"
        raise InvalidSchemaError(f"schema is not valid JSON Schema at {where}: {exc.message}") from None
    return cls(schema)


def check_schema(schema: Any) -> Any:
    """Raise :class:`InvalidSchemaError` unless ``schema`` is a valid JSON Schema object; return a
    validator for it."""
    if not isinstance(schema, dict):
        raise InvalidSchemaError(f"schema must be a JSON object (dict), got {type(schema).__name__}")
    try:
        canonical = canonical_json(schema)
    except (TypeError, ValueError) as exc:
        raise InvalidSchemaError(f"schema is not JSON-serialisable: {exc}") from None
    return _checked_validator(canonical)


GRAMMAR_MAX_REPEAT = 512
"""The largest length bound (and integer range turned into an enum) a grammar is given. A ``maxLength: n``
becomes n nested optional groups; llama.cpp's grammar parser refuses the grammar once n passes about 1000
("number of rules that are going to be repeated ... exceeds sane defaults") and llama-cpp-python then
decodes with the grammar it failed to build: a segfault that takes the whole process down."""

_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas")
_SUBSCHEMAS = (
    "items", "prefixItems", "additionalProperties", "anyOf", "oneOf", "allOf", "not", "if", "then", "else",
    "contains", "propertyNames", "unevaluatedProperties", "unevaluatedItems",
)  # fmt: skip


def grammar_schema(schema: Any) -> Any:
    """``schema`` as a grammar-constrained decoder can hold it: minimum lengths above
    :data:`GRAMMAR_MAX_REPEAT` dropped, maximum lengths (strings, arrays) capped at it, a small integer range
    written as an ``enum`` (llama.cpp ignores ``minimum``/``maximum``). Patterns and formats stay: they are
    what keeps a small model's ids and dates in shape (a spec's ``^[a-z][a-z0-9_]{0,23}$`` record ids).
    Only the caps are stricter than ``schema``; what is dropped is checked when the answer is validated
    against the full ``schema`` afterwards."""
    if isinstance(schema, list):  # anyOf, prefixItems …
        return [grammar_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if key in ("maxLength", "maxItems") and isinstance(value, int) and value > GRAMMAR_MAX_REPEAT:
            out[key] = GRAMMAR_MAX_REPEAT  # capped: the decoder must also stop (small models ramble)
            continue
        if key in ("minLength", "minItems") and isinstance(value, int) and value > GRAMMAR_MAX_REPEAT:
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {k: grammar_schema(v) for k, v in value.items()}
        elif key in _SUBSCHEMAS:
            out[key] = grammar_schema(value)
        else:  # enum, const, default, required …: values, not schemas
            out[key] = value
    low, high = out.get("minimum"), out.get("maximum")
    if (
        out.get("type") == "integer"
        and isinstance(low, int)
        and isinstance(high, int)
        and 0 <= high - low <= GRAMMAR_MAX_REPEAT
        and "enum" not in out
    ):
        out["enum"] = list(range(low, high + 1))
    return out


def _strip_fences(text: str) -> str:
    """Drop a Markdown code fence around JSON (servers without constrained decoding add them)."""
    s = text.strip()
    if s.startswith("```"):
        first_nl = s.find("\n")
        if first_nl != -1 and s.endswith("```"):
            return s[first_nl + 1 : -3].strip()
    return s


def loads_answer(text: str) -> Any:
    """A model's JSON answer decoded: a Markdown fence around it dropped, and raw control characters
    inside strings (a newline or tab that a grammar decoder lets through) read as the characters they are,
    as ``json.loads(strict=False)`` does. Raises ``ValueError`` when it is not JSON."""
    return json.loads(_strip_fences(text), strict=False)


def parse_json_answer(text: str | None, schema: dict[str, Any], model: str) -> Any:
    """Decode ``text`` as JSON and validate it against ``schema``; errors keep the raw text."""
    if text is None or not text.strip():
        raise ModelOutputError(
            f"model {model} returned no text where JSON was required", model=model, raw_text=text
        )
    try:
        value = loads_answer(text)  # a raw newline inside a string is still readable JSON
    except ValueError as exc:
        raise ModelOutputError(
            f"model {model} returned invalid JSON ({exc.msg} at char {exc.pos}): {text[:120]!r}",
            model=model,
            raw_text=text,
        ) from None
    error = jsonschema.exceptions.best_match(check_schema(schema).iter_errors(value))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "<root>"
        raise ModelOutputError(
            f"model {model} returned JSON that does not match the schema at {where}: {error.message}",
            model=model,
            raw_text=text,
        )
    return value


def parse_tool_arguments(tool_calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tool calls, each checked for an ``arguments`` JSON object string (OpenAI format).

    A call whose arguments are not one (malformed JSON, ``""`` for a no-argument tool, a JSON list) is
    not an error of the whole answer: it comes back unchanged, raw arguments kept, with a
    ``parse_error`` line added, so an agent loop can show the model a recoverable tool error instead of
    losing the turn. The input dicts are not modified."""
    out = []
    for call in tool_calls:
        fn = call.get("function") or {}
        args = fn.get("arguments")
        try:
            decoded = json.loads(args) if isinstance(args, str) else None
        except ValueError:
            decoded = None
            problem = "are not valid JSON" if isinstance(args, str) and args.strip() else "are empty"
        else:
            problem = "are not a JSON object" if args is not None else "are missing"
        if isinstance(decoded, dict):
            out.append(call)
        else:
            out.append({**call, "parse_error": f"the arguments {problem}"})
    return out


# names that moved out of this module in 0.x, readable here for one release
keep_old_names(
    __name__,
    {
        "PROBE_ORDER": "dataclaw.models.servers",
        "SchemaForm": "dataclaw.models.servers",
        "schema_fields": "dataclaw.models.servers",
    },
)
