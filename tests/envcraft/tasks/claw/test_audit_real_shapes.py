"""The C.6 audit on tasks in the shapes other projects write (ClawForge's release): no false alarms on the
sound ones, the broken ones still caught with the matching reason, scores read against the declared max,
and bad input rejected with a reason naming the file. Builders and verifiers run in the sandbox."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import pytest

from dataclaw.core.store import RunStore
from dataclaw.envcraft.quality.calibrate import audit_verifier
from dataclaw.envcraft.quality.runs import audit_by_code, load_task_source
from dataclaw.envcraft.rollout.harness import ClawTaskHarness
from dataclaw.envcraft.tasks.claw.audit import (
    AuditReport,
    ClawAuditReason,
    Severity,
    audit_task,
    constructed_paths,
    prompt_paths,
)
from dataclaw.envcraft.tasks.claw.workspace import (
    WorkspaceTask,
    load_task,
    read_score,
    run_builder,
    run_verifier,
)
from envcraft.tasks.claw.claw_shapes import review_task, with_credit_for_the_folder, with_exit_status

R = ClawAuditReason


def _load(tmp_path: Path, shape) -> WorkspaceTask:
    shape.write(tmp_path)
    task = load_task(tmp_path, shape.task_id)
    assert isinstance(task, WorkspaceTask), task
    return task


def _failed(report: AuditReport) -> set[ClawAuditReason]:
    return {c.reason for c in report.failures if c.reason is not None}


def _warned(report: AuditReport) -> set[ClawAuditReason]:
    return {c.reason for c in report.warnings if c.reason is not None}


@pytest.fixture
def sound(tmp_path: Path) -> WorkspaceTask:
    return _load(tmp_path, review_task())


# ---- the sound task: the false alarms of the old heuristics --------------------------------------------


def test_a_sound_task_written_elsewhere_passes_every_check(sound: WorkspaceTask) -> None:
    """Partial input path (``papers.json`` for ``db_dumps/papers.json``), the ``ops/`` folder the verifier
    looks at, output field names in the request, a ``.mmd`` output glued to CJK text, an early-exit
    verifier: none of them is a failure."""
    report = audit_task(sound)
    assert report.passed, [c.to_dict() for c in report.failures]
    assert (report.untouched_score, report.solved_score) == (0.0, 1.0)
    names = {c.name: c for c in report.checks}
    for check in ("path_consistency", "objective_consistency", "information_separation", "data_consistency"):
        assert names[check].severity is None, names[check]
    assert _warned(report) == {R.PARTIAL_DETAILS}  # the early exit, kept as a warning
    rec = report.to_record()
    assert rec["passed"]
    assert [c["reason"] for c in rec["checks"] if c["severity"] == "warning"] == ["partial_details"]
    assert rec["inferred"] == {
        "id": "from name",
        "prompt": "from the yaml's prompt_path, relative to the task root",
    }


def test_prompt_paths_stay_ascii_and_keep_real_extensions() -> None:
    text = "请把路线图保存到ops/roadmap.mmd里，注意 .mmd 后缀；结果放到`reports/2024-Q1_summary.md`。"
    text += "见 papers.json"
    assert prompt_paths(text) == ["ops/roadmap.mmd", "reports/2024-Q1_summary.md", "papers.json"]
    assert prompt_paths("Write a .mmd file; e.g. v1.2, john.smith@example.com, https://x.org/a.html") == []


def test_paths_built_in_the_verifiers_source_count_as_inspected() -> None:
    src = (
        "import os, sys\nfrom pathlib import Path\nworkspace = sys.argv[1] if len(sys.argv) > 1 else '.'\n"
        "ws = Path(workspace)\nreports = ws / 'reports'\ntarget = reports / '2024-Q1_summary.md'\n"
        "deny = os.path.join(workspace, 'ops', 'deny_list.json')\n"
        "leak = os.path.join(workspace, '/etc/passwd')\n"
        "up = os.path.join(workspace, '..', 'x.json')\nq = ws.joinpath('ops', 'q.csv')\n"
    )
    assert constructed_paths(src) == {
        "reports",
        "reports/2024-Q1_summary.md",
        "ops/deny_list.json",
        "ops/q.csv",
    }


def test_an_output_checked_only_on_a_branch_the_untouched_run_skips_is_found_in_the_source(
    tmp_path: Path,
) -> None:
    """The untouched run exits before it stats ``ops/roadmap.mmd``; the verifier's source still builds it."""
    task = _load(tmp_path, review_task())
    ws = tmp_path / "ws"
    assert run_builder(task, ws).ok
    assert "ops/roadmap.mmd" not in run_verifier(task, ws).inspected
    assert "ops/roadmap.mmd" in constructed_paths(task.verifier)
    report = audit_task(task)
    assert next(c for c in report.checks if c.name == "path_consistency").severity is None


