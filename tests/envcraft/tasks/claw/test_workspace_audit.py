"""The four-file protocol and its code audit (EnvCraft C.5/C.6) on shipped examples and broken fixtures."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dataclaw.envcraft.tasks.claw.audit import ClawAuditReason, audit_task, prompt_paths
from dataclaw.envcraft.tasks.claw.workspace import (
    LayoutError,
    LayoutProblem,
    WorkspaceTask,
    load_task,
    load_tasks,
    parse_score,
    write_task,
)
from dataclaw.sandbox import SandboxPolicy

ROOT = Path(__file__).resolve().parents[4]
EXAMPLES = ROOT / "examples" / "claw_tasks"
BROKEN = Path(__file__).resolve().parent / "fixtures" / "broken_tasks"


def _task(tid: str, root: Path = BROKEN) -> WorkspaceTask:
    task = load_task(root, tid)
    assert isinstance(task, WorkspaceTask), task
    return task


def _reasons(report) -> set[ClawAuditReason]:
    return {c.reason for c in report.failures}


@pytest.mark.parametrize("tid", ["logistics_manager_review", "smart_home_energy_cost"])
def test_shipped_examples_pass_every_check_and_their_solutions_score_full(tid: str) -> None:
    report = audit_task(_task(tid, EXAMPLES))
    assert report.passed, [c.to_dict() for c in report.failures]
    assert report.untouched_score == 0.0
    assert report.solved_score == 1.0
    names = {c.name for c in report.checks}
    assert {"path_consistency", "objective_consistency", "data_consistency", "answer_uniqueness"} <= names
    assert {"information_separation", "untouched_floor", "code_only_verifier", "solution"} <= names


def test_unsafe_mode_gives_the_verifier_the_host_workspace() -> None:
    """Without the sandbox there is no /workspace mount: argv[1] and the traced paths are the host folder."""
    report = audit_task(_task("logistics_manager_review", EXAMPLES), policy=SandboxPolicy(unsafe=True))
    assert report.passed, [c.to_dict() for c in report.failures]
    assert report.solved_score == 1.0


def test_a_verifier_that_pays_for_an_untouched_workspace_is_rejected() -> None:
    report = audit_task(_task("passes_untouched"))
    assert not report.passed
    assert _reasons(report) == {ClawAuditReason.UNTOUCHED_ABOVE_FLOOR}
    assert report.untouched_score is not None and report.untouched_score > 0
    assert not report.defect


def test_the_floor_is_configurable() -> None:
    report = audit_task(_task("passes_untouched"), floor=0.2)
    assert report.passed, [c.to_dict() for c in report.failures]


def test_a_crashing_verifier_is_a_data_defect() -> None:
    report = audit_task(_task("crashing_verifier"))
    assert _reasons(report) == {ClawAuditReason.VERIFIER_CRASH}
    assert report.defect
    assert "KeyError" in report.failures[0].message


def test_a_builder_writing_outside_the_workspace_is_flagged_and_blocked() -> None:
    report = audit_task(_task("escaping_builder"))
    assert _reasons(report) == {ClawAuditReason.BUILDER_ESCAPE}
    assert not Path("/etc/dataclaw_planted").exists()


def test_an_answer_spelled_out_in_the_prompt_is_a_leak() -> None:
    report = audit_task(_task("leaky_prompt"))
    assert _reasons(report) == {ClawAuditReason.ANSWER_LEAK}
    assert "SKU-1002" in report.failures[0].message


def test_a_verifier_importing_outside_the_standard_library_is_flagged() -> None:
    report = audit_task(_task("non_stdlib_verifier"))
    assert ClawAuditReason.NON_STDLIB_IMPORT in _reasons(report)


def test_network_and_environment_access_in_the_verifier_are_flagged() -> None:
    good = _task("good_reorder")
    for bad in ("import urllib.request\n", "import os\nKEY = os.environ.get('API_KEY')\n"):
        task = WorkspaceTask(**{**good.__dict__, "verifier": bad + good.verifier})
        report = audit_task(task)
        assert ClawAuditReason.FORBIDDEN_CAPABILITY in _reasons(report)


def test_path_and_objective_mismatches_are_reported() -> None:
    good = _task("good_reorder")
    other_path = WorkspaceTask(
        **{**good.__dict__, "prompt": good.prompt.replace("reports/reorder.json", "out/reorder.json")}
    )
    report = audit_task(other_path)
    assert ClawAuditReason.PATH_MISMATCH in _reasons(report)
    assert ClawAuditReason.OBJECTIVE_MISMATCH in _reasons(report)


def test_a_verifier_checking_ids_that_do_not_exist_is_data_inconsistent() -> None:
    good = _task("good_reorder")
    task = WorkspaceTask(**{**good.__dict__, "verifier": good.verifier.replace("SKU-2001", "SKU-9999")})
    assert ClawAuditReason.DATA_INCONSISTENT in _reasons(audit_task(task))


def test_a_builder_that_draws_new_data_each_run_has_no_unique_answer() -> None:
    good = _task("good_reorder")
    builder = "import random\n" + good.builder.replace(
        '"stock_level": 150', '"stock_level": random.randint(200, 10**9)'
    )
    task = WorkspaceTask(**{**good.__dict__, "builder": builder, "solution": None})
    assert ClawAuditReason.NON_DETERMINISTIC in _reasons(audit_task(task))


def test_folder_loading_reports_broken_layouts(tmp_path: Path) -> None:
    shutil.copytree(BROKEN, tmp_path / "t")
    root = tmp_path / "t"
    (root / "scripts" / "good_reorder" / "verify_workplace.py").unlink()
    text = (root / "tasks" / "passes_untouched.yaml").read_text().replace("id: passes_untouched", "id: other")
    (root / "tasks" / "passes_untouched.yaml").write_text(text)
    loaded = {x.task_id: x for x in load_tasks(root)}
    assert isinstance(loaded["good_reorder"], LayoutError)
    assert loaded["good_reorder"].reason is LayoutProblem.MISSING_FILE
    assert "scripts/good_reorder/verify_workplace.py" in loaded["good_reorder"].message
    assert "tasks/good_reorder/env_builder.py" in loaded["good_reorder"].message  # what was found
    # the file stem wins over a disagreeing yaml id, with a note on the record
    renamed = loaded["passes_untouched"]
    assert isinstance(renamed, WorkspaceTask) and renamed.task_id == "passes_untouched"
    assert "'other' disagrees" in renamed.inferred["id"]
    assert isinstance(loaded["leaky_prompt"], WorkspaceTask)
    leaky = root / "tasks" / "leaky_prompt.yaml"
    leaky.write_text(leaky.read_text().replace("tasks/prompts/", "../../outside/"))
    escaped = load_task(root, "leaky_prompt")
    assert isinstance(escaped, LayoutError) and escaped.reason is LayoutProblem.PROMPT_PATH
    assert "outside the task root" in escaped.message


def test_write_then_load_round_trips(tmp_path: Path) -> None:
    task = _task("good_reorder")
    write_task(task, tmp_path)
    again = _task("good_reorder", tmp_path)
    assert (again.prompt, again.builder, again.verifier, again.solution) == (
        task.prompt,
        task.builder,
        task.verifier,
        task.solution,
    )
    assert again.config["id"] == "good_reorder"


@pytest.mark.parametrize(
    ("raw", "ok"),
    [
        (
            {"total_score": 85, "details": [{"item": "a", "score": 85, "max_score": 100, "passed": False}]},
            0.85,
        ),
        ({"total_score": 5, "details": []}, 0.05),
        ({"total_score": "85", "details": []}, None),
        (
            {"total_score": 120, "details": [{"item": "a", "score": 0, "max_score": 100, "passed": False}]},
            None,
        ),
        ({"total_score": 1, "details": [{"item": "a"}]}, None),
        ([1, 2], None),
    ],
)
def test_score_files_are_parsed_strictly(raw, ok) -> None:
    score, problem = parse_score(raw)
    assert score == ok
    assert (problem is None) == (ok is not None)


def test_prompt_paths_are_workspace_relative_file_names() -> None:
    text = "See `data/inventory.json` and write reports/out.csv, then ./notes.md. Not e.g. or 3.5."
    assert prompt_paths(text) == ["data/inventory.json", "reports/out.csv", "notes.md"]
