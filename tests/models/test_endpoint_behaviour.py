"""The endpoint side of a long run against the suite's scripted server: server kinds and ``server=auto``,
capabilities instead of retries, one error class per failure, the circuit breaker, the deadline and the
adaptive concurrency window."""

from __future__ import annotations

import asyncio
import json
import socket
import time

import pytest

from dataclaw.models import (
    CapabilityError,
    CircuitOpenError,
    ContextLengthError,
    ModelAuthError,
    ModelConnectionRefusedError,
    ModelDNSError,
    ModelError,
    ModelOutputError,
    ModelTimeoutError,
    ModelTLSError,
    UsageLedger,
    get_model,
    probe_endpoint,
)
from dataclaw.models import errors as model_errors
from dataclaw.models.limiter import AdaptiveLimiter, Signal
from dataclaw.models.probe import capabilities_path, forget, solid_png
from support.openai_server import KindResponder, OpenAIServer, Reply

SCHEMA = {"type": "object", "properties": {"steps": {"type": "integer"}}, "required": ["steps"]}
FAST = "backoff=0.01&backoff_max=0.05"
TOOLS = [{"name": "get_order", "parameters": {"type": "object", "properties": {"id": {"type": "string"}}}}]


def _run(coro):
    return asyncio.run(coro)


async def _all(coros):
    return await asyncio.gather(*coros)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(autouse=True)
def _fresh_probe_memory():
    forget()
    yield
    forget()


# ---------------------------------------------------------------------------------------------------------
# forms


def test_tool_choice_auto_is_sent_whenever_tools_are_offered(server):
    server.enqueue(Reply.tool_call("get_order", {"id": "W1"}))
    done = _run(get_model(f"{server.base_url}::m", cache=False).complete("Where is W1?", tools=TOOLS))
    assert server.chat_bodies()[0]["tool_choice"] == "auto"
    assert done.tool_calls[0]["function"]["name"] == "get_order"


@pytest.mark.parametrize("kind", ["openai", "llama-cpp-python", "vllm", "ollama", "llamacpp"])
def test_server_auto_picks_the_form_the_server_enforces(kind):
    with OpenAIServer(KindResponder(kind, answer={"steps": 3})) as server:
        model = get_model(f"{server.base_url}::m?server=auto", cache=False)
        assert _run(model.complete("How many steps?", schema=SCHEMA)).parsed == {"steps": 3}
        assert model.backend.form == kind
        probes = server.request_count - 1
        # the choice is cached per endpoint: in this process and on disk next to the response cache
        again = get_model(f"{server.base_url}::m?server=auto", cache=False)
        _run(again.complete("How many steps now?", schema=SCHEMA))
        forget()
        third = get_model(f"{server.base_url}::m?server=auto", cache=False)
        _run(third.complete("And now?", schema=SCHEMA))
        assert server.request_count == probes + 3
        saved = json.loads(capabilities_path().read_text())
        assert saved[f"{server.base_url}::m"]["json_schema"] == kind


def test_server_auto_without_any_enforced_form_sends_the_schema_in_no_form(server):
    server.responder = lambda req: Reply.json({"steps": 2})  # answers JSON but ignores every schema field
    model = get_model(f"{server.base_url}::m?server=auto", cache=False)
    assert _run(model.complete("How many steps?", schema=SCHEMA)).parsed == {"steps": 2}
    body = server.chat_bodies()[-1]
    assert not {"response_format", "structured_outputs", "format", "json_schema", "guided_json"} & set(body)


def test_probe_endpoint_reports_each_capability_and_fails_fast_on_a_dead_endpoint(server):
    server.responder = KindResponder("vllm", images="500", tools=False)
    caps = probe_endpoint(f"{server.base_url}::m")
    assert (caps.chat, caps.json_schema, caps.tools, caps.images) == (True, "vllm", False, False)
    assert "HTTP 500" in caps.detail["images"]
    with pytest.raises(ModelConnectionRefusedError) as err:
        probe_endpoint(f"http://127.0.0.1:{_free_port()}/v1::m?max_retries=0")
    assert err.value.fatal
    local = probe_endpoint("local:smollm2-135m")
    assert (local.json_schema, local.images) == ("grammar", False)


