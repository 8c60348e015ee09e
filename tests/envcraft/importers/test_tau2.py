"""τ²-bench: the real mock and retail domain data (../shared/data/tau2, tau2-bench @ a2c0247) in a checkout's
layout, the mock domain's real tools.py (fixture, with test doubles of tau2's toolkit) run in the sandboxed
env worker; DB-hash and env-assertion verifiers (gold = 1.0, untouched = 0), rejects with reasons, resume,
a domain without tools, and the imported tasks through ``tasks rollout``."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from dataclaw.cli.app import _run
from dataclaw.envcraft.importers import Produces, run_import
from dataclaw.envcraft.importers.tau2 import Tau2Importer, convert_task
from dataclaw.envcraft.tasks.tool.stages import replay_task
from dataclaw.sandbox import sandbox_available
from support.openai_server import OpenAIServer, Reply

SHARED = Path(__file__).resolve().parents[4] / "shared" / "data" / "tau2"
FIXTURE_SRC = Path(__file__).resolve().parent / "fixtures" / "tau2" / "src"
pytestmark = pytest.mark.skipif(not (SHARED / "mock").is_dir(), reason="needs ../shared/data/tau2")
needs_sandbox = pytest.mark.skipif(not sandbox_available(), reason="needs the sandbox")


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _checkout(root: Path, *domains: str, tools: bool = True) -> Path:
    """A tau2-bench checkout's layout: data/tau2/domains/<d>/ (the shared real data) + src/tau2."""
    for d in domains:
        shutil.copytree(SHARED / d, root / "data" / "tau2" / "domains" / d)
    if tools:
        shutil.copytree(FIXTURE_SRC, root / "src")
    return root


@pytest.fixture(scope="module")
def mock_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = _checkout(tmp_path_factory.mktemp("tau2") / "tau2-bench", "mock")
    run = root.parent / "run"
    s = run_import("auto", root, run, Produces.TASKS)
    assert s.format == "tau2" and s.items == 10, s.reject_messages
    return run


@needs_sandbox
def test_mock_tasks_become_records_and_what_cannot_be_verified_is_a_reject(mock_run: Path) -> None:
    tasks = {t["scenario_id"]: t for t in _records(mock_run / "tasks.jsonl")}
    rejects = {r["detail"]["key"]: r["reason"] for r in _records(mock_run / "rejects.jsonl")}
    assert rejects == {
        "mock/create_task_1_nl_eval": "unsupported",  # NL assertions only: needs a judge
        "mock/impossible_task_1": "unsupported",  # the right answer changes nothing
        "mock/update_task_with_user_tools": "unsupported",  # the user's own tools
        # no gold action reaches its assertion
        "mock/update_task_with_history_and_env_assertions": "gold_fails",
    }
    assert set(tasks) == {
        "create_task_1",
        "create_task_1_with_env_assertions",
        "update_task_1",
        "update_task_with_message_history",
        "update_task_with_initialization_data",
        "update_task_with_initialization_actions",
    }
    t = tasks["create_task_1"]
    assert t["env"] == "tau2_mock" and t["gold_chain"] == [
        {"tool": "create_task", "params": {"user_id": "user_1", "title": "Important Meeting"}}
    ]
    assert "Important Meeting" in t["user_turns"][0]
    assert [a["path"] for a in t["verifier"]["assertions"]] == ["/db_hash"]
    assert t["metadata"]["not_scored"] == ["COMMUNICATE"]
    env_a = tasks["create_task_1_with_env_assertions"]["verifier"]["assertions"]
    assert [a["path"] for a in env_a] == ["/db_hash", "/assertions_ok"]
    # a recorded message history's tool calls are part of the initial state (task_2 already exists)
    hist = tasks["update_task_with_message_history"]["initial_state"]["tau2"]["init_actions"]
    assert hist[0]["name"] == "create_task"
    assert not [m for m in sys.modules if m.startswith("tau2")]  # the tools ran only in the sandbox


