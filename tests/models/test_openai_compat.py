"""The OpenAI-compatible backend against a real local HTTP server: schema forms, tools, retries, timeouts,
concurrency, caching, cost and every bad-input path."""

from __future__ import annotations

import asyncio
import base64
import json
import socket
from pathlib import Path

import numpy as np
import pytest

from dataclaw.core.errors import ConfigError, DataclawError
from dataclaw.core.store import RunStore
from dataclaw.models import (
    InvalidSchemaError,
    ModelAuthError,
    ModelNotFoundError,
    ModelOutputError,
    ModelRequestError,
    ModelServerError,
    ModelTimeoutError,
    ModelUnreachableError,
    ResponseCache,
    UnknownModelError,
    UsageLedger,
    get_model,
)
from support.openai_server import KindResponder, OpenAIServer, Reply

SCHEMA = {
    "type": "object",
    "properties": {"task": {"type": "string"}, "steps": {"type": "integer", "minimum": 1}},
    "required": ["task", "steps"],
}
ANSWER = {"task": "pick up the bottle", "steps": 3}
FAST = "backoff=0.01&backoff_max=0.05"


def _run(coro):
    return asyncio.run(coro)


@pytest.mark.parametrize(
    ("server_opt", "field", "expected"),
    [
        (
            None,
            "response_format",
            {"type": "json_schema", "json_schema": {"name": "answer", "schema": SCHEMA}},
        ),
        (
            "sglang",
            "response_format",
            {"type": "json_schema", "json_schema": {"name": "answer", "schema": SCHEMA}},
        ),
        ("vllm", "structured_outputs", {"json": SCHEMA}),
        ("vllm-guided", "guided_json", SCHEMA),
        ("ollama", "format", SCHEMA),
        ("llamacpp", "json_schema", SCHEMA),
        ("llama-cpp-python", "response_format", {"type": "json_object", "schema": SCHEMA}),
    ],
)
def test_schema_is_sent_in_each_servers_own_form(server, server_opt, field, expected):
    server.enqueue(Reply.json(ANSWER))
    spec = f"{server.base_url}::qwen" + (f"?server={server_opt}" if server_opt else "")
    done = _run(get_model(spec, cache=False).complete("Describe the task.", schema=SCHEMA))
    (body,) = server.chat_bodies()
    assert body[field] == expected
    others = {"response_format", "structured_outputs", "guided_json", "format", "json_schema"} - {field}
    assert not others & set(body), "the schema must be sent in exactly one form"
    assert body["model"] == "qwen"
    assert body["messages"] == [{"role": "user", "content": "Describe the task."}]
    assert done.parsed == ANSWER


def test_schema_mode_option_is_an_alias_of_server(server):
    server.enqueue(Reply.json(ANSWER))
    _run(get_model(f"{server.base_url}::m", cache=False, schema_mode="vllm").complete("x", schema=SCHEMA))
    assert server.chat_bodies()[0]["structured_outputs"] == {"json": SCHEMA}


def test_tool_calls_round_trip_in_openai_format(server):
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_order",
                "description": "Look up an order",
                "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
            },
        }
    ]
    server.enqueue(Reply.tool_call("get_order", {"order_id": "W42"}, call_id="call_7"))
    done = _run(get_model(f"{server.base_url}::m", cache=False).complete("Where is W42?", tools=tools))
    body = server.chat_bodies()[0]
    assert body["tools"] == tools
    assert done.tool_calls == [
        {
            "id": "call_7",
            "type": "function",
            "function": {"name": "get_order", "arguments": '{"order_id": "W42"}'},
        }
    ]
    assert done.finish_reason == "tool_calls"


def test_bare_function_tools_are_wrapped_and_tool_choice_sent(server):
    server.enqueue(Reply.tool_call("finish", {}))
    tool = {"name": "finish", "parameters": {"type": "object", "properties": {}}}
    _run(
        get_model(f"{server.base_url}::m", cache=False).complete(
            "done?", tools=[tool], tool_choice="required"
        )
    )
    body = server.chat_bodies()[0]
    assert body["tools"] == [{"type": "function", "function": tool}]
    assert body["tool_choice"] == "required"