# ---------------------------------------------------------------------------------------------------------
# capabilities, not retries


def test_images_to_a_server_that_refuses_them_are_one_capability_error_not_retries(server):
    server.responder = KindResponder(images="500")
    ledger = UsageLedger()
    model = get_model(f"{server.base_url}::text-7b?{FAST}", cache=False, ledger=ledger)
    with pytest.raises(CapabilityError, match=r"model .*::text-7b does not take images") as err:
        _run(model.complete("What is shown?", images=[solid_png((255, 0, 0))]))
    assert err.value.fatal and err.value.capability == "images"
    assert len(str(err.value).splitlines()) == 1
    image_bodies = [b for b in server.chat_bodies() if "image_url" in json.dumps(b)]
    assert len(image_bodies) == 1  # the probe's one try and nothing else: no retry, and no send
    assert ledger.summary()["by_model"][model.model_id]["errors"] == {"CapabilityError": 1}


def test_a_refusal_with_a_clear_message_needs_no_probe(server):
    server.responder = lambda req: Reply.error(400, "This model does not support tools")
    model = get_model(f"{server.base_url}::m?{FAST}", cache=False)
    with pytest.raises(CapabilityError, match="does not take tools") as err:
        _run(model.complete("x", tools=TOOLS))
    assert err.value.capability == "tools" and server.request_count == 1


def test_an_opaque_500_is_blamed_on_tools_only_when_the_probe_saw_tools_refused(server):
    def refuse_tools(req):
        return Reply.error(500, "internal error") if req.body.get("tools") else Reply.text("hello")

    server.responder = refuse_tools
    model = get_model(f"{server.base_url}::m?{FAST}", cache=False)
    with pytest.raises(CapabilityError, match="does not take tools"):
        _run(model.complete("x", tools=TOOLS))
    forget()
    text_only_answers = KindResponder(tools=False)  # takes tools, but its model answers the probe in text

    def fail_the_request(req):
        if req.body["messages"][0]["content"] == "x":
            return Reply.error(500, "internal error")
        return text_only_answers(req)

    server.responder = fail_the_request
    other = get_model(f"{server.base_url}::other?{FAST}", cache=False)
    with pytest.raises(model_errors.ModelServerError, match=r"HTTP 500: internal error.*after 2 attempt"):
        _run(other.complete("x", tools=TOOLS))  # a server error (retried once, then deterministic)


def test_drop_images_downgrades_once_and_the_ledger_shows_it(server):
    server.responder = KindResponder(images="blind")  # HTTP 200, but the model never sees the image
    ledger = UsageLedger()
    model = get_model(f"{server.base_url}::m?drop_images=true", cache=False, ledger=ledger)
    png = solid_png((0, 0, 255))
    first = _run(model.complete("Describe the frame. Anchors: t=1.5s door opens.", images=[png]))
    second = _run(model.complete("Describe the next frame.", images=[png]))
    assert first.text == second.text == "hello"
    sent = server.chat_bodies()[-2:]
    assert [b["messages"][0]["content"] for b in sent] == [
        "Describe the frame. Anchors: t=1.5s door opens.",  # the text (anchors) is kept
        "Describe the next frame.",
    ]
    assert not model.backend.supports_images
    usage = ledger.summary()["by_model"][model.model_id]
    assert usage["downgrades"] == {"images": 2} and "did not see them" in usage["downgrade_reasons"]["images"]
    assert "2 request(s) sent without images" in ledger.render()


