"""``dataclaw models …`` and the quickstart's "model" part, against the live test server."""

from __future__ import annotations

import json

from dataclaw.cli.app import _run
from dataclaw.cli.quickstart import PARTS
from dataclaw.core.store import RunStore
from dataclaw.models import UsageLedger, get_model
from dataclaw.models.demo import TASK_SCHEMA
from dataclaw.models.structured import CHECK_PROMPT
from support.openai_server import KindResponder, OpenAIServer, Reply


def test_models_check_prints_each_capability_and_the_answer(capsys):
    with OpenAIServer(KindResponder("llama-cpp-python", answer={"answer": 5}, images="blind")) as server:
        spec = f"{server.base_url}::gpt-4o-mini?server=llama-cpp-python"
        assert _run(["models", "check", spec, "--json"]) == 0
        result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        caps = result["capabilities"]
        assert caps["chat"]["ok"] and caps["tools"]["ok"]
        assert caps["json_schema"]["ok"] and result["server"] == "llama-cpp-python"
        assert "openai: HTTP 500" in caps["json_schema"]["detail"]  # the form tried first was refused
        assert not caps["images"]["ok"] and "did not see them" in caps["images"]["detail"]
        assert result["check"]["answer"] == {"answer": 5} and result["check"]["priced"] is True
        assert result["check"]["prompt_tokens"] > 0 and result["check"]["latency_s"] > 0
        body = server.chat_bodies()[-1]
        assert body["response_format"]["schema"]["required"] == ["answer"]
        # the plain text form names every capability on its own line
        assert _run(["models", "check", spec]) == 0
        out = capsys.readouterr().out
        for line in ("chat         yes", "json_schema  yes", "tools        yes", "images       no"):
            assert line in out


def test_models_check_fails_when_the_strings_own_form_is_refused(capsys):
    with OpenAIServer(KindResponder("llama-cpp-python", answer={"answer": 5})) as server:
        assert _run(["models", "check", f"{server.base_url}::m?server=openai&max_retries=0"]) == 1
    captured = capsys.readouterr()
    assert "json_schema  yes" in captured.out and "server=llama-cpp-python" in captured.out
    assert "refuses JSON-schema requests in the server=openai form" in captured.out
    assert "Traceback" not in captured.err


def test_models_check_bypasses_the_cache(capsys):
    with OpenAIServer(KindResponder(answer={"answer": 5})) as server:
        for _ in range(2):
            assert _run(["models", "check", f"{server.base_url}::m"]) == 0
        checks = [b for b in server.chat_bodies() if b["messages"][0]["content"] == CHECK_PROMPT]
        assert len(checks) == 2
    assert "check        yes" in capsys.readouterr().out


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
    assert "auto" in out and "llama-cpp-python" in out


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
