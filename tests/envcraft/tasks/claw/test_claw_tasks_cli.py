"""``dataclaw tasks audit|rollout|calibrate`` as a user runs them (console script in a subprocess), against
the OpenAI-compatible test server standing in for the model."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dataclaw.envcraft.tasks.claw.workspace import WorkspaceTask, load_tasks
from envcraft.rollout.rollout_helpers import scripted_agent, solution_calls, tool_task
from support.openai_server import OpenAIServer, Reply

ROOT = Path(__file__).resolve().parents[4]
pytestmark = pytest.mark.slow  # console script per test, sandboxed builders and verifiers

EXAMPLES = ROOT / "examples" / "claw_tasks"
BROKEN = Path(__file__).resolve().parent / "fixtures" / "broken_tasks"


def dataclaw(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    exe = shutil.which("dataclaw", path=str(Path(sys.executable).parent))
    assert exe
    return subprocess.run(
        [exe, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_audit_reports_per_task_what_fails_and_why(tmp_path: Path) -> None:
    res = dataclaw("tasks", "audit", str(BROKEN), "--out", str(tmp_path / "run"))
    assert res.returncode == 0, res.stderr
    for code in (
        "untouched_above_floor",
        "verifier_crash",
        "builder_escape",
        "answer_leak",
        "non_stdlib_import",
    ):
        assert code in res.stdout
    reports = {r["id"]: r for r in _lines(tmp_path / "run" / "code_audit.jsonl")}
    assert len(reports) == 6 and reports["good_reorder"]["passed"]
    rejects = {r["record_id"]: r["reason"] for r in _lines(tmp_path / "run" / "rejects.jsonl")}
    assert rejects["crashing_verifier"] == "verifier_crash"
    strict = dataclaw("tasks", "audit", str(BROKEN), "--out", str(tmp_path / "run"), "--strict")
    assert strict.returncode == 1


def test_audit_of_a_folder_without_tasks_is_a_clear_error(tmp_path: Path) -> None:
    res = dataclaw("tasks", "audit", str(tmp_path))
    assert res.returncode == 1
    assert "tasks.jsonl" in res.stderr and "Traceback" not in res.stderr


def test_rollout_solves_the_example_claw_tasks_and_resumes(tmp_path: Path) -> None:
    tasks = [t for t in load_tasks(EXAMPLES) if isinstance(t, WorkspaceTask)]
    agents = {t.prompt: scripted_agent(solution_calls(t)) for t in tasks}

    def respond(req):
        return agents[req.body["messages"][1]["content"]](req)

    run = tmp_path / "run"
    with OpenAIServer(responder=respond) as server:
        args = ("tasks", "rollout", str(EXAMPLES), "--out", str(run), "--model", f"{server.base_url}::agent")
        res = dataclaw(*args)
        assert res.returncode == 0, res.stderr
        first = server.request_count
        again = dataclaw(*args)
        assert again.returncode == 0 and server.request_count == first  # resumed: nothing re-asked
    recs = _lines(run / "rollouts.jsonl")
    assert sorted(r["task_id"] for r in recs) == sorted(t.task_id for t in tasks)
    assert all(r["reward"] == 1.0 and r["stop_reason"] == "finished" for r in recs)
    assert all(r["messages"][0]["role"] == "system" and r["steps"] for r in recs)
    assert "mean reward" in res.stdout
    # the manifest holds what the model calls cost, summed over both invocations
    usage = json.loads((run / "manifest.json").read_text())["models"]["usage"]["total"]
    assert usage["calls"] == first and usage["prompt_tokens"] > 0


def test_calibrate_keeps_a_task_with_an_intermediate_pass_rate(tmp_path: Path) -> None:
    task = tool_task()
    (tmp_path / "tasks.jsonl").write_text(json.dumps(task) + "\n")
    solve = scripted_agent([(c["tool"], c["params"]) for c in task["gold_chain"]])
    give_up = scripted_agent([])

    def respond(req):
        return solve(req) if req.body["seed"] in (0, 2) else give_up(req)

    with OpenAIServer(responder=respond) as server:
        res = dataclaw(
            "tasks", "calibrate", str(tmp_path), "--out", str(tmp_path / "run"), "-k", "4",
            "--model", f"{server.base_url}::agent",
        )  # fmt: skip
        assert res.returncode == 0, res.stderr
    cal = _lines(tmp_path / "run" / "calibration.jsonl")
    assert cal[0]["verdict"] == "keep" and cal[0]["p"] == 0.5
    assert len(_lines(tmp_path / "run" / "rollouts.jsonl")) == 4
    assert _lines(tmp_path / "run" / "calibrated_tasks.jsonl")[0]["id"] == task["id"]


def test_calibrate_routes_a_crashing_verifier_to_repair(tmp_path: Path) -> None:
    good = (BROKEN / "scripts" / "good_reorder" / "verify_workplace.py").read_text()
    fixer_replies = [Reply.json({"verify_workplace_py": good})]

    def respond(req):
        if req.body.get("response_format"):
            return fixer_replies.pop(0)
        return Reply.tool_call("finish", {})

    with OpenAIServer(responder=respond) as server:
        url = f"{server.base_url}::m"
        res = dataclaw(
            "tasks", "calibrate", str(BROKEN), "--out", str(tmp_path / "run"), "-k", "2", "--limit", "1",
            "--model", url, "--repair-model", url,
        )  # fmt: skip
        assert res.returncode == 0, res.stderr
    cal = _lines(tmp_path / "run" / "calibration.jsonl")[0]
    assert cal["id"] == "crashing_verifier" and cal["verdict"] == "verifier_defect"
    assert cal["repair"]["ok"] and cal["repair"]["attempts"] == 1
    repaired = _lines(tmp_path / "run" / "repaired_tasks.jsonl")[0]
    assert repaired["verifier"] == good


def test_claw_synth_writes_four_file_tasks_from_clawforge_chains_and_audits_them(
    tmp_path: Path, shared_data: Path
) -> None:
    chains = shared_data / "clawforge" / "chains" / "logistics_envs.jsonl"
    source = next(t for t in load_tasks(EXAMPLES) if t.task_id == "logistics_manager_review")

    def respond(req):
        system = req.body["messages"][0]["content"]
        tid = system.split("for task ", 1)[1].split(".", 1)[0]
        return Reply.json(
            {
                "task_yaml": f"id: {tid}\nprompt: tasks/prompts/{tid}.md\nasset: {tid}\n",
                "prompt_md": source.prompt,
                "env_builder_py": source.builder,
                "verify_workplace_py": source.verifier,
            }
        )

    with OpenAIServer(responder=respond) as server:
        res = dataclaw(
            "tasks", "claw-synth", str(chains), "--out", str(tmp_path / "run"), "--limit", "2",
            "--model", f"{server.base_url}::writer",
        )  # fmt: skip
        assert res.returncode == 0, res.stderr
        assert server.request_count == 2
    made = [t for t in load_tasks(tmp_path / "run" / "claw_tasks") if isinstance(t, WorkspaceTask)]
    assert len(made) == 2 and all(t.task_id.startswith("logistics_envs-") for t in made)
    audits = _lines(tmp_path / "run" / "code_audit.jsonl")
    assert {a["id"] for a in audits} == {t.task_id for t in made} and all(a["passed"] for a in audits)


def test_audit_with_a_model_adds_the_rubric_gate(tmp_path: Path) -> None:
    def verdict(sol: int) -> Reply:
        return Reply.json(
            {
                "reasoning_steps": {f"dimension_{i}_analysis": "evidence" for i in (1, 2, 3)},
                "scores": {"task_solvability": sol, "validation_integrity": 3, "data_consistency": 3},
                "is_qualified": True,
            }
        )

    with OpenAIServer() as server:
        server.enqueue(verdict(3), verdict(2))  # tasks are audited in id order
        res = dataclaw(
            "tasks", "audit", str(EXAMPLES), "--out", str(tmp_path / "run"),
            "--model", f"{server.base_url}::judge",
        )  # fmt: skip
    assert res.returncode == 0, res.stderr
    rubric = {r["id"]: r for r in _lines(tmp_path / "run" / "rubric.jsonl")}
    assert rubric["logistics_manager_review"]["qualified"]
    assert not rubric["smart_home_energy_cost"]["qualified"]
    rejects = {r["record_id"]: r["reason"] for r in _lines(tmp_path / "run" / "rejects.jsonl")}
    assert rejects == {"smart_home_energy_cost": "rubric_gate"}
