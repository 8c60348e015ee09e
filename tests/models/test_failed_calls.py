"""A failed model call is counted with what it cost: its real wall time and the tokens it sent (the
server's count when it answered, an estimate marked as one when it never did), in the ledger, on the
error, and in the line a failed Tailor attempt records."""

from __future__ import annotations

import asyncio

import pytest

from dataclaw.models import ModelOutputError, ModelServerError, ModelTimeoutError, UsageLedger, get_model
from dataclaw.models.client import estimate_prompt_tokens
from dataclaw.models.ledger import concurrency_note, render_summary
from dataclaw.tailor.synthesis.select import ask
from support.openai_server import OpenAIServer, Reply

SCHEMA = {"type": "object", "properties": {"task": {"type": "string"}}, "required": ["task"]}
PROMPT = (
    "describe the robot's current subtask in one sentence " * 8
)  # 424 characters: ~106 tokens + 4 for the message
FAST = "backoff=0.01&backoff_max=0.02"


def test_a_timeout_counts_its_wall_time_and_an_estimate_of_the_tokens_sent() -> None:
    ledger = UsageLedger()
    with OpenAIServer() as server:
        server.enqueue(Reply.text("late", delay=1.0), Reply.text("late", delay=1.0))
        model = get_model(
            f"{server.base_url}::m?{FAST}&timeout=0.3&max_retries=1", cache=False, ledger=ledger
        )
        with pytest.raises(ModelTimeoutError) as err:
            asyncio.run(model.complete(PROMPT))
    exc = err.value
    assert exc.latency_s is not None and exc.latency_s >= 0.6  # two attempts of 0.3 s each, not 0
    assert exc.tokens_estimated and exc.prompt_tokens == estimate_prompt_tokens(
        [{"role": "user", "content": PROMPT}]
    )
    assert exc.usage() == {"prompt_tokens_estimated": 110, "completion_tokens": 0}
    m = ledger.models()[model.model_id]
    assert (m.calls, m.errors, m.prompt_tokens, m.prompt_tokens_estimated) == (
        1,
        {"ModelTimeoutError": 1},
        0,
        110,
    )
    assert m.latency_s == pytest.approx(exc.latency_s)
    text = render_summary(ledger.summary())
    assert "~110 prompt tokens sent by calls the server never answered (estimated" in text


def test_a_server_error_is_estimated_too_and_never_mixed_with_counted_tokens() -> None:
    ledger = UsageLedger()
    with OpenAIServer() as server:
        server.enqueue(Reply.error(500, "boom 1"), Reply.error(500, "boom 2"), Reply.text("fine"))
        model = get_model(f"{server.base_url}::m?{FAST}&max_retries=1", cache=False, ledger=ledger)
        with pytest.raises(ModelServerError):
            asyncio.run(model.complete("hello there"))
        asyncio.run(model.complete("hello there"))  # answered: the server's count (2 words)
    m = ledger.models()[model.model_id]
    assert m.prompt_tokens == 2 and m.prompt_tokens_estimated == estimate_prompt_tokens(
        [{"role": "user", "content": "hello there"}]
    )


def test_an_answer_that_fails_validation_carries_the_servers_token_count() -> None:
    ledger = UsageLedger()
    with OpenAIServer() as server:
        server.enqueue(Reply.text("not json at all", prompt_tokens=57, completion_tokens=4))
        model = get_model(f"{server.base_url}::m", cache=False, ledger=ledger)
        with pytest.raises(ModelOutputError) as err:
            asyncio.run(model.complete(PROMPT, schema=SCHEMA))
        # the attempt a Tailor request records for it: tokens and time, not {} and 0 s
        server.enqueue(Reply.text("still not json", prompt_tokens=57, completion_tokens=3, delay=0.2))
        attempt = asyncio.run(ask(model, [{"role": "user", "content": PROMPT}], SCHEMA, [], {}))
    exc = err.value
    assert not exc.tokens_estimated and exc.usage() == {"prompt_tokens": 57, "completion_tokens": 4}
    assert exc.latency_s is not None and exc.latency_s > 0
    m = ledger.models()[model.model_id]
    assert (m.failed, m.prompt_tokens, m.completion_tokens, m.prompt_tokens_estimated) == (2, 114, 7, 0)
    assert attempt.error and attempt.usage == {"prompt_tokens": 57, "completion_tokens": 3}
    assert attempt.latency_s >= 0.2


def test_nothing_is_estimated_for_a_server_that_could_not_be_reached() -> None:
    ledger = UsageLedger()
    model = get_model("http://127.0.0.1:9/v1::m?max_retries=0", cache=False, ledger=ledger)
    with pytest.raises(Exception) as err:
        asyncio.run(model.complete(PROMPT))
    assert err.value.latency_s is not None and err.value.prompt_tokens == 0  # type: ignore[attr-defined]
    assert ledger.models()[model.model_id].prompt_tokens_estimated == 0


def test_the_concurrency_note_names_the_runs_bound_when_it_is_the_tighter_one() -> None:
    window = {"configured": 16, "effective": 16, "lowest": 16, "max_in_flight": 2}
    assert concurrency_note({**window, "run_limit": 2}) == (
        "at most 2 in flight (the run's --concurrency 2; the endpoint's window 16 of 16, lowest 16)"
    )
    assert "16 of 16 configured" not in concurrency_note({**window, "run_limit": 2})
    assert concurrency_note({**window, "effective": 4, "max_in_flight": 4, "run_limit": 16}) == (
        "at most 4 in flight (the endpoint's request window 4 of 16, lowest 16)"
    )
    ledger = UsageLedger(in_flight_limit=2)
    ledger.record_concurrency("m", window)
    assert ledger.summary()["by_model"]["m"]["concurrency"]["run_limit"] == 2