@pytest.mark.parametrize(
    ("raw", "why"),
    [("{not json", "not valid JSON"), ("", "empty"), ("[1]", "not a JSON object")],
)
def test_tool_call_with_unusable_arguments_keeps_them_raw_with_a_parse_error(server, raw, why):
    # not an error of the whole answer: an agent loop turns it into a recoverable tool error
    server.enqueue(Reply.tool_call("get_order", raw), Reply.tool_call("get_order", {"order_id": "W1"}))
    tools = [{"name": "get_order", "parameters": {"type": "object"}}]
    model = get_model(f"{server.base_url}::m", cache=False)
    bad, good = (_run(model.complete(f"x{i}", tools=tools)) for i in range(2))
    assert bad.tool_calls[0]["function"] == {"name": "get_order", "arguments": raw}
    assert why in bad.tool_calls[0]["parse_error"]
    assert "parse_error" not in good.tool_calls[0]


def test_retries_429_then_succeeds(server):
    server.enqueue(Reply.error(429, "slow down"), Reply.error(503, "overloaded"), Reply.json(ANSWER))
    done = _run(get_model(f"{server.base_url}::m?{FAST}", cache=False).complete("x", schema=SCHEMA))
    assert done.parsed == ANSWER
    assert server.request_count == 3


def test_retry_after_header_is_honoured(server):
    server.enqueue(Reply.error(429, headers={"Retry-After": "0.3"}), Reply.text("ok"))
    done = _run(get_model(f"{server.base_url}::m?{FAST}&backoff_max=1", cache=False).complete("x"))
    assert done.text == "ok"
    assert done.latency_s >= 0.3


def test_server_errors_give_up_after_max_retries_with_raw_text(server):
    server.enqueue(*[Reply.error(500, f"boom {i}") for i in range(5)])
    model = get_model(f"{server.base_url}::m?{FAST}&max_retries=2", cache=False)
    with pytest.raises(ModelServerError, match=r"HTTP 500: boom 2.*after 3 attempt") as err:
        _run(model.complete("x"))
    assert server.request_count == 3
    assert "boom 2" in err.value.raw_text and not err.value.fatal


def test_a_5xx_that_repeats_word_for_word_is_not_retried_again(server):
    server.enqueue(*[Reply.error(500, "boom")] * 2)  # a third try would get the default "ok"
    model = get_model(f"{server.base_url}::m?{FAST}&max_retries=4", cache=False)
    with pytest.raises(ModelServerError, match=r"HTTP 500: boom.*after 2 attempt"):
        _run(model.complete("x"))
    assert server.request_count == 2
    server.enqueue(*[Reply.error(503, "overloaded")] * 3, Reply.text("fine"))  # busy is not deterministic
    assert _run(model.complete("y")).text == "fine"


def test_timeout_is_retried_then_reported(server):
    server.enqueue(Reply.text("late", delay=1.0), Reply.text("late", delay=1.0))
    model = get_model(f"{server.base_url}::m?{FAST}&timeout=0.2&max_retries=1", cache=False)
    with pytest.raises(ModelTimeoutError, match=r"no answer within 0.2s after 2 attempt"):
        _run(model.complete("x"))
    assert server.request_count == 2


def test_timeout_then_success(server):
    server.enqueue(Reply.text("late", delay=3.0), Reply.text("on time"))
    model = get_model(f"{server.base_url}::m?{FAST}&timeout=1.0", cache=False)
    assert _run(model.complete("x")).text == "on time"


def test_concurrency_is_bounded(tmp_path):
    async def many(model, n):
        return await asyncio.gather(*(model.complete(f"prompt {i}") for i in range(n)))

    with OpenAIServer(delay=0.3) as server:
        done = _run(many(get_model(f"{server.base_url}::m?concurrency=3", cache=False), 12))
        assert len(done) == 12
        assert server.request_count == 12
        assert server.max_in_flight == 3
        server.reset_counters()
        server.delay = 0.4
        _run(many(get_model(f"{server.base_url}::m?concurrency=8", cache=False), 8))
        assert server.max_in_flight > 3  # the server itself is not what limited the first run