# ---- true positives that must still fire ----------------------------------------------------------------


def test_a_prompt_that_spells_out_the_expected_selection_is_a_leak(tmp_path: Path) -> None:
    shape = review_task("wp_leak__000")
    shape.prompt = shape.prompt.replace("谢谢！", "（答案应该是 P-101 和 P-103。）谢谢！")
    report = audit_task(_load(tmp_path, shape))
    assert _failed(report) == {R.ANSWER_LEAK}
    assert "P-101 + P-103" in report.failures[0].message


def test_a_prompt_that_states_the_expected_amount_is_a_leak(tmp_path: Path) -> None:
    shape = review_task("wp_amount__000")
    shape.verifier = shape.verifier.rstrip().removesuffix("finish()") + (
        'total_cost = data.get("total_cost") if isinstance(data, dict) else None\n'
        "if total_cost == 10450.75:\n    pass\nfinish()\n"
    )
    shape.prompt += "顺便，总费用应该是 10450.75。\n"
    report = audit_task(_load(tmp_path, shape))
    assert R.ANSWER_LEAK in _failed(report)
    assert "10450.75" in next(c for c in report.failures if c.reason is R.ANSWER_LEAK).message


def test_a_verifier_checking_an_output_the_prompt_never_asks_for_is_flagged(tmp_path: Path) -> None:
    shape = review_task("wp_extra__000")
    shape.verifier = shape.verifier.replace(
        'ops_dir = os.path.join(workspace, "ops")\n',
        'ops_dir = os.path.join(workspace, "ops")\n'
        'if os.path.exists(os.path.join(workspace, "ops", "audit_log.json")):\n    pass\n',
    )
    report = audit_task(_load(tmp_path, shape))
    assert _failed(report) == {R.OBJECTIVE_MISMATCH}
    assert "ops/audit_log.json" in report.failures[0].message


def test_a_prompt_output_the_verifier_looks_for_elsewhere_is_a_path_mismatch(tmp_path: Path) -> None:
    shape = review_task("wp_moved__000")
    shape.prompt = shape.prompt.replace("ops/review_summary.json", "ops/summary.json")
    report = audit_task(_load(tmp_path, shape))
    assert _failed(report) == {R.PATH_MISMATCH, R.OBJECTIVE_MISMATCH}
    path = next(c for c in report.failures if c.reason is R.PATH_MISMATCH)
    assert "ops/summary.json" in path.message


def test_a_further_file_the_prompt_names_but_nothing_checks_is_a_warning(tmp_path: Path) -> None:
    """The verifier checks every output it is about; a further name in the prose may be an example."""
    shape = review_task("wp_unchecked__000")
    shape.prompt += "格式可以参考去年的 `ops/review_2023.json`（已经删了）。\n"
    report = audit_task(_load(tmp_path, shape))
    assert report.passed, [c.to_dict() for c in report.failures]
    path = next(c for c in report.checks if c.name == "path_consistency")
    assert path.severity is Severity.WARNING and "ops/review_2023.json" in path.message


def test_a_verifier_reading_the_workspace_from_the_environment_is_not_credential_access(
    tmp_path: Path,
) -> None:
    shape = review_task("wp_envws__000")
    shape.verifier = shape.verifier.replace(
        'workspace = sys.argv[1] if len(sys.argv) > 1 else "."',
        'workspace = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("WORKSPACE", ".")',
    )
    assert audit_task(_load(tmp_path, shape)).passed
    shape = replace(shape, task_id="wp_envkey__000")
    shape.verifier = shape.verifier.replace(
        'os.environ.get("WORKSPACE", ".")', 'os.environ.get("OPENAI_API_KEY")'
    )
    assert R.FORBIDDEN_CAPABILITY in _failed(audit_task(_load(tmp_path, shape)))


