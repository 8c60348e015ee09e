"""The four-file loader on task sets written elsewhere: every id and prompt spelling the ClawForge release
uses, tasks without a YAML, and what cannot be paired (no sandbox needed: loading runs no task code)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dataclaw.envcraft.quality.runs import load_task_source
from dataclaw.envcraft.tasks.claw.workspace import (
    LayoutError,
    LayoutProblem,
    WorkspaceTask,
    load_task,
    load_tasks,
    task_ids,
)
from envcraft.tasks.claw.claw_shapes import clawforge_yaml, review_task


def _one(root: Path, tid: str) -> WorkspaceTask:
    task = load_task(root, tid)
    assert isinstance(task, WorkspaceTask), task
    return task


@pytest.mark.parametrize(
    ("yaml_text", "how"),
    [
        ("id: {t}\nprompt: tasks/prompts/{t}.md\nasset: {t}\n", None),
        ("task_id: {t}\nasset: {t}\nprompt: tasks/prompts/{t}.md\n", "from task_id"),
        ("name: {t}\nprompt_path: tasks/prompts/{t}.md\nasset: {t}\n", "from name"),
        ("task_name: {t}\nprompt_file: tasks/prompts/{t}.md\n", "from task_name"),
        ("task:\n  id: {t}\n  prompt: tasks/prompts/{t}.md\nasset: {t}\n", "from task.id"),
        ("prompt: tasks/prompts/{t}.md\nasset: {t}\nruntime:\n  timeout: 300\n", "file stem"),
        ("# just a comment\n", "file stem"),
    ],
)
def test_every_id_spelling_loads_and_says_how(tmp_path: Path, yaml_text: str, how: str | None) -> None:
    tid = "wp_review_env__007"
    review_task(tid, yaml=yaml_text.format(t=tid)).write(tmp_path)
    task = _one(tmp_path, tid)
    assert task.task_id == tid
    assert task.inferred.get("id") == how
    assert task.prompt.startswith("嘿")
    assert task.paths["prompt"] == f"tasks/prompts/{tid}.md"


def test_the_file_stem_wins_over_a_disagreeing_yaml_name_with_a_note(tmp_path: Path) -> None:
    tid = "wp_security_env__000"
    review_task(
        tid, yaml=f"name: security_intrusion_response\nasset: {tid}\nprompt: tasks/prompts/{tid}.md\n"
    ).write(tmp_path)
    task = _one(tmp_path, tid)
    assert task.task_id == tid
    assert task.inferred["id"] == "file stem; the yaml's name 'security_intrusion_response' disagrees"
    assert task.to_record()["inferred"]["id"].startswith("file stem")


@pytest.mark.parametrize(
    ("prompt_line", "prompt_rel", "how"),
    [
        ("prompt: tasks/prompts/{t}.md", "tasks/prompts/{t}.md", None),
        ("prompt: ./tasks/prompts/{t}.md", "tasks/prompts/{t}.md", None),
        (
            "prompt_path: prompts/{t}.md",
            "tasks/prompts/{t}.md",
            "from the yaml's prompt_path, relative to tasks/",
        ),
        (
            "prompt_file: briefs/{t}.md",
            "briefs/{t}.md",
            "from the yaml's prompt_file, relative to the task root",
        ),
        (
            "task:\n  prompt_path: tasks/prompts/{t}.md",
            "tasks/prompts/{t}.md",
            "from the yaml's task.prompt_path",
        ),
        ("prompt:\n  path: tasks/prompts/{t}.md", "tasks/prompts/{t}.md", "from the yaml's prompt.path"),
        ("", "tasks/prompts/{t}.md", "conventional path tasks/prompts/{t}.md"),
        (
            "prompt: tasks/prompts/renamed.md",
            "tasks/prompts/{t}.md",
            "conventional path tasks/prompts/{t}.md",
        ),
    ],
)
def test_every_prompt_reference_resolves(
    tmp_path: Path, prompt_line: str, prompt_rel: str, how: str | None
) -> None:
    tid = "wp_review_env__001"
    shape = review_task(tid, yaml=f"asset: {tid}\n{prompt_line.format(t=tid)}\n")
    shape.prompt_rel = prompt_rel.format(t=tid)
    shape.write(tmp_path)
    task = _one(tmp_path, tid)
    assert task.paths["prompt"] == prompt_rel.format(t=tid)
    assert task.prompt == shape.prompt
    if how is None:
        assert "prompt" not in task.inferred
    else:
        assert task.inferred["prompt"].startswith(how.format(t=tid))
    if "renamed" in prompt_line:
        assert "'tasks/prompts/renamed.md' does not exist" in task.inferred["prompt"]


def test_an_inline_prompt_in_the_yaml_is_the_request(tmp_path: Path) -> None:
    tid = "wp_inline__000"
    shape = review_task(
        tid, yaml="prompt: |\n  Please list the efficient_vision papers in ops/papers.json.\n"
    )
    shape.prompt_rel = "unused/elsewhere.md"
    shape.write(tmp_path)
    task = _one(tmp_path, tid)
    assert task.prompt.strip() == "Please list the efficient_vision papers in ops/papers.json."
    assert task.inferred["prompt"] == "inline text in the yaml's prompt"


def test_a_task_without_a_yaml_is_loaded_by_its_folder_name(tmp_path: Path) -> None:
    review_task("wp_noyaml__000", yaml=None).write(tmp_path)
    review_task("wp_withyaml__000").write(tmp_path)
    assert task_ids(tmp_path) == ["wp_noyaml__000", "wp_withyaml__000"]
    task = _one(tmp_path, "wp_noyaml__000")
    assert task.config == {}
    assert task.inferred["id"] == "folder name"
    assert "no task yaml" in task.inferred["config"]
    assert task.inferred["asset"].startswith("none declared")
    assert "yaml" not in task.paths
    # the same loader behind audit, rollout and calibrate
    loaded = load_task_source(tmp_path)
    assert sorted(t.task_id for t in loaded.tasks) == ["wp_noyaml__000", "wp_withyaml__000"]
    assert loaded.broken == []


def test_what_cannot_be_paired_is_a_reject_naming_the_files_found_and_missing(tmp_path: Path) -> None:
    review_task("wp_ok__000").write(tmp_path)
    (tmp_path / "tasks" / "prompts" / "wp_prompt_only__000.md").write_text(
        "Bitte prüfen.\n", encoding="utf-8"
    )
    (tmp_path / "tasks" / "wp_half__000").mkdir()
    (tmp_path / "tasks" / "wp_half__000" / "env_builder.py").write_text("open('a.txt', 'w').write('x')\n")
    (tmp_path / "tasks" / "wp_folder_prompt__000").mkdir()
    (tmp_path / "tasks" / "wp_folder_prompt__000" / "prompt.md").write_text("Only a prompt here.\n")
    loaded = {x.task_id: x for x in load_tasks(tmp_path)}
    assert isinstance(loaded["wp_ok__000"], WorkspaceTask)
    only = loaded["wp_prompt_only__000"]
    assert isinstance(only, LayoutError) and only.reason is LayoutProblem.MISSING_FILE
    assert only.message.startswith("found tasks/prompts/wp_prompt_only__000.md; missing")
    assert "the builder (tasks/wp_prompt_only__000/env_builder.py)" in only.message
    assert "the verifier (scripts/wp_prompt_only__000/verify_workplace.py)" in only.message
    assert only.files == ["tasks/prompts/wp_prompt_only__000.md"]
    half = loaded["wp_half__000"]
    assert isinstance(half, LayoutError)
    assert "found tasks/wp_half__000/env_builder.py" in half.message
    assert "the prompt (tasks/prompts/wp_half__000.md)" in half.message
    folder = loaded["wp_folder_prompt__000"]
    assert isinstance(folder, LayoutError) and "found tasks/wp_folder_prompt__000/prompt.md" in folder.message
    source = load_task_source(tmp_path)
    assert [t.task_id for t in source.tasks] == ["wp_ok__000"]
    assert sorted(e.task_id for e in source.broken) == [
        "wp_folder_prompt__000",
        "wp_half__000",
        "wp_prompt_only__000",
    ]


def test_yaml_that_does_not_parse_is_a_reject_naming_the_file(tmp_path: Path) -> None:
    review_task("wp_bad__000", yaml="name: wp_bad__000\nprompt: [unclosed\n  asset: x\n").write(tmp_path)
    review_task("wp_list__000", yaml="- just\n- a list\n").write(tmp_path)
    review_task("wp_good__000").write(tmp_path)
    loaded = {x.task_id: x for x in load_tasks(tmp_path)}
    bad = loaded["wp_bad__000"]
    assert isinstance(bad, LayoutError) and bad.reason is LayoutProblem.BAD_YAML
    assert bad.message.startswith("tasks/wp_bad__000.yaml is not YAML (line ")
    assert loaded["wp_list__000"].reason is LayoutProblem.BAD_YAML  # type: ignore[union-attr]
    assert "must be a mapping, not a list" in loaded["wp_list__000"].message  # type: ignore[union-attr]
    assert isinstance(loaded["wp_good__000"], WorkspaceTask)


def test_files_that_are_not_utf8_are_rejects_naming_the_file(tmp_path: Path) -> None:
    shape = review_task("wp_gbk__000")
    shape.write(tmp_path)
    (tmp_path / "tasks" / "prompts" / "wp_gbk__000.md").write_bytes("请把结果写进 ops/a.json".encode("gbk"))
    review_task("wp_latin1__000").write(tmp_path)
    (tmp_path / "scripts" / "wp_latin1__000" / "verify_workplace.py").write_bytes(b"# caf\xe9\nprint(1)\n")
    review_task("wp_fine__000").write(tmp_path)
    loaded = {x.task_id: x for x in load_tasks(tmp_path)}
    gbk = loaded["wp_gbk__000"]
    assert isinstance(gbk, LayoutError) and gbk.reason is LayoutProblem.BAD_ENCODING
    assert gbk.message.startswith("tasks/prompts/wp_gbk__000.md is not UTF-8 text")
    latin = loaded["wp_latin1__000"]
    assert isinstance(latin, LayoutError) and "scripts/wp_latin1__000/verify_workplace.py" in latin.message
    assert isinstance(loaded["wp_fine__000"], WorkspaceTask)


def test_a_prompt_path_that_leaves_the_task_root_is_rejected(tmp_path: Path) -> None:
    (tmp_path / "secret.md").write_text("not part of the task set\n")
    root = tmp_path / "set"
    review_task("wp_escape__000", yaml="prompt: ../../secret.md\n").write(root)
    review_task("wp_abs__000", yaml="prompt: /etc/hostname\n").write(root)
    loaded = {x.task_id: x for x in load_tasks(root)}
    for tid, text in (("wp_escape__000", "outside the task root"), ("wp_abs__000", "absolute path")):
        err = loaded[tid]
        assert isinstance(err, LayoutError) and err.reason is LayoutProblem.PROMPT_PATH
        assert text in err.message


def test_runtime_settings_are_read_in_the_spellings_in_use(tmp_path: Path) -> None:
    for tid, runtime in (
        ("wp_a__000", "runtime:\n  timeout: 300\n  max_turns: 30\n"),
        ("wp_b__000", "runtime:\n  timeout_seconds: 120\n"),
        ("wp_c__000", "runtime:\n  max_time_minutes: 15\n"),
        ("wp_d__000", "runtime:\n  timeout: soon\n  max_turns: many\n"),
        ("wp_e__000", "max_score: 50\nruntime:\n  timeout_s: 90\n"),
    ):
        review_task(tid, yaml=clawforge_yaml(tid).split("runtime:")[0] + runtime).write(tmp_path)
    t = {x.task_id: x for x in load_tasks(tmp_path)}
    assert (t["wp_a__000"].timeout_s, t["wp_a__000"].max_turns) == (300.0, 30)  # type: ignore[union-attr]
    assert t["wp_b__000"].timeout_s == 120.0  # type: ignore[union-attr]
    assert t["wp_c__000"].timeout_s == 900.0  # type: ignore[union-attr]
    assert (t["wp_d__000"].timeout_s, t["wp_d__000"].max_turns) == (None, None)  # type: ignore[union-attr]
    assert (t["wp_e__000"].declared_max, t["wp_e__000"].timeout_s) == (50.0, 90.0)  # type: ignore[union-attr]
    assert t["wp_a__000"].declared_max is None  # type: ignore[union-attr]


def test_a_verifier_kept_next_to_the_builder_is_found(tmp_path: Path) -> None:
    shape = review_task("wp_side__000")
    shape.write(tmp_path)
    src = tmp_path / "scripts" / "wp_side__000" / "verify_workplace.py"
    (tmp_path / "tasks" / "wp_side__000" / "verify_workplace.py").write_text(src.read_text(encoding="utf-8"))
    src.unlink()
    src.parent.rmdir()
    task = _one(tmp_path, "wp_side__000")
    assert task.paths["verifier"] == "tasks/wp_side__000/verify_workplace.py"
    assert "not under scripts/" in task.inferred["verifier"]


def test_records_round_trip_with_their_inferences(tmp_path: Path) -> None:
    review_task("wp_rt__000", yaml="task_id: wp_rt__000\n").write(tmp_path)
    task = _one(tmp_path, "wp_rt__000")
    again = WorkspaceTask.from_record(task.to_record())
    assert again.inferred == task.inferred and again.paths == task.paths
    assert again.inferred["id"] == "from task_id"
    assert (
        WorkspaceTask.from_record({k: v for k, v in task.to_record().items() if k != "inferred"}).inferred
        == {}
    )
