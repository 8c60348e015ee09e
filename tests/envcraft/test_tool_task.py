"""ToolTask: the tasks.jsonl row, read and written back unchanged; a malformed row is one clear error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dataclaw.envcraft.runtime.task import TaskRowError, ToolTask, read_tool_tasks, write_tool_tasks

QUICKSTART = Path(__file__).parents[1] / "viewer" / "data" / "quickstart" / "envcraft" / "tasks.jsonl"


def test_rows_on_disk_round_trip_byte_for_byte(tmp_path: Path) -> None:
    tasks = read_tool_tasks(QUICKSTART)
    assert tasks and all(t.env == "temporal_scheduling" and t.gold_chain for t in tasks)
    write_tool_tasks(tmp_path / "tasks.jsonl", tasks)
    assert (tmp_path / "tasks.jsonl").read_text(encoding="utf-8") == QUICKSTART.read_text(encoding="utf-8")


def test_unknown_keys_are_kept_and_absent_keys_not_added() -> None:
    row = {"id": "t", "env": "e", "scenario_id": "s", "initial_state": {}, "verifier": {"version": 1},
           "from_elsewhere": {"x": 1}}  # fmt: skip
    task = ToolTask.from_row(row)
    assert task.to_row() == row and list(task.to_row()) == list(row)
    assert task.turns() == [""] and task.group == "e" and task.member_envs == ["e"]
    fixed = task.with_verifier({"version": 1, "assertions": []})
    assert fixed.to_row()["verifier"] == {"version": 1, "assertions": []} and task.verifier == {"version": 1}


def test_a_cross_environment_task_names_its_group_and_modules() -> None:
    task = ToolTask.from_row(
        {
            "id": "t",
            "env": "a+b",
            "env_module": None,
            "envs": ["a", "b"],
            "env_modules": {"a": "pkg_a"},
            "scenario_id": "a:1+b:2",
            "initial_state": {},
            "verifier": {},
        }
    )
    assert task.group == "a+b" and task.member_envs == ["a", "b"]
    assert task.module_of("a") == "pkg_a" and task.module_of("b") is None


def test_a_malformed_row_names_the_row_and_the_problem(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    good = json.loads(QUICKSTART.read_text(encoding="utf-8").splitlines()[0])
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "user_turns": "one turn"}) + "\n")
    with pytest.raises(TaskRowError, match=r"tasks.jsonl:2: task '.*' is malformed \(user_turns: "):
        read_tool_tasks(path)
    path.write_text(json.dumps({"id": "x", "env": "e", "scenario_id": "s"}) + "\n")
    with pytest.raises(TaskRowError, match=r"tasks.jsonl:1: task 'x' lacks initial_state, verifier"):
        read_tool_tasks(path)
    path.write_text(json.dumps({"id": "c", "kind": "claw_workspace"}) + "\n[1]\n")
    with pytest.raises(TaskRowError, match="task 'c' is a claw workspace task, not a tool task"):
        read_tool_tasks(path)
    path.write_text("{not json\n")
    with pytest.raises(TaskRowError, match=r"tasks.jsonl:1: not JSON"):
        read_tool_tasks(path)