def test_the_first_images_request_under_server_auto_is_refused_before_it_is_sent(server):
    server.responder = KindResponder(images="blind")  # HTTP 200, but the model never sees the image
    model = get_model(f"{server.base_url}::m?server=auto&{FAST}", cache=False)
    for _ in range(2):  # the first request (which probes the endpoint) and a later one alike
        with pytest.raises(CapabilityError, match="images"):
            _run(model.complete("Describe the frame.", images=[solid_png((0, 0, 255))]))
    assert not [b for b in server.chat_bodies() if b["messages"][0]["content"] == "Describe the frame."]


def test_the_openai_form_to_a_llama_cpp_python_server_is_a_capability_error(server):
    server.responder = KindResponder("llama-cpp-python", answer={"steps": 1})
    model = get_model(f"{server.base_url}::m?server=openai&{FAST}", cache=False)
    with pytest.raises(
        CapabilityError, match=r"refuses JSON-schema requests in the server=openai form.*auto"
    ):
        _run(model.complete("x", schema=SCHEMA))
    refused = [b for b in server.chat_bodies() if b["messages"][0]["content"] == "x"]
    assert len(refused) == 1


# ---------------------------------------------------------------------------------------------------------
# errors that say what happened


def test_each_failure_is_its_own_error_class_and_one_line(server):
    cases: list[tuple[str, type[ModelError], str]] = [
        ("http://no-such-host.invalid:8000/v1::m", ModelDNSError, "host name does not resolve"),
        (f"http://127.0.0.1:{_free_port()}/v1::m", ModelConnectionRefusedError, "connection refused"),
        (server.base_url.replace("http:", "https:") + "::m", ModelTLSError, "TLS handshake failed"),
    ]
    for spec, cls, text in cases:
        with pytest.raises(cls, match=text) as err:
            _run(get_model(f"{spec}?max_retries=1&{FAST}", cache=False).complete("x"))
        assert err.value.fatal and "\n" not in str(err.value)
    server.enqueue(Reply.error(403, "Forbidden: key revoked"))
    with pytest.raises(ModelAuthError, match=r"refused the API key \(HTTP 403: Forbidden: key revoked\)"):
        _run(get_model(f"{server.base_url}::m", cache=False).complete("x"))


@pytest.mark.parametrize(
    ("message", "limit", "requested"),
    [
        (  # OpenAI, vLLM, llama_cpp.server
            "This model's maximum context length is 2048 tokens. However, you requested 5018 tokens "
            "(5010 in the messages, 8 in the completion).",
            2048,
            5018,
        ),
        ("The input (9000 tokens) is longer than the model's context length (8192 tokens).", 8192, 9000),
        ("the request exceeds the available context size, try increasing it", None, None),  # llama-server
    ],
)
def test_context_length_exceeded_names_the_counts(server, message, limit, requested):
    server.enqueue(Reply.error(400, message))
    with pytest.raises(ContextLengthError, match="does not fit the context") as err:
        _run(get_model(f"{server.base_url}::m", cache=False).complete("long"))
    assert (err.value.limit, err.value.requested) == (limit, requested)
    if limit:
        assert f"{requested} tokens requested, the context holds {limit}" in str(err.value)
    assert not err.value.fatal and server.request_count == 1


def test_every_model_error_class_says_whether_it_is_fatal():
    fatal = {
        "ModelUnreachableError", "ModelDNSError", "ModelConnectionRefusedError", "ModelTLSError",
        "ModelAuthError", "ModelNotFoundError", "CapabilityError", "ImagesNotSupportedError",
        "CircuitOpenError",
    }  # fmt: skip
    classes = {
        name: cls
        for name, cls in vars(model_errors).items()
        if isinstance(cls, type) and issubclass(cls, ModelError)
    }
    assert {name for name, cls in classes.items() if cls.fatal} == fatal
    assert not ModelOutputError.fatal and not ModelTimeoutError.fatal


