"""The agent loop over a real HTTP tool-calling model (the OpenAI-compatible test server) on tool tasks
and claw workspace tasks: rewards, recoverable errors, limits, boundary classification."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dataclaw.envcraft.rollout import (
    ClawErrorKind,
    ClawTaskHarness,
    ClawTools,
    RolloutConfig,
    ToolTaskHarness,
    run_rollout,
    run_rollouts,
)
from dataclaw.envcraft.rollout.claw_tools import ClawToolError
from dataclaw.envcraft.tasks.claw.workspace import WorkspaceTask
from dataclaw.models import get_model
from dataclaw.sandbox import SandboxPolicy
from envcraft.rollout.rollout_helpers import example_claw_task, scripted_agent, solution_calls
from support.openai_server import OpenAIServer, Reply


def _roll(responder, harness, config: RolloutConfig | None = None, **server_kw):
    with OpenAIServer(responder=responder, **server_kw) as server:
        model = get_model(f"{server.base_url}::agent", cache=False)
        traj = asyncio.run(run_rollout(model, harness, config))
        return traj, server


def _gold(task) -> list:
    return [(c["tool"], c["params"]) for c in task["gold_chain"]]


def test_a_scripted_gold_trajectory_solves_the_tool_task(gold_tool_task) -> None:
    traj, server = _roll(scripted_agent(_gold(gold_tool_task)), ToolTaskHarness(gold_tool_task))
    assert traj.error is None
    assert traj.reward == 1.0
    assert traj.stop_reason == "agent_stopped"
    assert [s.tool for s in traj.steps] == [c["tool"] for c in gold_tool_task["gold_chain"]]
    assert all(s.ok for s in traj.steps)
    # OpenAI message format, tools offered to the model, JSON-serialisable record
    roles = [m["role"] for m in traj.messages]
    assert roles[:3] == ["system", "user", "assistant"] and roles.count("tool") == len(traj.steps)
    assert traj.messages[2]["tool_calls"][0]["function"]["name"] == gold_tool_task["gold_chain"][0]["tool"]
    assert {t["function"]["name"] for t in server.chat_bodies()[0]["tools"]} >= {"login", "resolve_ticket"}
    json.dumps(traj.to_record())


def test_a_wrong_trajectory_gets_less_than_full_reward(gold_tool_task) -> None:
    wrong = _gold(gold_tool_task)[:-2]  # stops before resolving the ticket
    traj, _ = _roll(scripted_agent(wrong), ToolTaskHarness(gold_tool_task))
    assert traj.error is None
    assert traj.reward == 0.0
    assert traj.score["fraction"] < 1.0


def test_recoverable_tool_errors_stay_in_the_trajectory(gold_tool_task) -> None:
    calls = [("get_ticket", {"ticket_id": "T-0000"}), ("no_such_tool", {}), *_gold(gold_tool_task)]
    traj, _ = _roll(scripted_agent(calls), ToolTaskHarness(gold_tool_task))
    assert traj.reward == 1.0
    first, second = traj.steps[0], traj.steps[1]
    assert not first.ok and first.error_kind in ("invalid_reference", "missing_binding", "permission_denied")
    assert json.loads(first.observation)["status"] == "error"
    assert "Traceback" not in first.observation and "/work" not in first.observation
    assert not second.ok and second.error_kind == "invalid_call"


def test_strict_tool_calls_end_the_rollout_at_an_invalid_call(gold_tool_task) -> None:
    calls = [("no_such_tool", {}), *_gold(gold_tool_task)]
    traj, _ = _roll(
        scripted_agent(calls), ToolTaskHarness(gold_tool_task), RolloutConfig(strict_tool_calls=True)
    )
    assert traj.reward == 0.0
    assert traj.error["boundary"] == "tool"
    assert not traj.defect


def test_the_user_simulator_delivers_decomposed_turns_in_order(gold_tool_task) -> None:
    task = {**gold_tool_task, "user_turns": ["First, log in as agent_lee.", "Now deal with the SSO ticket."]}
    gold = _gold(task)

    def respond(req):
        msgs = req.body["messages"]
        n_assist = sum(1 for m in msgs if m["role"] == "assistant")
        n_user = sum(1 for m in msgs if m["role"] == "user")
        if n_user == 1:
            return Reply.tool_call(*gold[0], call_id="c0") if n_assist == 0 else Reply.text("Logged in.")
        done = sum(1 for m in msgs if m["role"] == "tool")
        if done < len(gold):
            return Reply.tool_call(*gold[done], call_id=f"c{done}")
        return Reply.text("All done.")

    traj, _ = _roll(respond, ToolTaskHarness(task))
    users = [m["content"] for m in traj.messages if m["role"] == "user"]
    assert users == task["user_turns"]
    assert traj.reward == 1.0


def test_max_turns_ends_the_episode(gold_tool_task) -> None:
    traj, server = _roll(
        lambda req: Reply.tool_call("list_tickets", {}),
        ToolTaskHarness(gold_tool_task),
        RolloutConfig(max_turns=3),
    )
    assert traj.stop_reason == "max_turns"
    assert traj.turns == 3 and server.request_count == 3
    assert traj.reward == 0.0 and traj.error is None


def _slow_after(calls: list, n_fast: int, delay: float):
    """The scripted agent, whose answers after the first ``n_fast`` take ``delay`` seconds."""
    script = scripted_agent(calls)

    def respond(req):
        reply = script(req)
        if sum(1 for m in req.body["messages"] if m["role"] == "assistant") >= n_fast:
            reply.delay = delay
        return reply

    return respond


@pytest.mark.parametrize("n_fast", ["all", "all_but_last"])
def test_the_budget_stops_the_episode_and_the_state_reached_is_scored(gold_tool_task, n_fast) -> None:
    import time

    gold = _gold(gold_tool_task)
    fast = len(gold) if n_fast == "all" else len(gold) - 1
    t = time.monotonic()
    traj, server = _roll(
        _slow_after(gold, fast, delay=20), ToolTaskHarness(gold_tool_task), RolloutConfig(timeout_s=2)
    )
    took = time.monotonic() - t
    assert 2 <= traj.wall_s < 2.8 and took < 6, (traj.wall_s, took)  # not the 20 s the model would take
    assert traj.stop_reason == "budget_exceeded" and traj.budget_exceeded and traj.budget_s == 2
    assert traj.error is None and not traj.defect
    assert len(traj.steps) == fast
    # scored by the verifier: the gold state reached earns its reward, one write short of it does not
    assert traj.score and traj.reward == (1.0 if n_fast == "all" else 0.0)
    assert server.request_count == fast + 1


def test_a_quick_episode_is_within_its_budget(gold_tool_task) -> None:
    traj, _ = _roll(scripted_agent(_gold(gold_tool_task)), ToolTaskHarness(gold_tool_task))
    assert not traj.budget_exceeded and traj.budget_s == 300 and traj.wall_s < 300


def test_a_model_failure_is_recorded_once_at_the_model_boundary(gold_tool_task) -> None:
    traj, _ = _roll(lambda req: Reply.error(400, "bad request"), ToolTaskHarness(gold_tool_task))
    assert traj.error["boundary"] == "model"
    assert traj.reward == 0.0 and not traj.defect


def test_a_broken_task_verifier_marks_the_rollout_as_a_data_defect(gold_tool_task) -> None:
    task = {**gold_tool_task, "verifier": {"version": 1, "assertions": []}}
    traj, _ = _roll(scripted_agent(_gold(task)), ToolTaskHarness(task))
    assert traj.defect and traj.error["boundary"] == "verifier"
    assert traj.reward == 0.0


def test_one_failing_rollout_never_cancels_its_siblings(gold_tool_task) -> None:
    bad = {**gold_tool_task, "scenario_id": "no_such_scenario", "id": "task:bad"}
    with OpenAIServer(responder=scripted_agent(_gold(gold_tool_task))) as server:
        model = get_model(f"{server.base_url}::agent", cache=False)
        harnesses = [ToolTaskHarness(gold_tool_task), ToolTaskHarness(bad), ToolTaskHarness(gold_tool_task)]
        trajs = asyncio.run(run_rollouts(model, harnesses, concurrency=3))
    assert [t.reward for t in trajs] == [1.0, 0.0, 1.0]
    assert trajs[1].error["boundary"] == "setup" and trajs[1].defect
    assert len({t.id for t in trajs}) == 3


# ---- claw workspace tasks ------------------------------------------------------------------------------


def test_a_scripted_claw_agent_solves_the_workspace_task() -> None:
    task = example_claw_task("logistics_manager_review")
    traj, _ = _roll(scripted_agent(solution_calls(task)), ClawTaskHarness(task))
    assert traj.error is None, traj.error
    assert traj.stop_reason == "finished"
    assert traj.reward == 1.0
    assert traj.score["workplace_score"]["total_score"] == 100


def test_a_partly_wrong_claw_answer_gets_partial_credit() -> None:
    task = example_claw_task("logistics_manager_review")
    answer = json.dumps({"return_ids": ["ret_003", "ret_006", "ret_008"], "total_refund": 629.97})
    calls = [("write", {"path": "reports/manager_review.json", "content": answer}), ("finish", {})]
    traj, _ = _roll(scripted_agent(calls), ClawTaskHarness(task))
    assert 0.0 < traj.reward < 1.0


def test_an_agent_that_writes_its_own_score_file_gains_nothing() -> None:
    task = example_claw_task("smart_home_energy_cost")
    fake = json.dumps({"total_score": 100, "details": []})
    calls = [("write", {"path": "workplace_score.json", "content": fake}), ("finish", {})]
    traj, _ = _roll(scripted_agent(calls), ClawTaskHarness(task))
    assert traj.reward == 0.0


def test_a_crashing_workspace_verifier_is_a_defect() -> None:
    good = example_claw_task("smart_home_energy_cost")
    task = WorkspaceTask(**{**good.__dict__, "verifier": "raise RuntimeError('broken verifier')\n"})
    traj, _ = _roll(scripted_agent([("finish", {})]), ClawTaskHarness(task))
    assert traj.defect and traj.error["boundary"] == "verifier"


def test_claw_file_tools_stay_inside_the_workspace(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "secret.txt").write_text("host secret")
    tools = ClawTools(ws)
    assert tools.call("write", {"path": "/workspace/notes/a.txt", "content": "hello\nworld\n"}).ok
    assert tools.call("read", {"path": "notes/a.txt"}).content == "hello\nworld\n"
    assert tools.call("edit", {"path": "notes/a.txt", "old_text": "world", "new_text": "there"}).ok
    assert "notes/a.txt:2:there" in tools.call("grep", {"pattern": "the"}).content
    assert tools.call("ls", {}).content == "notes/"
    for path in ("../secret.txt", str(tmp_path / "secret.txt"), "/etc/passwd", "notes/../../secret.txt"):
        r = tools.call("read", {"path": path})
        assert not r.ok and r.error_kind == "invalid_path"
        assert str(tmp_path) not in r.content
    out = tools.call("bash", {"command": f"ln -s {tmp_path / 'secret.txt'} link.txt; echo made"})
    assert "made" in out.content
    r = tools.call("read", {"path": "link.txt"})
    assert not r.ok and r.error_kind == "invalid_path"
    r = tools.call("edit", {"path": "notes/a.txt", "old_text": "absent", "new_text": "x"})
    assert r.error_kind == "no_match"
    assert tools.call("read", {"path": "notes/a.txt", "bogus": 1}).error_kind == "invalid_argument"
    (ws / "blob.bin").write_bytes(b"\xff\xfe\x00")
    assert tools.call("read", {"path": "blob.bin"}).error_kind == "not_text"
    swap = {"old_text": "a", "new_text": "b"}
    assert tools.call("edit", {"path": "blob.bin", **swap}).error_kind == "not_text"
    assert tools.call("edit", {"path": "nope.txt", **swap}).error_kind == "not_found"


def test_bash_runs_sandboxed_with_only_the_workspace_writable(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    tools = ClawTools(ws)
    r = tools.call("bash", {"command": "pwd; echo data > out.txt; cat out.txt"})
    assert r.ok and "/workspace" in r.content and "data" in r.content
    assert (ws / "out.txt").read_text() == "data\n"
    r = tools.call("bash", {"command": f"echo x > {tmp_path}/escape.txt"})
    assert not r.ok
    assert not (tmp_path / "escape.txt").exists()


def test_file_tools_follow_the_sandbox_mount_that_bash_sees(tmp_path: Path) -> None:
    tools = ClawTools(tmp_path, policy=SandboxPolicy(workspace_mount="/task"))
    assert tools.call("bash", {"command": "pwd"}).content.endswith("/task")
    assert tools.call("write", {"path": "/task/a.txt", "content": "x"}).ok
    assert (tmp_path / "a.txt").read_text() == "x"
    r = tools.call("read", {"path": "/workspace/a.txt"})
    assert r.error_kind == "invalid_path" and "outside /task" in r.content


@pytest.mark.parametrize("bad", ["", "   "])
def test_bash_refuses_empty_commands(tmp_path: Path, bad: str) -> None:
    r = ClawTools(tmp_path).call("bash", {"command": bad})
    assert not r.ok and r.error_kind == "invalid_argument"


_PARTS = st.sampled_from(["a", "b", ".", "..", "/", "~", "\\", " ", "/workspace", "/etc", "link"])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.lists(_PARTS, max_size=12).map("".join))
def test_no_path_string_resolves_outside_the_workspace(tmp_path: Path, path: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    if not (ws / "link").is_symlink():
        (ws / "link").symlink_to(tmp_path)  # a symlink that leads out must not be followed out
    tools = ClawTools(ws)
    try:
        host = tools.resolve(path)
    except ClawToolError as exc:
        assert exc.kind is ClawErrorKind.INVALID_PATH
        return
    root = ws.resolve()
    assert host == root or root in host.parents


def test_cli_rollout_holds_the_budget_and_totals_it_in_the_summary(gold_tool_task, tmp_path: Path) -> None:
    import subprocess
    import sys
    import time

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(gold_tool_task) + "\n")
    gold = _gold(gold_tool_task)
    with OpenAIServer(responder=_slow_after(gold, 1, delay=30)) as server:
        cmd = [
            str(Path(sys.executable).parent / "dataclaw"), "tasks", "rollout", str(tasks), "-n", "3",
            "-o", str(tmp_path / "run"), "--model", f"{server.base_url}::agent", "--timeout", "2",
        ]  # fmt: skip
        t = time.monotonic()
        res = subprocess.run(
            cmd, capture_output=True, text=True, timeout=120, env={"COLUMNS": "250", "PATH": "/usr/bin:/bin"}
        )
        took = time.monotonic() - t
    assert res.returncode == 0, res.stdout + res.stderr
    assert took < 20, took  # three 2 s episodes at once, not three 30 s model calls
    recs = [json.loads(line) for line in (tmp_path / "run" / "rollouts.jsonl").read_text().splitlines()]
    assert len(recs) == 3
    assert all(r["budget_exceeded"] and r["stop_reason"] == "budget_exceeded" for r in recs)
    assert all(r["error"] is None and r["score"] and 2 <= r["wall_s"] < 3 for r in recs)
    summary = json.loads((tmp_path / "run" / "manifest.json").read_text())["rollout"]["summary"]
    assert summary["budget_exceeded"] == 3 and summary["overrun_s_max"] < 1
    assert 6 <= summary["wall_s_total"] < 9
    assert "budget exceeded" in res.stdout and "most over its budget" in res.stdout


def test_pass_hat_k_matches_tau2_by_hand() -> None:
    """pass^k on recorded trials, worked by hand: task a succeeds in 2 of 3 trials, task b in 3 of 3.
    a: pass^1 = 2/3, pass^2 = C(2,2)/C(3,2) = 1/3, pass^3 = 0; b: 1 each. Averages: 5/6, 2/3, 1/2.
    A reward of 0.999 is not a success (τ²-bench counts 1 within 1e-6)."""
    from dataclaw.envcraft.rollout.run import pass_hat_k, rollout_summary

    recs = [{"task_id": "a", "reward": x} for x in (1.0, 0.0, 1.0)]
    recs += [{"task_id": "b", "reward": 1.0} for _ in range(3)]
    assert pass_hat_k(recs) == {1: 0.8333, 2: 0.6667, 3: 0.5}
    assert pass_hat_k([{"task_id": "a", "reward": 0.999}]) == {1: 0.0}
    # k stops at the fewest trials any task has
    assert list(pass_hat_k([*recs, {"task_id": "c", "reward": 1.0}])) == [1]
    assert pass_hat_k([]) == {}
    full = [dict(r, error=None, defect=None, stop_reason="finish", turns=1) for r in recs]
    assert rollout_summary(full)["pass_hat_k"][2] == 0.6667


def test_a_failed_model_call_counts_its_tokens_in_the_episode_usage(gold_tool_task) -> None:
    """A call the server refused sent its prompt: the episode's usage carries it (an estimate, kept
    apart from counted tokens), as the run's ledger does, instead of 0 tokens for a failed episode."""
    traj, _ = _roll(lambda req: Reply.error(400, "bad request"), ToolTaskHarness(gold_tool_task))
    assert traj.error is not None and traj.error["boundary"] == "model"
    assert traj.usage["prompt_tokens"] == 0 and traj.usage["prompt_tokens_estimated"] > 20
