"""Record a model once against a live server, then replay it with the server gone."""

from __future__ import annotations

import asyncio
import json

import pytest

from dataclaw.core.errors import ConfigError
from dataclaw.models import ModelOutputError, ReplayMissError, UsageLedger, get_model
from support.openai_server import OpenAIServer, Reply

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def _answer(req):
    prompt = req.body["messages"][-1]["content"]
    return Reply.json({"n": len(prompt)}, prompt_tokens=7, completion_tokens=3)


def test_record_then_replay_without_the_server(tmp_path):
    path = tmp_path / "answers.jsonl"
    with OpenAIServer(responder=_answer) as server:
        live = get_model(f"{server.base_url}::m", cache=False, record_to=path)
        recorded = [live.complete_sync(p, schema=SCHEMA) for p in ("a", "bb", "ccc", "a")]
        assert server.request_count == 4
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert len(lines) == 3, "a request already recorded is not written twice"
    assert lines[1]["prompt"] == "bb" and lines[1]["model"].endswith("::m")

    ledger = UsageLedger()
    replay = get_model(f"replay:{path}", ledger=ledger)
    assert replay.cache is None
    for prompt, original in zip(("a", "bb", "ccc"), recorded, strict=False):
        done = replay.complete_sync(prompt, schema=SCHEMA)
        assert done.parsed == original.parsed == {"n": len(prompt)}
        assert done.usage == original.usage
        assert done.cost_usd == 0 and not done.priced
    assert ledger.totals().calls == 3

    with pytest.raises(ReplayMissError, match=r"has no answer for this request .*prompt 'dddd'"):
        replay.complete_sync("dddd", schema=SCHEMA)
    with pytest.raises(ReplayMissError):  # the schema is part of the key
        replay.complete_sync("a")


def test_replayed_answers_are_validated_like_live_ones(tmp_path):
    path = tmp_path / "bad.jsonl"
    with OpenAIServer(default=Reply.text("not json")) as server:
        live = get_model(f"{server.base_url}::m", cache=False, record_to=path)
        with pytest.raises(ModelOutputError):
            asyncio.run(live.complete("x", schema=SCHEMA))
    with pytest.raises(ModelOutputError, match="invalid JSON") as err:
        get_model(f"replay:{path}").complete_sync("x", schema=SCHEMA)
    assert err.value.raw_text == "not json"


def test_bad_replay_files_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        get_model(f"replay:{tmp_path / 'none.jsonl'}")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"key": "k", "generation": {"text": "x"}}\n{"oops": 1}\n')
    with pytest.raises(ConfigError, match="line 2 is not a recorded answer"):
        get_model(f"replay:{bad}")
