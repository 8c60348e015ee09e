"""Schemas a grammar can hold: the relaxation sent to grammar decoders (llama.cpp, in-process or a server),
the depth check that keeps a too-deep grammar from segfaulting the process, and validation against the full
schema afterwards."""

from __future__ import annotations

import pytest

from dataclaw.core.ids import canonical_json
from dataclaw.models.errors import ModelOutputError, ModelRequestError
from dataclaw.models.schema import GRAMMAR_MAX_REPEAT, grammar_schema, parse_json_answer
from dataclaw.models.servers import schema_fields

FULL = {
    "type": "object",
    "properties": {
        "analysis": {"type": "string", "maxLength": 1200, "minLength": 600},
        "code": {"type": "string", "pattern": "^[A-Z]{3}$", "maxLength": 3},
        "score": {"type": "integer", "minimum": 0, "maximum": 3},
        "pattern": {"enum": [{"pattern": "kept: a value, not a schema"}]},
        "items": {"type": "array", "items": {"type": "string", "format": "date"}, "maxItems": 5000},
    },
    "required": ["analysis", "score"],
}


def test_relaxation_caps_lengths_keeps_patterns_and_enumerates_small_ranges():
    relaxed = grammar_schema(FULL)
    props = relaxed["properties"]
    assert props["analysis"] == {"type": "string", "maxLength": GRAMMAR_MAX_REPEAT}
    assert props["code"] == FULL["properties"]["code"]  # the pattern keeps a small model's ids in shape
    assert props["score"]["enum"] == [0, 1, 2, 3]
    assert props["pattern"] == FULL["properties"]["pattern"]  # a property named like a keyword is kept whole
    assert props["items"] == {
        "type": "array",
        "items": {"type": "string", "format": "date"},
        "maxItems": GRAMMAR_MAX_REPEAT,
    }
    assert FULL["properties"]["analysis"]["maxLength"] == 1200  # the input is not modified


def test_the_answer_is_still_validated_against_the_full_schema():
    # obeys the relaxed schema, breaks the full one: minLength 600 and a score out of range are caught
    with pytest.raises(ModelOutputError, match="analysis"):
        parse_json_answer('{"analysis": "short", "score": 2}', FULL, "m")
    with pytest.raises(ModelOutputError, match="score"):
        parse_json_answer('{"analysis": "' + "x" * 600 + '", "score": 7}', FULL, "m")
    # a raw newline inside a string (grammar decoders allow one) is read, not an invalid-JSON error
    assert parse_json_answer('{"analysis": "' + "x\n" * 300 + '", "score": 1}', FULL, "m")["score"] == 1


@pytest.mark.parametrize("kind", ["llamacpp", "llama-cpp-python"])
def test_llama_cpp_servers_get_the_relaxed_schema(kind):
    fields = schema_fields(kind, FULL)
    sent = fields.get("json_schema") or fields["response_format"]["schema"]
    assert sent == grammar_schema(FULL)
    assert schema_fields("openai", FULL)["response_format"]["json_schema"]["schema"] == FULL


def test_a_grammar_too_deep_for_llama_cpp_is_refused_before_it_is_built():
    pytest.importorskip("llama_cpp", reason="the embedded model needs dataclaw[local]")
    from dataclaw.models.backends.local import (
        GRAMMAR_MAX_DEPTH,
        _checked_grammar,
        decoding_schema,
        grammar_depth,
    )

    assert grammar_depth('a ::= ("(" ([)(] (b)?)?)? "\\")"') == 3
    # the rubric-sized bound that segfaulted (maxLength 1200 → 1200 nested groups) is named, not run
    deep = {"type": "object", "properties": {"a": {"type": "string", "maxLength": 1200}}}
    problem = _checked_grammar(canonical_json(deep))
    assert problem and "1200 levels" in problem and str(GRAMMAR_MAX_DEPTH) in problem
    assert decoding_schema(deep, "local:x")["properties"]["a"]["maxLength"] == GRAMMAR_MAX_REPEAT


def test_a_refused_grammar_is_a_model_error_of_the_call(monkeypatch):
    pytest.importorskip("llama_cpp", reason="the embedded model needs dataclaw[local]")
    from dataclaw.models.backends import local

    monkeypatch.setattr(local, "GRAMMAR_MAX_DEPTH", 20)
    schema = {"type": "object", "properties": {"refused_here": {"type": "string", "maxLength": 40}}}
    with pytest.raises(ModelRequestError, match="40 levels deep"):
        local.decoding_schema(schema, "local:x")


def test_an_isolated_model_turns_a_crash_of_llama_cpp_into_the_calls_model_error(monkeypatch, tmp_path):
    """``local:…?isolate=true`` runs llama.cpp in a child process: the grammar that segfaulted `tasks audit`
    (the depth check switched off here to let it through) kills only the child; the call is a
    ModelRequestError naming the signal, and the next call gets a fresh child and a valid answer."""
    pytest.importorskip("llama_cpp", reason="the embedded model needs dataclaw[local]")
    import asyncio

    from dataclaw.models import get_model
    from dataclaw.models.backends import local

    monkeypatch.setattr(local, "GRAMMAR_MAX_DEPTH", 10**6)
    monkeypatch.setattr(local, "grammar_schema", lambda schema: schema)  # the rubric's schema, unrelaxed
    local._checked_grammar.cache_clear()
    model = get_model("local:smollm2-135m?isolate=true", cache=False)
    deep = {"type": "object", "properties": {"a": {"type": "string", "maxLength": 2000}}, "required": ["a"]}
    small = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    try:
        with pytest.raises(ModelRequestError, match=r"model process crashed \(signal 11\)"):
            model.complete_sync("Say hello in JSON.", schema=deep, max_tokens=8)
        assert (
            model.complete_sync("Give a number in JSON.", schema=small, max_tokens=12).parsed["a"] is not None
        )
    finally:
        asyncio.run(model.aclose())
        local._checked_grammar.cache_clear()