def test_the_circuit_opens_after_consecutive_fatal_errors_and_fails_fast():
    port = _free_port()
    model = get_model(f"http://127.0.0.1:{port}/v1::m?max_retries=0&breaker=3", cache=False)
    for _ in range(3):
        with pytest.raises(ModelConnectionRefusedError):
            _run(model.complete("x"))
    start = time.perf_counter()
    with pytest.raises(CircuitOpenError, match=r"connection refused.*\[failing fast: 3 failures in a row\]"):
        _run(get_model(f"http://127.0.0.1:{port}/v1::m?max_retries=0&breaker=3", cache=False).complete("y"))
    assert time.perf_counter() - start < 0.3 and CircuitOpenError.fatal


def test_a_server_that_answers_nothing_opens_the_circuit_too():
    with OpenAIServer(delay=3.0) as server:
        spec = f"{server.base_url}::m?timeout=0.2&max_retries=0&breaker=2"
        for _ in range(2):
            with pytest.raises(ModelTimeoutError):
                _run(get_model(spec, cache=False).complete("x"))
        with pytest.raises(CircuitOpenError, match=r"no answer within 0.2s.*\[failing fast: 2 failures"):
            _run(get_model(spec, cache=False).complete("y"))
        assert server.request_count == 2


def test_the_deadline_bounds_a_request_over_all_its_retries(server):
    server.default = Reply.error(503, "loading model")
    model = get_model(
        f"{server.base_url}::m?deadline=0.6&backoff=0.2&backoff_max=0.2&max_retries=50", cache=False
    )
    start = time.perf_counter()
    with pytest.raises(ModelError, match="HTTP 503"):
        _run(model.complete("x"))
    assert time.perf_counter() - start < 1.5 and server.request_count < 10


def test_a_deadline_that_cuts_an_attempt_names_the_last_error_answer(server):
    """503, 503, then an answer slower than what is left of the deadline: the error says the deadline
    came and what the server last answered (a loaded machine cuts the last retry in flight: the user
    still learns the server was answering 503)."""
    server.enqueue(Reply.error(503, "loading model"), Reply.error(503, "loading model"))
    server.default = Reply.text("late", delay=2.0)
    model = get_model(
        f"{server.base_url}::m?deadline=0.8&backoff=0.05&backoff_max=0.05&max_retries=50", cache=False
    )
    with pytest.raises(
        ModelError, match=r"deadline of 0.8s after 3 attempt\(s\) \(the last answer: HTTP 503"
    ):
        _run(model.complete("x"))


# ---------------------------------------------------------------------------------------------------------
# back-pressure


def test_the_timeout_does_not_count_time_queued_in_our_own_window():
    with OpenAIServer(delay=0.4) as server:
        model = get_model(f"{server.base_url}::m?concurrency=1&timeout=0.7&max_retries=0", cache=False)
        done = _run(_all(model.complete(f"q{i}") for i in range(4)))
        assert [d.text for d in done] == ["ok"] * 4 and server.max_in_flight == 1


def test_requests_queued_at_a_one_slot_server_do_not_time_out_while_it_answers():
    with OpenAIServer(delay=0.3, slots=1) as server:
        ledger = UsageLedger()
        model = get_model(
            f"{server.base_url}::m?concurrency=8&timeout=0.8&max_retries=0", cache=False, ledger=ledger
        )
        done = _run(_all(model.complete(f"q{i}") for i in range(8)))
        assert len(done) == 8 and server.max_in_flight == 8  # the last waited 2.4 s, 3x the timeout
        assert not ledger.totals().errors


def test_a_server_that_answers_nothing_still_times_out():
    with OpenAIServer(delay=5.0) as server:
        model = get_model(f"{server.base_url}::m?timeout=0.3&max_retries=0", cache=False)
        with pytest.raises(ModelTimeoutError, match=r"no answer within 0.3s after 1 attempt"):
            _run(model.complete("x"))


