"""The model layer against a real server nobody on the team wrote: llama-cpp-python's ``llama_cpp.server``
serving the embedded SmolLM2 GGUF (started once per session by the ``llama_cpp_server`` fixture).

This server is its own kind: it ignores a top-level ``json_schema``, answers HTTP 500 to
``response_format: {type: json_schema}``, takes ``response_format: {type: json_object, schema}``, calls
tools only with ``tool_choice``, and reads images as text (HTTP 200, the model never sees them)."""

from __future__ import annotations

import json

import pytest

from dataclaw.cli.app import _run
from dataclaw.models import (
    CapabilityError,
    ContextLengthError,
    ModelOutputError,
    UsageLedger,
    get_model,
    probe_endpoint,
)
from dataclaw.models.probe import forget, solid_png

SCHEMA = {
    "type": "object",
    "properties": {
        "colour": {"type": "string", "enum": ["red", "green", "blue"]},
        "count": {"type": "integer"},
    },
    "required": ["colour", "count"],
    "additionalProperties": False,
}
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather of a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
PROMPT = "Three red apples lie on the table. Give their colour and how many there are."


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("probe_cache")


@pytest.fixture(autouse=True)
def _one_probe_per_module(shared_cache, monkeypatch):
    """The server is probed once for the module (the disk cache next to the response cache), as a run
    would: each test still starts without the in-process memory."""
    monkeypatch.setenv("DATACLAW_CACHE_DIR", str(shared_cache))
    forget()
    yield
    forget()


def test_models_check_prints_what_this_server_supports(llama_cpp_server, capsys):
    assert _run(["models", "check", f"{llama_cpp_server.base_url}::smollm2?server=auto", "--json"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    caps = result["capabilities"]
    assert {k: v["ok"] for k, v in caps.items()} == {
        "chat": True, "json_schema": True, "tools": True, "images": False,
    }  # fmt: skip
    assert result["server"] == "llama-cpp-python"
    assert "openai: HTTP 500" in caps["json_schema"]["detail"]  # response_format json_schema is refused
    assert "did not see them" in caps["images"]["detail"]  # HTTP 200, but the image was read as text
    assert result["check"]["ok"] and isinstance(result["check"]["answer"]["answer"], int)
    # probe_endpoint, the function a runner calls before a long run, reads the same (cached) result
    again = probe_endpoint(f"{llama_cpp_server.base_url}::smollm2")
    assert (again.chat, again.json_schema, again.tools, again.images) == (
        True,
        "llama-cpp-python",
        True,
        False,
    )


def test_server_auto_gives_schema_constrained_answers_that_validate(llama_cpp_server):
    model = get_model(f"{llama_cpp_server.base_url}::smollm2?server=auto", cache=False)
    for prompt in (PROMPT, "Two green pears. Their colour and number?"):
        done = model.complete_sync(prompt, schema=SCHEMA, temperature=0, max_tokens=40)
        assert set(done.parsed) == {"colour", "count"} and done.parsed["colour"] in {"red", "green", "blue"}
        assert isinstance(done.parsed["count"], int) and done.usage.completion_tokens > 0
    assert model.backend.form == "llama-cpp-python"


def test_the_openai_form_is_one_capability_error_not_five_retries(llama_cpp_server):
    model = get_model(f"{llama_cpp_server.base_url}::smollm2?server=openai&max_retries=4", cache=False)
    before = llama_cpp_server.statuses()
    with pytest.raises(
        CapabilityError, match=r"refuses JSON-schema requests in the server=openai form"
    ) as err:
        model.complete_sync(PROMPT, schema=SCHEMA, max_tokens=40)
    sent = llama_cpp_server.statuses()[len(before) :]
    assert sent.count(500) == 1  # refused once, then no retry (the probe, if any, asks other forms)
    assert err.value.fatal and err.value.capability == "json_schema"


def test_the_llama_server_form_is_ignored_by_this_kind(llama_cpp_server):
    model = get_model(f"{llama_cpp_server.base_url}::smollm2?server=llamacpp", cache=False)
    with pytest.raises(ModelOutputError, match="invalid JSON"):  # top-level json_schema: not enforced
        model.complete_sync("Say hello.", schema=SCHEMA, temperature=0, max_tokens=24)


def test_tool_calls_parse_over_two_turns(llama_cpp_server):
    model = get_model(f"{llama_cpp_server.base_url}::smollm2?server=auto", cache=False)
    messages = [{"role": "user", "content": "What is the weather in Paris? Use the get_weather tool."}]
    first = model.complete_sync(messages, tools=[WEATHER], temperature=0, max_tokens=64)
    (call,) = first.tool_calls
    assert call["function"]["name"] == "get_weather"
    assert json.loads(call["function"]["arguments"]).get("city") == "Paris"
    messages += [
        {"role": "assistant", "content": None, "tool_calls": first.tool_calls},
        {"role": "tool", "tool_call_id": call["id"], "content": json.dumps({"temp_c": 21, "sky": "clear"})},
    ]
    second = model.complete_sync(messages, tools=[WEATHER], temperature=0, max_tokens=64)
    assert second.tool_calls or second.text  # a second turn the server accepted and answered
    for c in second.tool_calls:
        assert isinstance(json.loads(c["function"]["arguments"]), dict)


def test_images_to_this_text_only_server_are_refused_or_dropped_once(llama_cpp_server):
    png = solid_png((230, 20, 20))
    strict = get_model(f"{llama_cpp_server.base_url}::smollm2", cache=False)
    with pytest.raises(CapabilityError, match=r"::smollm2 does not take images") as err:
        strict.complete_sync("What colour is this?", images=[png], max_tokens=8)
    assert err.value.fatal and "\n" not in str(err.value)
    ledger = UsageLedger()
    lenient = get_model(f"{llama_cpp_server.base_url}::smollm2?drop_images=true", cache=False, ledger=ledger)
    done = lenient.complete_sync("Anchors: 0.0s red frame. Name the colour.", images=[png], max_tokens=8)
    assert done.text
    usage = ledger.summary()["by_model"][lenient.model_id]
    assert usage["downgrades"] == {"images": 1} and usage["errors"] == {}


def test_a_prompt_longer_than_the_context_names_the_counts(llama_cpp_server):
    model = get_model(f"{llama_cpp_server.base_url}::smollm2", cache=False)
    with pytest.raises(ContextLengthError, match=r"tokens requested, the context holds 2048") as err:
        model.complete_sync("word " * 3000, max_tokens=8)
    assert err.value.limit == 2048 and err.value.requested > 2048 and not err.value.fatal