def test_field_names_with_the_answer_spelled_out_are_told_apart(tmp_path: Path) -> None:
    """Output keys the request must name (review, roadmap, papers_used) never count as a leak; the values
    still do."""
    shape = review_task("wp_fields__000")
    shape.prompt += "字段顺序：review, roadmap, papers_used。\n"
    assert audit_task(_load(tmp_path, shape)).passed


# ---- score semantics --------------------------------------------------------------------------------------


def test_credit_for_the_folder_the_builder_made_is_caught_and_scaled_by_the_declared_max(
    tmp_path: Path,
) -> None:
    task = _load(tmp_path, with_credit_for_the_folder(review_task("wp_credit__000")))
    report = audit_task(task)
    assert _failed(report) == {R.UNTOUCHED_ABOVE_FLOOR}
    assert report.untouched_score == pytest.approx(0.1)  # 10 of 100, not 10 of the 20 written
    assert not report.defect
    assert report.metrics["untouched_verifier"]["details_max"] == 20.0
    assert R.PARTIAL_DETAILS in _warned(report)


def test_a_verifier_that_exits_1_after_a_valid_score_is_scored_not_a_crash(tmp_path: Path) -> None:
    report = audit_task(_load(tmp_path, with_exit_status(review_task("wp_exit__000"))))
    assert report.passed, [c.to_dict() for c in report.failures]
    assert report.untouched_score == 0.0 and report.solved_score == 1.0
    assert report.metrics["untouched_verifier"]["exit_code"] == 1
    assert report.metrics["solved_verifier"]["exit_code"] == 0
    assert not report.defect


def test_an_exit_1_verifier_that_pays_for_nothing_is_still_caught_by_the_floor(tmp_path: Path) -> None:
    shape = with_credit_for_the_folder(with_exit_status(review_task("wp_exitcredit__000")))
    report = audit_task(_load(tmp_path, shape))
    assert _failed(report) == {R.UNTOUCHED_ABOVE_FLOOR}
    assert report.metrics["untouched_verifier"]["exit_code"] == 1
    assert not report.defect


@pytest.mark.parametrize(
    ("raw", "declared", "score", "partial"),
    [
        (
            {"total_score": 10, "details": [{"item": "a", "score": 10, "max_score": 10, "passed": True}]},
            None,
            0.1,
            True,
        ),
        ({"total_score": 25, "max_score": 50, "details": []}, None, 0.5, True),
        (
            {"total_score": 25, "details": [{"item": "a", "score": 25, "max_score": 50, "passed": True}]},
            50,
            0.5,
            False,
        ),
        (
            {"total_score": 150, "details": [{"item": "a", "score": 150, "max_score": 200, "passed": True}]},
            None,
            0.75,
            False,
        ),
        (
            {"total_score": 60, "details": [{"item": "a", "score": 60, "max_score": 50, "passed": True}]},
            50,
            None,
            False,
        ),
    ],
)
def test_scores_are_read_against_the_declared_max(raw, declared, score, partial) -> None:
    reading = read_score(raw, declared)
    assert reading.score == (pytest.approx(score) if score is not None else None)
    if score is not None:
        assert reading.partial is partial


def test_the_rollout_reward_uses_the_declared_max_and_tolerates_exit_status(tmp_path: Path) -> None:
    credit = _load(tmp_path, with_credit_for_the_folder(with_exit_status(review_task("wp_roll__000"))))
    harness = ClawTaskHarness(credit, scratch=tmp_path)
    harness.setup()
    try:
        score = harness.score()  # the agent did nothing
    finally:
        harness.cleanup()
    assert score.reward == pytest.approx(0.1)
    assert score.detail["exit_code"] == 1 and score.detail["max_total"] == 100.0
    assert score.detail["partial_details"] is True


# ---- builders ----------------------------------------------------------------------------------------------


def test_a_builder_that_only_defines_build_env_gets_it_called_with_a_warning(tmp_path: Path) -> None:
    shape = review_task("wp_entry__000")
    shape.builder = shape.builder.replace('if __name__ == "__main__":\n    build_env()\n', "")
    report = audit_task(_load(tmp_path, shape))
    assert report.passed, [c.to_dict() for c in report.failures]
    entry = next(c for c in report.checks if c.name == "builder_entry")
    assert entry.severity is Severity.WARNING and entry.reason is R.BUILDER_ENTRY
    assert "build_env()" in entry.message


