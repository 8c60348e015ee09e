"""``dataclaw env serve`` driven by OpenEnv's own client (``openenv`` 0.10, ``MCPToolClient``): reset into
a task's S0, list and call tools, the verifier's reward at ``finish``, two sessions at once, and the
agent-facing errors. Needs the ``[openenv]`` extra (its own venv: ``make test-openenv``)."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

pytest.importorskip(
    "openenv.core.env_server", reason="the [openenv] extra is not installed (make test-openenv)"
)

import httpx
from openenv.core.env_server import CallToolAction
from openenv.core.mcp_client import MCPToolClient

from dataclaw.envcraft.serve import FINISH_TOOL, load_catalogue
from dataclaw.envcraft.tasks.tool.verifier import evaluate

ENV = "transactional_workspace"


async def _call(env: MCPToolClient, name: str, **args: Any) -> Any:
    """One tool step over the session's WebSocket (what a trainer's rollout does)."""
    return await env.step(CallToolAction(tool_name=name, arguments=args))


def _clean(message: str) -> None:
    """Agent-facing: no traceback, no host path, no exception class name."""
    assert message and "Traceback" not in message and "/work" not in message and "/tmp" not in message
    assert "Error:" not in message and "Exception" not in message and 'File "' not in message


def test_two_concurrent_sessions_gold_replay_and_untouched_episode(gold_tasks, serve) -> None:
    path, (gold, second) = gold_tasks
    catalogue = load_catalogue(ENV, path)
    assert catalogue.ids == [gold["id"], second["id"]] and catalogue.skipped == {"env 'state_machine'": 1}
    served = serve(catalogue, max_sessions=4)
    untouched = evaluate(gold["verifier"], gold["initial_state"])
    assert not untouched["passed"]

    async def replay(env: MCPToolClient) -> tuple[Any, list[Any]]:
        reset = await env.reset(task_id=gold["id"])
        steps = []
        for call in gold["gold_chain"]:
            steps.append(await _call(env, call["tool"], **call["params"]))
            await asyncio.sleep(0)  # interleave with the other session
        return reset, [*steps, await _call(env, FINISH_TOOL, summary="resolved")]

    async def idle(env: MCPToolClient) -> tuple[Any, list[Any]]:
        reset = await env.reset(task_id=gold["id"])
        await _call(env, "list_tickets")  # a read changes nothing the verifier checks
        return reset, [await _call(env, FINISH_TOOL)]

    async def main() -> tuple[Any, ...]:
        async with MCPToolClient(base_url=served.url) as a, MCPToolClient(base_url=served.url) as b:
            tools = {t.name: t for t in await a.list_tools()}
            (ra, sa), (rb, sb) = await asyncio.gather(replay(a), idle(b))
            return tools, ra, sa, rb, sb, await a.state(), await b.state()

    tools, ra, sa, _rb, sb, state_a, state_b = asyncio.run(main())
    assert {"login", "resolve_ticket", FINISH_TOOL} <= set(tools)
    assert tools["login"].input_schema["required"] == ["account_id"]
    assert ra.observation.task_id == gold["id"] and ra.observation.prompt == gold["user_turns"][0]
    assert ra.observation.messages[0]["role"] == "system" and not ra.done
    for step in sa[:-1]:
        assert step.observation.error is None and not step.observation.result["is_error"]
        assert step.observation.result["data"]["status"] == "ok" and step.reward is None and not step.done
    assert sa[-1].done and sa[-1].reward == 1.0  # the gold chain solves the task: the verifier says 1.0
    assert sb[-1].done and sb[-1].reward == 0.0  # untouched: the verifier's untouched verdict ...
    assert sb[-1].observation.metadata["score"]["fraction"] == untouched["score"]  # ... and its score
    assert state_a.step_count == len(gold["gold_chain"]) + 1 and state_b.step_count == 2
    assert state_a.episode_id != state_b.episode_id


def test_agent_facing_errors_are_clear_and_recoverable(gold_tasks, serve) -> None:
    path, (gold, _) = gold_tasks
    served = serve(load_catalogue(ENV, path))

    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with MCPToolClient(base_url=served.url) as env:
            out["before_reset"] = await _call(env, "login", account_id="agent_lee")
            with pytest.raises(Exception) as err:
                await env.reset(task_id="task:nope")
            out["bad_task"] = str(err.value)
            await env.reset(task_id=gold["id"])
            out["unknown"] = await _call(env, "drop_database")
            out["mcp_unknown"] = await env.call_tool("drop_database")  # the MCP JSON-RPC path too
            out["missing_arg"] = await _call(env, "login")
            out["wrong_type"] = await _call(env, "login", account_id=["agent_lee"])
            out["extra_arg"] = await _call(env, "login", account_id="agent_lee", admin=True)
            out["after_errors"] = await _call(env, "login", account_id="agent_lee")  # still usable
            out["finish"] = await _call(env, FINISH_TOOL)
            out["after_end"] = await _call(env, "whoami")
        return out

    out = asyncio.run(main())
    assert out["before_reset"].observation.error.message == "no episode is running: call reset() first"
    assert "unknown task_id 'task:nope'" in out["bad_task"]
    unknown = out["unknown"].observation.error
    assert unknown.error_type.value == "tool_not_found" and "available: add_comment" in unknown.message
    for key in ("missing_arg", "wrong_type", "extra_arg"):
        res = out[key].observation.result
        assert res["is_error"] and res["data"]["status"] == "error", key
        assert res["data"]["error"]["category"] in ("invalid_argument", "missing_field")
        _clean(res["data"]["error"]["message"])
    assert out["after_errors"].observation.result["data"]["status"] == "ok"
    assert out["finish"].done and out["finish"].reward == 0.0
    end = out["after_end"]
    assert end.done and end.reward == 0.0 and "the episode has ended" in end.observation.error.message
    assert "call reset()" in end.observation.error.message
    assert out["mcp_unknown"]["error"]["error_type"] == "tool_not_found"
    for msg in (out["before_reset"].observation.error.message, unknown.message, out["bad_task"]):
        _clean(msg)


def test_scenarios_without_a_task_file_seed_picks_the_episode_and_the_evaluator_scores(serve) -> None:
    from dataclaw.envcraft import archetypes

    env_cls = archetypes.get(ENV).env_cls
    catalogue = load_catalogue(ENV)
    assert catalogue.kind == "scenarios" and catalogue.ids == sorted(env_cls.scenarios())
    sid = next(s for s in catalogue.ids if env_cls.scenario(s).reference_solution)
    served = serve(catalogue, max_steps=len(env_cls.scenario(sid).reference_solution))

    async def main() -> tuple[Any, list[Any]]:
        async with MCPToolClient(base_url=served.url) as env:
            reset = await env.reset(seed=catalogue.ids.index(sid) + len(catalogue))  # seed mod n
            steps = [
                await _call(env, s["tool"], **s.get("params", {}))
                for s in env_cls.scenario(sid).reference_solution
            ]
            return reset, steps

    reset, steps = asyncio.run(main())
    assert reset.observation.task_id == sid
    assert not any(s.done for s in steps[:-1])
    last = steps[-1]  # the step budget ends the episode on the last reference step
    assert last.done and last.observation.metadata["stop_reason"] == "max_steps"
    assert last.reward == last.observation.metadata["score"]["evaluation"]["overall_score"] > 0.9


def test_task_api_and_the_mcp_tools_list_over_http(gold_tasks, serve) -> None:
    path, (gold, second) = gold_tasks
    served = serve(load_catalogue(ENV, path))
    with httpx.Client(base_url=served.url, timeout=30) as http:
        assert http.post(f"/{ENV}/num_tasks", json={"split": "train"}).json() == {"num_tasks": 2}
        listed = http.post(f"/{ENV}/tasks", json={"split": "train"}).json()["tasks"]
        assert [t["id"] for t in listed] == [gold["id"], second["id"]]
        assert "verifier" not in json.dumps(listed) and "initial_state" not in json.dumps(listed)
        rpc = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        tools = http.post("/mcp", json=rpc).json()["result"]["tools"]
        assert FINISH_TOOL in {t["name"] for t in tools}
        assert http.get("/health").status_code == 200


def test_an_abandoned_session_is_reaped_and_frees_its_slot(serve) -> None:
    served = serve(load_catalogue(ENV), max_sessions=1, idle_timeout_s=0.5)

    def create(http: httpx.Client) -> dict[str, Any]:
        rpc = {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create", "params": {}}
        return http.post("/mcp", json=rpc).json()

    with httpx.Client(base_url=served.url, timeout=30) as http:
        assert "session_id" in create(http)["result"]  # a client that never closes it
        assert "error" in create(http)  # the one slot is taken
        deadline = time.monotonic() + 30
        while "error" in (answer := create(http)) and time.monotonic() < deadline:
            time.sleep(0.5)  # OpenEnv's reaper looks every 5 s at the earliest
        assert "session_id" in answer["result"]


def test_a_package_folder_is_served_through_the_sandbox_never_imported(
    serve, require_sandbox, tmp_path
) -> None:
    import sys

    from envcraft.serve.conftest import COUNTER_DIR

    was_loaded = any("counter_env" in m for m in sys.modules)
    catalogue = load_catalogue(str(COUNTER_DIR))
    assert catalogue.package == COUNTER_DIR and catalogue.ids == ["reach_three", "start_at_ten"]
    served = serve(catalogue)

    async def main() -> tuple[Any, ...]:
        async with MCPToolClient(base_url=served.url) as a, MCPToolClient(base_url=served.url) as b:
            await asyncio.gather(a.reset(task_id="reach_three"), b.reset(task_id="reach_three"))
            names = {t.name for t in await a.list_tools()}
            ok = [await _call(a, "increment", by=2), await _call(a, "increment")]
            bad = await _call(b, "increment", by=5000)  # the package's own agent-safe error
            crash = await _call(b, "crash")  # a tool that raises: still an agent-safe envelope
            return names, ok, bad, crash, await _call(a, FINISH_TOOL), await _call(b, FINISH_TOOL)

    names, ok, bad, crash, done_a, done_b = asyncio.run(main())
    assert {"increment", "get_counter", FINISH_TOOL} <= names
    assert [s.observation.result["data"]["data"]["value"] for s in ok] == [2, 3]
    assert bad.observation.result["data"]["error"]["category"] == "invalid_argument"
    assert crash.observation.result["is_error"]
    _clean(crash.observation.result["content"][0]["text"])
    assert (
        done_a.done and done_a.reward == done_a.observation.metadata["score"]["evaluation"]["overall_score"]
    )
    assert done_a.reward == 1.0 and done_b.reward < 1.0  # the counter reached 3 in session a only
    assert was_loaded or not any("counter_env" in m for m in sys.modules)  # never imported by the server


def test_a_task_file_of_a_sandboxed_package_loads_s0_and_scores_with_its_verifier(
    serve, require_sandbox, tmp_path
) -> None:
    import shutil

    from dataclaw.envcraft.serve.sandboxed import PRELOAD, run_job
    from dataclaw.sandbox import WarmWorker
    from envcraft.serve.conftest import COUNTER_DIR

    ws = tmp_path / "ws"  # S0: the scenario's state (read in the sandbox) with the counter at 1
    shutil.copytree(COUNTER_DIR, ws / "pkg" / "counter_env")
    with WarmWorker(ws, preload=PRELOAD) as worker:
        sid = run_job(worker, "create", "pkg/counter_env", "state", "reach_three", None)
        s0 = run_job(worker, "state", "pkg/counter_env", "state", sid)
    s0["counter"]["value"] = 1
    task = {
        "id": "task:counter-to-three", "env": "counter_env", "scenario_id": "reach_three",
        "user_turns": ["The counter is at 1: bring it to 3."], "initial_state": s0,
        "verifier": {"version": 1, "assertions": [{"path": "/counter/value", "op": "eq", "value": 3}]},
    }  # fmt: skip
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(task) + "\n")
    served = serve(load_catalogue(str(COUNTER_DIR), path))

    async def main() -> tuple[Any, ...]:
        async with MCPToolClient(base_url=served.url) as env:
            reset = await env.reset(task_id=task["id"])
            first = await _call(env, "get_counter")  # S0 is the task's, not the scenario's
            await _call(env, "increment", by=2)
            return reset, first, await _call(env, FINISH_TOOL)

    reset, first, done = asyncio.run(main())
    assert reset.observation.prompt == task["user_turns"][0]
    assert first.observation.result["data"]["status"] == "ok", first.observation.result
    assert first.observation.result["data"]["data"]["value"] == 1
    assert done.done and done.reward == 1.0 and done.observation.metadata["score"]["fraction"] == 1.0
