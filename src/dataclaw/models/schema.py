"""Structured output: check a schema before sending it, put it in each server's own request form, and
validate what came back (every server has open bugs where the schema is not enforced, so we always check).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

import jsonschema
from jsonschema.validators import validator_for

from dataclaw.core.ids import canonical_json
from dataclaw.models.errors import InvalidSchemaError, ModelOutputError

SchemaForm = Callable[[dict[str, Any], str], dict[str, Any]]
"""(schema, name) → top-level fields to merge into the chat-completions request body."""

SCHEMA_FORMS: dict[str, SchemaForm] = {}


def register_schema_form(flavour: str) -> Callable[[SchemaForm], SchemaForm]:
    """Register how a server flavour wants a JSON schema sent; refuses duplicate names."""

    def deco(fn: SchemaForm) -> SchemaForm:
        if flavour in SCHEMA_FORMS:
            raise ValueError(f"schema form {flavour!r} is already registered")
        SCHEMA_FORMS[flavour] = fn
        return fn

    return deco


@register_schema_form("openai")
def _openai_form(schema: dict[str, Any], name: str) -> dict[str, Any]:
    """OpenAI ``response_format`` json_schema; also understood by SGLang, recent vLLM and llama.cpp."""
    return {"response_format": {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}}


@register_schema_form("sglang")
def _sglang_form(schema: dict[str, Any], name: str) -> dict[str, Any]:
    """SGLang takes the OpenAI form."""
    return _openai_form(schema, name)


@register_schema_form("vllm")
def _vllm_form(schema: dict[str, Any], name: str) -> dict[str, Any]:
    """vLLM ≥ 0.10: ``structured_outputs: {"json": schema}`` (the only form since v0.12)."""
    return {"structured_outputs": {"json": schema}}


@register_schema_form("vllm-guided")
def _vllm_guided_form(schema: dict[str, Any], name: str) -> dict[str, Any]:
    """Older vLLM (< 0.12): ``guided_json``."""
    return {"guided_json": schema}


@register_schema_form("ollama")
def _ollama_form(schema: dict[str, Any], name: str) -> dict[str, Any]:
    """Ollama: ``format`` holds the schema."""
    return {"format": schema}


@register_schema_form("llamacpp")
def _llamacpp_form(schema: dict[str, Any], name: str) -> dict[str, Any]:
    """llama.cpp's own ``llama-server``: top-level ``json_schema`` (converted to a grammar by the server)."""
    return {"json_schema": schema}


@register_schema_form("llama-cpp-python")
def _llama_cpp_python_form(schema: dict[str, Any], name: str) -> dict[str, Any]:
    """llama-cpp-python's ``llama_cpp.server``: ``response_format: {type: json_object, schema}``. It ignores
    a top-level ``json_schema`` and answers HTTP 500 to ``response_format: {type: json_schema}``."""
    return {"response_format": {"type": "json_object", "schema": schema}}


@register_schema_form("none")
def _no_form(schema: dict[str, Any], name: str) -> dict[str, Any]:
    """No server-side constraint: the prompt asks for JSON and the answer is validated afterwards (for
    servers that accept no schema form at all)."""
    return {}


PROBE_ORDER: tuple[str, ...] = ("openai", "llama-cpp-python", "vllm", "ollama", "llamacpp", "vllm-guided")
"""The forms ``server=auto`` tries, most common first: the first one whose answer obeys a schema the prompt
does not describe is the one the server enforces (``none`` when none is)."""


def schema_fields(flavour: str, schema: dict[str, Any], name: str = "answer") -> dict[str, Any]:
    """Request-body fields that carry ``schema`` for a server of ``flavour``."""
    try:
        form = SCHEMA_FORMS[flavour]
    except KeyError:
        known = ", ".join(sorted(SCHEMA_FORMS))
        raise InvalidSchemaError(f"unknown server flavour {flavour!r} (known: {known})") from None
    return form(schema, name)


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


def _strip_fences(text: str) -> str:
    """Drop a Markdown code fence around JSON (servers without constrained decoding add them)."""
    s = text.strip()
    if s.startswith("```"):
        first_nl = s.find("\n")
        if first_nl != -1 and s.endswith("```"):
            return s[first_nl + 1 : -3].strip()
    return s


def parse_json_answer(text: str | None, schema: dict[str, Any], model: str) -> Any:
    """Decode ``text`` as JSON and validate it against ``schema``; errors keep the raw text."""
    if text is None or not text.strip():
        raise ModelOutputError(
            f"model {model} returned no text where JSON was required", model=model, raw_text=text
        )
    try:
        value = json.loads(_strip_fences(text))
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