def test_repeat_is_a_cache_hit_without_a_second_request(server, tmp_path):
    server.default = Reply.json(ANSWER, prompt_tokens=1000, completion_tokens=100)
    ledger = UsageLedger()
    model = get_model(f"{server.base_url}::gpt-4o-mini", cache=tmp_path / "c.sqlite", ledger=ledger)
    first = _run(model.complete("describe", schema=SCHEMA, temperature=0))
    second = _run(model.complete("describe", schema=SCHEMA, temperature=0))
    assert server.request_count == 1
    assert (first.cached, second.cached) == (False, True)
    assert second.parsed == first.parsed == ANSWER
    assert first.cost_usd > 0 and second.cost_usd == 0
    # any part of the key changing is a miss: params, schema, messages
    _run(model.complete("describe", schema=SCHEMA, temperature=0.5))
    _run(model.complete("describe", temperature=0))
    _run(model.complete("describe it", schema=SCHEMA, temperature=0))
    assert server.request_count == 4
    # a fresh model on the same cache file (a resumed run) does not pay again
    again = get_model(f"{server.base_url}::gpt-4o-mini", cache=ResponseCache(tmp_path / "c.sqlite"))
    assert _run(again.complete("describe", schema=SCHEMA, temperature=0)).cached
    assert server.request_count == 4
    assert ledger.totals().cache_hits == 1 and ledger.totals().calls == 5


def test_default_cache_is_on_and_use_cache_false_bypasses_it(server):
    model = get_model(f"{server.base_url}::m")
    _run(model.complete("hello"))
    assert _run(model.complete("hello")).cached
    assert not _run(model.complete("hello", use_cache=False)).cached
    assert server.request_count == 2
    assert model.cache is not None and model.cache.path.name == "responses.sqlite"


def test_cost_accounting_per_call_and_per_run(server, tmp_path):
    server.default = Reply.text("fine", prompt_tokens=2_000_000, completion_tokens=1_000_000)
    ledger = UsageLedger()
    priced = get_model(f"{server.base_url}::gpt-4o-mini", cache=False, ledger=ledger)
    custom = get_model(
        f"{server.base_url}::my-model", cache=False, ledger=ledger, prices={"my-model": [1.0, 3.0]}
    )
    unknown = get_model(f"{server.base_url}::mystery-7b", cache=False, ledger=ledger)
    a = _run(priced.complete("a"))
    b = _run(custom.complete("b"))
    c = _run(unknown.complete("c"))
    assert a.cost_usd == pytest.approx(2 * 0.15 + 1 * 0.60) and a.priced
    assert b.cost_usd == pytest.approx(2 * 1.0 + 1 * 3.0) and b.priced
    assert c.cost_usd == 0 and not c.priced
    total = ledger.totals()
    assert total.calls == 3
    assert total.prompt_tokens == 6_000_000 and total.completion_tokens == 3_000_000
    assert total.cost_usd == pytest.approx(0.9 + 5.0)
    assert not total.priced
    text = ledger.render()
    assert "mystery-7b" in text and "counted as $0" in text
    with RunStore(tmp_path / "run") as store:
        manifest = ledger.save(store)
    saved = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert saved["models"]["usage"] == manifest["models"]["usage"] == ledger.summary()


