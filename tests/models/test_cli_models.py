"""``dataclaw models …`` and the quickstart's "model" part, against the live test server."""

from __future__ import annotations

import json

from dataclaw.cli.app import _run
from dataclaw.cli.quickstart import PARTS, TASK_SCHEMA
from dataclaw.core.store import RunStore
from dataclaw.models import UsageLedger, get_model
from support.openai_server import OpenAIServer, Reply


def test_models_check_prints_latency_tokens_and_answer(server, capsys):
    server.enqueue(Reply.json({"answer": 5}, prompt_tokens=12, completion_tokens=4))
    assert _run(["models", "check", f"{server.base_url}::gpt-4o-mini", "--json"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["answer"] == {"answer": 5}
    assert (result["prompt_tokens"], result["completion_tokens"]) == (12, 4)
    assert result["latency_s"] > 0 and result["priced"] is True
    body = server.chat_bodies()[0]
    assert body["response_format"]["json_schema"]["schema"]["required"] == ["answer"]


def test_models_check_bypasses_the_cache(server, capsys):
    server.default = Reply.json({"answer": 5})
    for _ in range(2):
        assert _run(["models", "check", f"{server.base_url}::m"]) == 0
    assert server.request_count == 2
    assert "latency_s" in capsys.readouterr().out


def test_models_check_reports_errors_in_one_line(capsys):
    with OpenAIServer(api_key="secret") as server:
        assert _run(["models", "check", f"{server.base_url}::m"]) == 1
    err = capsys.readouterr().err
    assert "refused the API key (HTTP 401" in err and "Traceback" not in err
    assert _run(["models", "check", "nonsense"]) == 1
    assert "has no scheme" in capsys.readouterr().err


def test_models_usage_reads_the_run_manifest(server, tmp_path, capsys):
    ledger = UsageLedger()
    model = get_model(f"{server.base_url}::gpt-4o", cache=False, ledger=ledger)
    model.complete_sync("hello")
    with RunStore(tmp_path / "run") as store:
        ledger.save(store)
    assert _run(["models", "usage", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    assert "::gpt-4o" in out and "TOTAL" in out
    assert _run(["models", "usage", str(tmp_path / "nowhere")]) == 1
    assert "has no manifest.json" in capsys.readouterr().err


def test_models_list_names_schemes_and_flavours(capsys):
    assert _run(["models", "list"]) == 0
    out = capsys.readouterr().out
    assert "local, openai, replay" in out and "vllm" in out and "local:smollm2-135m" in out


def test_quickstart_model_part_writes_a_valid_answer(server, tmp_path):
    answer = {
        "task": "Pick up the yellow bottle on the table.",
        "action": "pick up",
        "object": "yellow bottle",
        "location": "table",
        "steps": ["reach the bottle", "grasp it", "lift it"],
    }
    server.enqueue(Reply.json(answer))
    part = dict(PARTS)["model"]
    summary = part(tmp_path / "model", f"{server.base_url}::qwen")
    written = json.loads((tmp_path / "model" / "answer.json").read_text())
    assert written["answer"] == answer
    assert summary["answer"] == tmp_path / "model" / "answer.json"
    assert summary["model"].endswith("::qwen")
    prompt = server.chat_bodies()[0]["messages"][0]["content"]
    assert "Pick up the yellow bottle on the table." in prompt  # read from examples/lerobot_g1/tasks.jsonl
    assert server.chat_bodies()[0]["response_format"]["json_schema"]["schema"] == TASK_SCHEMA
    again = part(tmp_path / "model", f"{server.base_url}::qwen")  # rerun into the same --out
    assert again["cached"] is True and server.request_count == 1
    assert (tmp_path / "model" / "responses.sqlite").is_file()