def test_a_builder_importing_a_third_party_module_is_classified_whatever_the_static_check_said(
    tmp_path: Path,
) -> None:
    shape = review_task("wp_yaml__000")
    # importlib is stdlib, so the static check passes; the stdlib-only interpreter has no yaml
    shape.builder = "import importlib\nyaml = importlib.import_module('yaml')\n" + shape.builder
    report = audit_task(_load(tmp_path, shape))
    builder = next(c for c in report.checks if c.name == "builder")
    assert builder.reason is R.NON_STDLIB_IMPORT and "'yaml'" in builder.message
    assert next(c for c in report.checks if c.name == "code_only").passed


def test_a_verifier_importing_a_third_party_module_is_a_classified_defect(tmp_path: Path) -> None:
    shape = review_task("wp_vyaml__000")
    shape.verifier = "import importlib\nyaml = importlib.import_module('yaml')\n" + shape.verifier
    report = audit_task(_load(tmp_path, shape))
    verifier = next(c for c in report.checks if c.name == "verifier")
    assert verifier.reason is R.NON_STDLIB_IMPORT and "'yaml'" in verifier.message
    assert report.defect


def test_a_builder_crash_names_the_exception_file_and_line_in_workspace_terms(tmp_path: Path) -> None:
    shape = review_task("wp_crash__000")
    lines = shape.builder.splitlines()
    at = lines.index('    with open("db_dumps/attachments.json", "w", encoding="utf-8") as f:')
    lines.insert(at, '    json.load(open("db_dumps/missing.json"))')
    shape.builder = "\n".join(lines) + "\n"
    report = audit_task(_load(tmp_path, shape))
    builder = next(c for c in report.checks if c.name == "builder")
    assert builder.reason is R.BUILDER_CRASH
    assert "FileNotFoundError" in builder.message and f"env_builder.py, line {at + 1}" in builder.message
    assert "db_dumps/missing.json" in builder.message
    assert str(tmp_path) not in builder.message and "/workspace" not in builder.message


def test_builds_that_differ_only_in_record_order_warn_and_new_data_fails(tmp_path: Path) -> None:
    shuffled = review_task("wp_shuffle__000")
    shuffled.builder = shuffled.builder.replace("import json\n", "import json\nimport random\n").replace(
        '    with open("db_dumps/papers.json"',
        '    random.shuffle(papers)\n    with open("db_dumps/papers.json"',
    )
    report = audit_task(_load(tmp_path, shuffled))
    assert report.passed, [c.to_dict() for c in report.failures]
    uniq = next(c for c in report.checks if c.name == "answer_uniqueness")
    # one build in 24 shuffles into the same order as the first: then there is nothing to warn about
    assert uniq.severity in (Severity.WARNING, None)
    drawn = replace(shuffled, task_id="wp_drawn__000")
    drawn.builder = drawn.builder.replace('"year": 2019', '"year": random.randint(1, 10**9)')
    report = audit_task(_load(tmp_path, drawn))
    assert R.NON_DETERMINISTIC in _failed(report)  # the verifier's answer is fixed, the data is not
    derived = replace(drawn, task_id="wp_derived__000")
    derived.verifier = derived.verifier.replace(
        'ops_dir = os.path.join(workspace, "ops")\n',
        'ops_dir = os.path.join(workspace, "ops")\n'
        'source = os.path.join(workspace, "db_dumps", "papers.json")\n',
    )
    report = audit_task(_load(tmp_path, derived))
    uniq = next(c for c in report.checks if c.name == "answer_uniqueness")
    assert uniq.severity is Severity.WARNING and "db_dumps/papers.json" in uniq.message  # it reads them


# ---- bad input -------------------------------------------------------------------------------------------


def test_a_builder_that_never_exits_is_a_timeout(tmp_path: Path) -> None:
    shape = review_task("wp_hang__000")
    shape.builder = "import time\nopen('started.txt', 'w').write('x')\nwhile True:\n    time.sleep(0.05)\n"
    report = audit_task(_load(tmp_path, shape), builder_wall_s=2)
    assert _failed(report) == {R.BUILDER_TIMEOUT}
    assert "env_builder.py did not finish" in report.failures[0].message