def test_openai_scheme_reads_base_url_and_key_from_env(server, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123")
    done = _run(get_model("openai:gpt-4o", cache=False).complete("hi"))
    assert done.model == "openai:gpt-4o"
    assert server.requests[0].headers["authorization"] == "Bearer sk-test-123"
    assert server.chat_bodies()[0]["model"] == "gpt-4o"


def test_openai_scheme_without_key_says_so(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        get_model("openai:gpt-4o")


def test_wrong_api_key_is_one_clear_auth_error_without_retries(tmp_path):
    with OpenAIServer(api_key="right-key") as server:
        model = get_model(f"{server.base_url}::m", cache=False, api_key="wrong-key")
        with pytest.raises(ModelAuthError, match=r"refused the API key \(HTTP 401: Incorrect API key") as err:
            _run(model.complete("x"))
        assert server.request_count == 1
        assert "Incorrect API key" in err.value.raw_text
        ok = get_model(f"{server.base_url}::m", cache=False, api_key="right-key")
        assert _run(ok.complete("x")).text == "ok"


def test_unreachable_server_names_the_url():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    model = get_model(f"http://127.0.0.1:{port}/v1::m?{FAST}&max_retries=1", cache=False)
    with pytest.raises(
        ModelUnreachableError, match=rf"cannot reach the server at http://127.0.0.1:{port}/v1"
    ):
        _run(model.complete("x"))


def test_unknown_model_name_lists_the_models_the_server_has(tmp_path):
    with OpenAIServer(models=["qwen2.5-7b", "llama-3-8b"]) as server:
        server.enqueue(Reply.error(404, "The model `nope` does not exist."))
        model = get_model(f"{server.base_url}::nope?{FAST}", cache=False)
        with pytest.raises(
            ModelNotFoundError, match=r"has no model 'nope' \(it serves: qwen2.5-7b, llama-3-8b\)"
        ) as err:
            _run(model.complete("x"))
        assert err.value.fatal and err.value.available == ["qwen2.5-7b", "llama-3-8b"]
        assert isinstance(err.value, ModelRequestError)
        assert server.request_count == 1  # not retried
        assert [r.path for r in server.requests] == ["/v1/chat/completions", "/v1/models"]


def test_invalid_schema_is_refused_before_sending(server):
    model = get_model(f"{server.base_url}::m", cache=False)
    with pytest.raises(InvalidSchemaError, match=r"not valid JSON Schema at properties/steps.*'integr'"):
        _run(model.complete("x", schema={"type": "object", "properties": {"steps": {"type": "integr"}}}))
    with pytest.raises(InvalidSchemaError, match="must be a JSON object"):
        _run(model.complete("x", schema=["not", "a", "schema"]))
    with pytest.raises(InvalidSchemaError, match="tool 'bad': parameters"):
        _run(model.complete("x", tools=[{"name": "bad", "parameters": {"type": 5}}]))
    assert server.request_count == 0


def test_invalid_json_answer_keeps_raw_text_and_is_not_cached(server, tmp_path):
    ledger = UsageLedger()
    model = get_model(f"{server.base_url}::m", cache=tmp_path / "c.sqlite", ledger=ledger)
    server.enqueue(Reply.text("Sure! Here is the JSON: {task: bottle"))
    with pytest.raises(ModelOutputError, match="invalid JSON") as err:
        _run(model.complete("x", schema=SCHEMA))
    assert err.value.raw_text == "Sure! Here is the JSON: {task: bottle"
    assert isinstance(err.value, DataclawError)
    server.enqueue(Reply.json({"task": "bottle", "steps": 0}))
    with pytest.raises(ModelOutputError, match=r"does not match the schema at steps") as err:
        _run(model.complete("x", schema=SCHEMA))
    assert json.loads(err.value.raw_text) == {"task": "bottle", "steps": 0}
    server.enqueue(Reply.json(ANSWER))
    assert _run(model.complete("x", schema=SCHEMA)).parsed == ANSWER  # the failures were not cached
    assert server.request_count == 3
    assert ledger.totals().failed == 2


def test_fenced_json_is_accepted(server):
    server.enqueue(Reply.text("```json\n" + json.dumps(ANSWER) + "\n```"))
    assert _run(get_model(f"{server.base_url}::m", cache=False).complete("x", schema=SCHEMA)).parsed == ANSWER


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("gpt-4o", "has no scheme"),
        ("anthropic:claude", "scheme 'anthropic' is not one of"),
        ("http://localhost:8000/v1", r"must look like http://host:port/v1::<model name>"),
        ("http://localhost:8000/v1::m?colour=blue", r"unknown option\(s\) colour"),
        ("http://localhost:8000/v1::m?concurrency=many", "concurrency='many' must be a int"),
        ("http://localhost:8000/v1::m?server=tgi", "unknown server kind 'tgi'"),
        ("local:llama-70b", "unknown local model 'llama-70b'"),
        ("replay:", "needs a file"),
    ],
)
def test_bad_model_strings_are_one_clear_error(spec, match):
    with pytest.raises(ConfigError, match=match):
        get_model(spec, cache=False)