@pytest.mark.slow
def test_a_single_slot_server_completes_every_request_at_concurrency_16():
    """The issue's case: one slot, 2 s per answer, 20 requests at configured concurrency 16, timeout 5 s."""
    with OpenAIServer(delay=2.0, slots=1) as server:
        ledger = UsageLedger()
        model = get_model(f"{server.base_url}::m?concurrency=16&timeout=5", cache=False, ledger=ledger)
        done = _run(_all(model.complete(f"request {i}") for i in range(20)))
        assert len(done) == 20 and server.request_count == 20  # every request once: no timeout, no retry
        usage = ledger.summary()["by_model"][model.model_id]
        assert usage["errors"] == {} and usage["concurrency"]["configured"] == 16


def test_the_window_halves_on_overload_once_per_window_and_grows_back():
    async def scenario() -> list[float]:
        limiter = AdaptiveLimiter(16)
        seqs = [await limiter.acquire() for _ in range(16)]
        for seq in seqs[:8]:  # eight 429s from one window: one decrease, not eight
            limiter.release(seq, Signal.OVERLOAD)
        seen = [limiter.limit]
        for seq in seqs[8:]:
            limiter.release(seq, Signal.OK, 1.0)
        seq = await limiter.acquire()  # sent after the decrease: its overload counts
        limiter.release(seq, Signal.OVERLOAD)
        seen.append(limiter.limit)
        for _ in range(200):
            seq = await limiter.acquire()
            limiter.release(seq, Signal.OK, 1.0)
        seen.append(limiter.limit)
        return [*seen, limiter.lowest]

    halved, again, recovered, lowest = _run(scenario())
    assert halved == pytest.approx(8.0, abs=0.6) and again == pytest.approx(halved / 2, abs=0.6)
    assert recovered == 16 and lowest < 5


def test_overload_shrinks_the_effective_concurrency_the_ledger_shows(server):
    server.enqueue(*[Reply.error(503, "busy")] * 6)
    ledger = UsageLedger()
    model = get_model(f"{server.base_url}::m?concurrency=8&{FAST}&max_retries=8", cache=False, ledger=ledger)
    _run(_all(model.complete(f"q{i}") for i in range(8)))
    conc = ledger.summary()["by_model"][model.model_id]["concurrency"]
    assert conc["configured"] == 8 and conc["lowest"] < 8 and conc["effective"] <= 8
    text = ledger.render()
    assert "in flight (the endpoint's request window" in text and " of 8, lowest " in text


@pytest.mark.parametrize(
    ("status", "message", "used", "capability"),
    [
        (400, "Qwen/Qwen2.5-7B-Instruct is not a multimodal model", ("images",), "images"),  # vLLM
        (400, "Invalid content type. image_url is only supported by certain models.", ("images",), "images"),
        (
            500,
            "image input is not supported - hint: you may need to provide the mmproj",
            ("images",),
            "images",
        ),
        (400, "registry.ollama.ai/library/gemma:2b does not support tools", ("tools",), "tools"),
        (
            400,
            '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
            ("tools",),
            "tools",
        ),
        (
            400,
            "response_format of type json_schema is not supported by this model",
            ("json_schema",),
            "json_schema",
        ),
        (500, "CUDA out of memory", ("images", "tools"), None),  # no pattern: the probe decides
        (400, "Qwen/Qwen2.5-7B-Instruct is not a multimodal model", (), None),  # the request had no images
    ],
)
def test_real_servers_refusals_are_read_as_capabilities(status, message, used, capability):
    from dataclaw.models.backends.openai_compat import classify_status

    verdict = classify_status("m", status, message, message, used, "openai", "after 1 attempt(s)")
    got = getattr(verdict.error, "capability", None)
    assert got == capability
    if capability:
        assert not verdict.retry and verdict.error.fatal


def test_the_environments_proxy_is_honoured_except_where_no_proxy_says(monkeypatch):
    from dataclaw.models.backends.openai_compat import proxy_for

    for name in ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    assert proxy_for("https://api.openai.com/v1") is None
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.corp:3128")
    monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1,.internal")
    assert proxy_for("https://api.openai.com/v1") == "http://proxy.corp:3128"
    assert proxy_for("https://gpu01.internal:8000/v1") is None
    assert proxy_for("http://127.0.0.1:8000/v1") is None
