"""A trainer export of a task run that was rolled out carries pass^k and the reward's components in its
manifest (recorded trials checked by hand): ``tasks rollout RUN -o RUN`` with a scripted agent (the
OpenAI-compatible test server) that solves some tasks on every trial and one task on one trial of two."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dataclaw.cli.app import _run
from dataclaw.envcraft.export import export_tasks
from support.openai_server import OpenAIServer, ReceivedRequest, Reply


def write(tasks: list[dict[str, Any]], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    return path


def _agent(tasks: list[dict[str, Any]]):
    """Replays the gold chain of the task it is asked about, except for the first task on seed 1 (the
    second trial), where it only talks: that trial fails."""
    by_turn = {t["user_turns"][0]: t for t in tasks}

    def respond(req: ReceivedRequest) -> Reply:
        body = req.body or {}
        msgs = body["messages"]
        task = by_turn[next(m["content"] for m in msgs if m["role"] == "user")]
        n = sum(1 for m in msgs if m["role"] == "assistant")
        lazy = task["id"] == tasks[0]["id"] and body.get("seed") == 1
        chain = [] if lazy else task["gold_chain"]
        if n < len(chain):
            return Reply.tool_call(chain[n]["tool"], chain[n]["params"], call_id=f"call_{n}")
        return Reply.text("All done.")

    return respond


def test_an_export_of_a_rolled_out_run_carries_pass_hat_k(
    tool_tasks: list, tasks_file: Path, tmp_path, capsys
) -> None:
    run = tasks_file.parent
    with OpenAIServer(responder=_agent(tool_tasks)) as server:
        model = f"{server.base_url}::agent"
        args = [
            "tasks",
            "rollout",
            str(run),
            "-o",
            str(run),
            "--model",
            f"{server.base_url}::agent",
            "-n",
            "2",
        ]
        assert _run(args) == 0
    recs = [json.loads(x) for x in (run / "rollouts.jsonl").read_text().splitlines()]
    assert len(recs) == 8 and sum(r["reward"] == 1.0 for r in recs) == 7
    first = tool_tasks[0]["id"]
    # by hand: pass^1 = (3 × 2/2 + 1/2) / 4 = 0.875; pass^2 = (3 × 1 + 0) / 4 = 0.75
    manifest_run = json.loads((run / "manifest.json").read_text())
    assert manifest_run["rollout"]["summary"]["pass_hat_k"] == {"1": 0.875, "2": 0.75}

    out = export_tasks(tasks_file, "trl", tmp_path / "trl").out
    stats = json.loads((out / "manifest.json").read_text())["rollouts"]
    assert stats["pass_hat_k"] == {"1": 0.875, "2": 0.75}
    assert (stats["tasks"], stats["of_tasks"], stats["rollouts"]) == (4, 4, 8)
    assert stats["per_task"][first] == {"trials": 2, "successes": 1}
    assert stats["components"]["db"] == {"rollouts": 8, "mean": 0.875, "errors": 0}
    assert stats["mean_reward"] == 0.875 and stats["models"] == [model]

    assert _run(["tasks", "export", str(run), "--to", "verl", "-o", str(tmp_path / "verl")]) == 0
    printed = " ".join(capsys.readouterr().out.split())  # the console wraps long lines
    line = "rollouts: 8 of 4/4 tasks (rollouts.jsonl): pass^1=0.875 pass^2=0.750, mean reward 0.875"
    assert line in printed, printed


def test_an_export_without_rollouts_says_none(tasks_file: Path, tmp_path) -> None:
    out = export_tasks(tasks_file, "verl", tmp_path / "verl").out
    assert json.loads((out / "manifest.json").read_text())["rollouts"] is None


def test_an_export_names_basis_components_its_reward_cannot_score(tool_tasks: list, tmp_path, capsys) -> None:
    told = {"reward_basis": ["DB", "COMMUNICATE"], "communicate_info": ["done"]}
    tasks = [{**t, "metadata": {**t["metadata"], **told}} if i < 2 else t for i, t in enumerate(tool_tasks)]
    src = write(tasks, tmp_path / "run" / "tasks.jsonl")
    assert _run(["tasks", "export", str(src), "--to", "trl", "-o", str(tmp_path / "trl")]) == 0
    manifest = json.loads((tmp_path / "trl" / "manifest.json").read_text())
    assert manifest["unscored_basis"] == {"communicate": 2}
    printed = " ".join(capsys.readouterr().out.split())
    assert "not scored: communicate (2 tasks) (they need the conversation)" in printed
    # a basis component without data (no communicate info) is no gap: τ² counts it 1
    bare = [{**t, "metadata": {**t["metadata"], "reward_basis": ["DB", "COMMUNICATE"]}} for t in tool_tasks]
    src = write(bare, tmp_path / "bare" / "tasks.jsonl")
    out = export_tasks(src, "trl", tmp_path / "trl-bare").out
    assert json.loads((out / "manifest.json").read_text())["unscored_basis"] == {}
