"""Server kinds: how each kind of OpenAI-compatible server wants a request (the ``server=`` option of an
``http://…/v1::<model>`` model string).

A kind says in which request field a JSON schema goes (its structured-output form: OpenAI
``response_format``, vLLM ``structured_outputs``, Ollama ``format``, llama.cpp ``json_schema`` …) and,
where it differs from OpenAI's, how its messages must look. ``auto`` has no form of its own: the backend
probes the endpoint once and uses the form it enforces. A kind from outside the package is an entry point
in the ``dataclaw.server_kinds`` group whose value is a :class:`ServerKind`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dataclaw.core.registry import Registry
from dataclaw.models.errors import InvalidSchemaError
from dataclaw.models.schema import grammar_schema

SchemaForm = Callable[[dict[str, Any], str], dict[str, Any]]
"""(schema, name) → top-level fields to merge into the chat-completions request body."""
MessageForm = Callable[[list[dict[str, Any]]], list[dict[str, Any]]]
"""OpenAI-form messages → the messages a server kind accepts."""


@dataclass(frozen=True)
class ServerKind:
    """One kind of server: ``schema``, its schema form (None: found by probing, ``auto``); ``messages``,
    how its messages must look where that differs from OpenAI's form."""

    name: str
    schema: SchemaForm | None
    messages: MessageForm | None = None


SERVER_KINDS: Registry[ServerKind] = Registry("server kind")


def register_server_kind(
    name: str, *, messages: MessageForm | None = None
) -> Callable[[SchemaForm], SchemaForm]:
    """Decorator: the decorated schema form is server kind ``name``; refuses a name that is taken."""

    def deco(form: SchemaForm) -> SchemaForm:
        SERVER_KINDS.add(ServerKind(name, form, messages))
        return form

    return deco


SERVER_KINDS.add(ServerKind("auto", None))


@register_server_kind("openai")
def _openai_form(schema: dict[str, Any], name: str) -> dict[str, Any]:
    """OpenAI ``response_format`` json_schema; also understood by SGLang, recent vLLM and llama.cpp."""
    return {"response_format": {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}}


@register_server_kind("sglang")
def _sglang_form(schema: dict[str, Any], name: str) -> dict[str, Any]:
    """SGLang takes the OpenAI form."""
    return _openai_form(schema, name)


@register_server_kind("vllm")
def _vllm_form(schema: dict[str, Any], name: str) -> dict[str, Any]:
    """vLLM ≥ 0.10: ``structured_outputs: {"json": schema}`` (the only form since v0.12)."""
    return {"structured_outputs": {"json": schema}}


@register_server_kind("vllm-guided")
def _vllm_guided_form(schema: dict[str, Any], name: str) -> dict[str, Any]:
    """Older vLLM (< 0.12): ``guided_json``."""
    return {"guided_json": schema}


@register_server_kind("ollama")
def _ollama_form(schema: dict[str, Any], name: str) -> dict[str, Any]:
    """Ollama: ``format`` holds the schema."""
    return {"format": schema}


@register_server_kind("llamacpp")
def _llamacpp_form(schema: dict[str, Any], name: str) -> dict[str, Any]:
    """llama.cpp's own ``llama-server``: top-level ``json_schema`` (converted to a grammar by the server,
    so relaxed into one it can hold; the answer is validated against the full schema)."""
    return {"json_schema": grammar_schema(schema)}


def _string_contents(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """llama_cpp.server validates ``content`` as a string: an assistant turn that only calls tools must
    say ``""`` rather than ``null`` (HTTP 500 otherwise, which breaks every second rollout turn)."""
    return [{**m, "content": ""} if m.get("content") is None else m for m in messages]


@register_server_kind("llama-cpp-python", messages=_string_contents)
def _llama_cpp_python_form(schema: dict[str, Any], name: str) -> dict[str, Any]:
    """llama-cpp-python's ``llama_cpp.server``: ``response_format: {type: json_object, schema}``. It ignores
    a top-level ``json_schema`` and answers HTTP 500 to ``response_format: {type: json_schema}``. A grammar
    too, so the schema is relaxed into one it can hold."""
    return {"response_format": {"type": "json_object", "schema": grammar_schema(schema)}}


@register_server_kind("none")
def _no_form(schema: dict[str, Any], name: str) -> dict[str, Any]:
    """No server-side constraint: the prompt asks for JSON and the answer is validated afterwards (for
    servers that accept no schema form at all)."""
    return {}


PROBE_ORDER: tuple[str, ...] = ("openai", "llama-cpp-python", "vllm", "ollama", "llamacpp", "vllm-guided")
"""The forms ``server=auto`` tries, most common first: the first one whose answer obeys a schema the prompt
does not describe is the one the server enforces (``none`` when none is)."""


def schema_fields(kind: str, schema: dict[str, Any], name: str = "answer") -> dict[str, Any]:
    """Request-body fields that carry ``schema`` for a server of ``kind``."""
    form = SERVER_KINDS.get(kind).schema
    if form is None:
        raise InvalidSchemaError(f"server kind {kind!r} has no schema form of its own: probe the endpoint")
    return form(schema, name)


def server_messages(kind: str, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` as a server of ``kind`` takes them."""
    form = SERVER_KINDS.get(kind).messages
    return form(messages) if form is not None else messages