def test_a_verifier_writing_a_huge_score_file_is_a_clear_defect(tmp_path: Path) -> None:
    shape = review_task("wp_huge__000")
    shape.verifier = (
        "import os, sys\nws = sys.argv[1]\n"
        "with open(os.path.join(ws, 'workplace_score.json'), 'w') as f:\n"
        "    f.write('{\"total_score\": 0, \"details\": [' + ' ' * (100 * 2**20) + ']}')\n"
    )
    report = audit_task(_load(tmp_path, shape))
    verifier = next(c for c in report.checks if c.name == "verifier")
    assert verifier.reason is R.SCORE_FILE_TOO_LARGE and "workplace_score.json is" in verifier.message
    assert report.defect


def test_a_mixed_set_audits_what_loads_and_rejects_the_rest_naming_files(tmp_path: Path) -> None:
    review_task("wp_good__000").write(tmp_path)
    review_task("wp_badyaml__000", yaml="name: [oops\n").write(tmp_path)
    review_task("wp_gbk__000").write(tmp_path)
    (tmp_path / "tasks" / "prompts" / "wp_gbk__000.md").write_bytes("结果写进 ops/a.json".encode("gbk"))
    (tmp_path / "tasks" / "prompts" / "wp_lonely__000.md").write_text("only a prompt\n")
    store = RunStore(tmp_path / "run")
    rows = {r["id"]: r for r in audit_by_code(load_task_source(tmp_path), store)}
    assert rows["wp_good__000"]["passed"]
    layouts = {tid: rows[tid]["checks"][0] for tid in ("wp_badyaml__000", "wp_gbk__000", "wp_lonely__000")}
    assert layouts["wp_badyaml__000"]["reason"] == "bad_yaml"
    assert "tasks/wp_badyaml__000.yaml" in layouts["wp_badyaml__000"]["message"]
    assert layouts["wp_gbk__000"]["reason"] == "bad_encoding"
    assert "tasks/prompts/wp_gbk__000.md" in layouts["wp_gbk__000"]["message"]
    assert layouts["wp_lonely__000"]["reason"] == "missing_file"
    assert "tasks/prompts/wp_lonely__000.md" in layouts["wp_lonely__000"]["message"]


# ---- the verifier-repair gate -----------------------------------------------------------------------------


def test_the_repair_gate_ignores_prompt_side_findings_it_cannot_change(tmp_path: Path) -> None:
    leaky = review_task("wp_gate__000")
    leaky.prompt = leaky.prompt.replace("谢谢！", "（答案应该是 P-101 和 P-103。）谢谢！")
    task = _load(tmp_path, leaky)
    assert not audit_task(task).passed  # the prompt leaks: the task is rejected ...
    assert asyncio.run(audit_verifier(task)) is None  # ... but the verifier is fine: a repair is accepted
    credit = _load(tmp_path, with_credit_for_the_folder(review_task("wp_gate__001")))
    problem = asyncio.run(audit_verifier(credit))
    assert problem is not None and "untouched_floor" in problem


def test_classification_is_the_same_through_the_warm_workers_the_cli_uses(tmp_path: Path) -> None:
    """``tasks audit`` runs each task inside ``reuse_workers()``: crashes, imports and exit codes must read
    the same there as in one-shot runs."""
    from dataclaw.sandbox.pool import reuse_workers

    crash = review_task("wp_warmcrash__000")
    crash.builder = crash.builder.replace(
        '    with open("db_dumps/attachments.json"',
        '    json.load(open("db_dumps/missing.json"))\n    with open("db_dumps/attachments.json"',
    )
    imported = review_task("wp_warmyaml__000")
    imported.builder = "import importlib\nyaml = importlib.import_module('yaml')\n" + imported.builder
    exits = with_exit_status(review_task("wp_warmexit__000"))
    with reuse_workers():
        reports = [audit_task(_load(tmp_path, s)) for s in (crash, imported, exits)]
    builder = next(c for c in reports[0].checks if c.name == "builder")
    assert builder.reason is R.BUILDER_CRASH and "FileNotFoundError" in builder.message
    assert "env_builder.py, line " in builder.message
    assert next(c for c in reports[1].checks if c.name == "builder").reason is R.NON_STDLIB_IMPORT
    assert reports[2].passed and reports[2].metrics["untouched_verifier"]["exit_code"] == 1