def test_unknown_scheme_is_an_unknown_model_error():
    with pytest.raises(UnknownModelError):
        get_model("bogus:thing")


def test_images_are_sent_as_data_uri_parts(server, tmp_path):
    pil = pytest.importorskip("PIL.Image")
    png = tmp_path / "red.png"
    pil.new("RGB", (4, 3), (255, 0, 0)).save(png)
    arr = np.zeros((2, 5, 3), dtype=np.uint8)
    server.responder = KindResponder(images="see")  # a vision model: the probe before the first image passes
    model = get_model(f"{server.base_url}::vlm", cache=False)
    _run(model.complete("What is shown?", images=[png, png.read_bytes(), arr, pil.open(png)]))
    content = server.chat_bodies()[-1]["messages"][-1]["content"]
    assert content[0] == {"type": "text", "text": "What is shown?"}
    urls = [p["image_url"]["url"] for p in content[1:]]
    assert len(urls) == 4 and all(u.startswith("data:image/png;base64,") for u in urls)
    assert base64.b64decode(urls[0].split(",", 1)[1]) == png.read_bytes()
    decoded = pil.open(__import__("io").BytesIO(base64.b64decode(urls[2].split(",", 1)[1])))
    assert decoded.size == (5, 2)


def test_bad_image_input_names_the_problem(server, tmp_path):
    model = get_model(f"{server.base_url}::vlm", cache=False)
    with pytest.raises(ConfigError, match="does not exist"):
        _run(model.complete("x", images=[tmp_path / "missing.png"]))
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(ConfigError, match="not a PNG, JPEG"):
        _run(model.complete("x", images=[tmp_path / "notes.txt"]))
    assert server.request_count == 0


def test_model_is_usable_from_two_event_loops(server):
    model = get_model(f"{server.base_url}::m", cache=False)
    assert _run(model.complete("one")).text == "ok"
    assert model.complete_sync("two").text == "ok"
    assert server.request_count == 2


def test_price_file_override(server, tmp_path: Path):
    prices = tmp_path / "prices.yaml"
    prices.write_text("house-model: {input: 10, output: 20}\n")
    server.default = Reply.text("x", prompt_tokens=100_000, completion_tokens=50_000)
    done = _run(get_model(f"{server.base_url}::house-model", cache=False, prices=prices).complete("x"))
    assert done.cost_usd == pytest.approx(1.0 + 1.0)


def test_a_model_survives_pickling_for_process_workers(server, tmp_path):
    import pickle

    ledger = UsageLedger()
    model = get_model(
        f"{server.base_url}::m", cache=tmp_path / "c.sqlite", ledger=ledger, record_to=tmp_path / "r.jsonl"
    )
    assert _run(model.complete("before")).text == "ok"  # binds clients to this loop first
    copy = pickle.loads(pickle.dumps(model))
    assert _run(copy.complete("before")).cached  # same cache file
    assert _run(copy.complete("after")).text == "ok"
    assert server.request_count == 2
    assert copy.ledger.totals().calls == 3 and ledger.totals().calls == 1


def test_a_body_that_is_not_a_chat_completion_is_an_output_error(server):
    server.enqueue(Reply(raw_body=b"<html>proxy error</html>"), Reply(raw_body=b'{"choices": []}'))
    model = get_model(f"{server.base_url}::m", cache=False)
    with pytest.raises(ModelOutputError, match="not a chat completion") as err:
        _run(model.complete("x"))
    assert err.value.raw_text == "<html>proxy error</html>"
    with pytest.raises(ModelOutputError, match="not a chat completion"):
        _run(model.complete("x"))