@needs_sandbox
def test_gold_actions_score_one_and_an_untouched_or_wrong_episode_zero(mock_run: Path) -> None:
    for t in _records(mock_run / "tasks.jsonl"):
        assert replay_task(t)["score"] == 1.0, t["scenario_id"]
        assert replay_task(t, [])["score"] < 1.0, t["scenario_id"]
    t = next(t for t in _records(mock_run / "tasks.jsonl") if t["scenario_id"] == "create_task_1")
    wrong = [{"tool": "create_task", "params": {"user_id": "user_1", "title": "Unimportant Meeting"}}]
    assert replay_task(t, wrong)["score"] == 0.0
    # a read call changes nothing; an unknown user is the tool's own error, the DB stays as it was
    reads = [
        {"tool": "get_users", "params": {}},
        {"tool": "create_task", "params": {"user_id": "nobody", "title": "x"}},
    ]
    out = replay_task(t, reads)
    assert (out["score"], out["errors"]) == (0.0, 1)


@needs_sandbox
def test_a_rerun_resumes_and_tasks_rollout_with_the_gold_calls_gets_reward_one(
    mock_run: Path, tmp_path
) -> None:
    again = run_import("tau2", mock_run.parent / "tau2-bench", mock_run, Produces.TASKS)
    assert (again.resumed, again.imported) == (10, 6)
    tasks = [
        t
        for t in _records(mock_run / "tasks.jsonl")
        if t["scenario_id"] in ("create_task_1", "update_task_1")
    ]
    src = tmp_path / "tasks.jsonl"
    src.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    gold = {t["user_turns"][0]: t["gold_chain"] for t in tasks}

    def respond(req) -> Reply:
        msgs = req.body["messages"]
        calls = gold[msgs[1]["content"]]
        n = sum(1 for m in msgs if m["role"] == "assistant")
        if n < len(calls):
            return Reply.tool_call(calls[n]["tool"], calls[n]["params"], call_id=f"c{n}")
        return Reply.text("Done.")

    with OpenAIServer(responder=respond) as server:
        out = tmp_path / "ro"
        assert (
            _run(["tasks", "rollout", str(src), "-o", str(out), "--model", f"{server.base_url}::agent"]) == 0
        )
    assert {r["reward"] for r in _records(out / "rollouts.jsonl")} == {1.0}


def test_retail_without_its_tools_module_is_a_reject_per_task_naming_the_file(tmp_path) -> None:
    run = tmp_path / "run"
    s = run_import("tau2", SHARED / "retail", run, Produces.TASKS)
    assert (s.items, s.imported, s.rejects) == (114, 0, {"missing_tools": 114})
    msg = _records(run / "rejects.jsonl")[0]["message"]
    assert "src/tau2/domains/retail/tools.py" in msg


def test_every_real_retail_task_converts_with_its_db_criteria_and_user_scenario() -> None:
    tasks = json.loads((SHARED / "retail" / "tasks.json").read_text())
    converted = [convert_task("retail", t) for t in tasks]
    assert len(converted) == 114
    assert all("DB" in c["reward_basis"] and c["turn"] for c in converted)
    first = converted[0]
    assert first["gold"][-1]["tool"] == "exchange_delivered_order_items"
    assert "#W2378156" in first["turn"] and "Yusuf Rossi" in first["turn"]


def test_sources_that_are_not_tau2_and_malformed_tasks_say_why(tmp_path) -> None:
    assert "no tau2 domain" in Tau2Importer().sniff(tmp_path)
    root = _checkout(tmp_path / "ck", "mock")
    tasks_file = root / "data" / "tau2" / "domains" / "mock" / "tasks.json"
    tasks = json.loads(tasks_file.read_text())
    tasks[0] = {"id": tasks[0]["id"], "evaluation_criteria": {}}  # no user scenario
    tasks[1]["evaluation_criteria"]["actions"][0] = {"arguments": {}}  # an action without a name
    tasks.append(dict(tasks[3]))  # a duplicate id
    tasks_file.write_text(json.dumps(tasks))
    rows = Tau2Importer()._plan(root)[0][1]
    errors = {key: str(err.reason) for key, _, err in rows if err is not None}
    assert errors == {
        f"mock/{tasks[0]['id']}": "malformed",
        f"mock/{tasks[1]['id']}": "malformed",
        f"mock/{tasks[3]['id']}": "duplicate",
        "mock/update_task_with_user_tools": "unsupported",  # the real task that needs the user's own tools
    }
