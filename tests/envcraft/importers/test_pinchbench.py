"""PinchBench task files → claw workspace tasks: conversion, per-item rejects, resume, the grader only in
the sandbox, and the imported set through ``tasks audit`` and ``tasks rollout``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dataclaw.cli.app import _run
from dataclaw.envcraft.importers import Produces, run_import
from dataclaw.envcraft.tasks.claw.workspace import WorkspaceTask, fresh_workspace, run_builder, run_verifier
from dataclaw.sandbox import sandbox_available
from envcraft.importers import shapes
from support.openai_server import OpenAIServer, Reply

needs_sandbox = pytest.mark.skipif(not sandbox_available(), reason="needs the sandbox")


def _tasks(run: Path) -> dict[str, dict]:
    recs = [json.loads(x) for x in (run / "tasks.jsonl").read_text().splitlines()]
    return {r["id"]: r for r in recs}


def _rejects(run: Path) -> dict[str, str]:
    recs = [json.loads(x) for x in (run / "rejects.jsonl").read_text().splitlines()]
    return {r["detail"]["key"]: r["reason"] for r in recs}


def test_task_files_become_claw_tasks_and_bad_ones_rejects_with_reasons(tmp_path: Path) -> None:
    skill = shapes.pinchbench_skill(tmp_path / "skill")
    run = tmp_path / "run"
    s = run_import("auto", skill, run, Produces.TASKS)
    assert (s.format, s.items, s.imported) == ("pinchbench", 5, 2)
    assert s.rejects == {"syntax_error": 1, "unsupported": 1, "malformed": 1}
    assert _rejects(run) == {
        "tasks/task_broken_grader.md": "syntax_error",
        "tasks/task_judge_only.md": "unsupported",
        "tasks/task_missing_asset.md": "malformed",
    }
    tasks = _tasks(run)
    assert set(tasks) == {"task_memory", "task_csv_total"}
    csv = WorkspaceTask.from_record(tasks["task_csv_total"])
    assert tasks["task_csv_total"]["kind"] == "claw_workspace"
    assert csv.prompt.startswith("I have a CSV file `sales.csv`")
    assert csv.timeout_s == 180
    meta = csv.config["pinchbench"]
    assert meta["grading_weights"] == {"automated": 0.6, "llm_judge": 0.4}
    assert meta["grading_criteria"] == ["File `total.txt` is created", "The total is 60"]
    assert "Accuracy" in meta["llm_judge_rubric"] and meta["reads_transcript"] is False
    assert "def grade(transcript: list, workspace_path: str) -> dict:" in csv.verifier  # verbatim
    assert _tasks(run)["task_memory"]["config"]["pinchbench"]["reads_transcript"] is True


def test_a_rerun_resumes_and_a_fixed_task_is_imported_then(tmp_path: Path) -> None:
    skill = shapes.pinchbench_skill(tmp_path / "skill")
    run = tmp_path / "run"
    run_import("pinchbench", skill, run, Produces.TASKS)
    again = run_import("pinchbench", skill, run, Produces.TASKS)
    assert again.resumed == 5 and again.imported == 2 and again.records == 2
    fixed = shapes.BROKEN_GRADER_TASK.replace("if True\n", "if True:\n")
    (skill / "tasks" / "task_broken_grader.md").write_text(fixed)
    after = run_import("pinchbench", skill, run, Produces.TASKS)
    assert after.resumed == 4 and after.imported == 3
    assert "task_broken_grader" in _tasks(run)
    assert "syntax_error" not in after.rejects


def test_two_files_with_one_task_id_the_second_is_a_duplicate(tmp_path: Path) -> None:
    skill = shapes.pinchbench_skill(tmp_path / "skill", broken=False)
    (skill / "tasks" / "task_memory_copy.md").write_text(shapes.MEMORY_TASK)
    s = run_import("pinchbench", skill, tmp_path / "run", Produces.TASKS)
    assert s.rejects == {"duplicate": 1}
    assert "same task id as tasks/task_memory.md" in s.reject_messages[0]


def test_importing_never_runs_the_grading_code(tmp_path: Path) -> None:
    marker = tmp_path / "ran.txt"
    task = shapes.CSV_TASK.replace(
        "def grade(transcript: list, workspace_path: str) -> dict:",
        f"open({str(marker)!r}, 'w').write('x')\n\n\n"
        + "def grade(transcript: list, workspace_path: str) -> dict:",
    )
    skill = shapes.pinchbench_skill(tmp_path / "skill", broken=False)
    (skill / "tasks" / "task_csv_total.md").write_text(task)
    s = run_import("pinchbench", skill, tmp_path / "run", Produces.TASKS)
    assert s.imported == 2 and not marker.exists()


@needs_sandbox
def test_builder_and_grader_run_in_the_sandbox_with_pinchbench_scoring(tmp_path: Path) -> None:
    skill = shapes.pinchbench_skill(tmp_path / "skill", broken=False)
    run_import("pinchbench", skill, tmp_path / "run", Produces.TASKS)
    task = WorkspaceTask.from_record(_tasks(tmp_path / "run")["task_csv_total"])
    ws = fresh_workspace(tmp_path, "ws")
    assert run_builder(task, ws).ok
    assert (ws / "sales.csv").read_text().startswith("region,amount")
    untouched = run_verifier(task, ws)
    assert untouched.score == 0.0 and untouched.report["details"][0]["item"] == "file_created"
    (ws / "total.txt").write_text("61\n")
    half = run_verifier(task, ws)  # PinchBench's automated score: the mean of the criteria
    assert half.score == pytest.approx(0.5)
    (ws / "total.txt").write_text("60\n")
    assert run_verifier(task, ws).score == 1.0


def _agent(req) -> Reply:
    """Solve the CSV task (write 60, finish); the memory task: read notes.md (a criterion the grader finds
    in the transcript), write the answer, finish."""
    msgs = req.body["messages"]
    prompt = next(m["content"] for m in msgs if m["role"] == "user")
    n = sum(1 for m in msgs if m["role"] == "assistant")
    if "sales.csv" in prompt:
        plan = [("write", {"path": "total.txt", "content": "60\n"}), ("finish", {})]
    else:
        plan = [
            ("read", {"path": "notes.md"}),
            ("write", {"path": "answer.txt", "content": "The beta release is June 1, 2024.\n"}),
            ("finish", {}),
        ]
    if n < len(plan):
        return Reply.tool_call(plan[n][0], plan[n][1], call_id=f"call_{n}")
    return Reply.text("done")


@needs_sandbox
def test_imported_tasks_go_through_tasks_audit_and_tasks_rollout(tmp_path: Path, capsys) -> None:
    skill = shapes.pinchbench_skill(tmp_path / "skill")
    run = tmp_path / "run"
    assert _run(["tasks", "import", "pinchbench", str(skill), "-o", str(run)]) == 0
    out = capsys.readouterr().out
    assert "syntax_error=1" in out and "tasks: 2 records" in out

    assert _run(["tasks", "audit", str(run), "-o", str(tmp_path / "audit")]) == 0
    reports = {
        r["id"]: r
        for r in map(json.loads, (tmp_path / "audit" / "code_audit.jsonl").read_text().splitlines())
    }
    assert set(reports) == {"task_memory", "task_csv_total"}
    for r in reports.values():  # loaded, built, verified in the sandbox; the untouched workspace scores 0
        checks = {c["name"]: c["passed"] for c in r["checks"]}
        assert checks["builder"] and checks["verifier"] and checks["untouched_floor"]
        assert r["untouched_score"] == 0.0

    with OpenAIServer(responder=_agent) as server:
        args = [
            "tasks",
            "rollout",
            str(run),
            "-o",
            str(tmp_path / "ro"),
            "--model",
            f"{server.base_url}::agent",
        ]
        assert _run(args) == 0
    rollouts = {
        r["task_id"]: r
        for r in map(json.loads, (tmp_path / "ro" / "rollouts.jsonl").read_text().splitlines())
    }
    assert rollouts["task_csv_total"]["reward"] == 1.0
    # the memory task's third criterion reads the transcript: the episode reached grade() on stdin
    assert rollouts["task_memory"]["reward"] == pytest.approx(1.0, abs=1e-6)
    details = rollouts["task_memory"]["score"]["workplace_score"]["details"]
    assert {d["item"]: d["passed"] for d in details} == dict.fromkeys(
        ("file_created", "correct_date", "read_notes"), True
    )
