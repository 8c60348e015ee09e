"""Every command that makes records exits 1 when it made none, with why in one line after its summary
(issue 27): run through the CLI on inputs that really yield nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from dataclaw.cli._produced import NothingProduced, reasons_text, require_made, require_stages
from dataclaw.cli.app import _run
from envcraft.importers import shapes


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_the_first_empty_stage_is_named_with_its_reasons(tmp_path: Path) -> None:
    require_stages("tasks", [("grounded", 4, 2, {"x": 2}), ("tasks", 2, 1, {"y": 1})], where=tmp_path)
    require_made("rollouts", 3)
    stages = [("grounded", 12, 4, {"no_write": 8}), ("tasks", 4, 0, {"verifier_unsound": 3, "a": 1})]
    with pytest.raises(NothingProduced) as got:
        require_stages("tasks", stages, where=tmp_path)
    assert str(got.value) == (
        f"0 tasks: all 4 rejected at tasks (verifier_unsound 3, a 1), see {tmp_path / 'rejects.jsonl'}"
    )
    with pytest.raises(NothingProduced, match=r"^0 tasks: nothing to work on \(grounded got 0 inputs\)$"):
        require_stages("tasks", [("grounded", 0, 0, {}), ("tasks", 0, 0, {})])
    with pytest.raises(NothingProduced, match=r"^0 tasks: all 5 rejected \(no reason recorded\)$"):
        require_made("tasks", 0, raw=5)
    assert reasons_text({f"r{i}": i for i in range(1, 9)}, limit=2) == "r8 8, r7 7, … 6 more"


def test_tasks_sample_that_finds_no_chain_exits_1(tmp_path: Path, capsys) -> None:
    args = ["tasks", "sample", "--env", "state_machine", "-n", "3", "--min-len", "40", "--max-len", "40"]
    assert _run([*args, "--out", str(tmp_path / "s")]) == 1
    assert (
        _one_error_line(capsys) == "error: 0 chains: all 3 rejected at chains (duplicate_or_no_write_end 3)"
    )
    assert _run(["tasks", "sample", "--env", "state_machine", "-n", "3", "--out", str(tmp_path / "ok")]) == 0


def test_env_synth_with_no_passing_environment_exits_1(tmp_path: Path, capsys) -> None:
    (tmp_path / "none.jsonl").write_text("")
    lib = tmp_path / "LIB"
    args = ["env", "synth", "--out", str(lib), "--scenario", "not_a_scenario"]
    assert _run([*args, "--model", f"replay:{tmp_path / 'none.jsonl'}"]) == 1
    out, err = capsys.readouterr()
    assert "unknown_scenario" in out  # the summary still comes first
    assert err.strip() == (
        f"error: 0 passing environments: 1 failed, 0 floor (unknown_scenario 1), see {lib / 'index.jsonl'}"
    )


def test_tasks_import_of_only_bad_items_exits_1_naming_the_reasons(tmp_path: Path, capsys) -> None:
    skill = tmp_path / "skill"
    (skill / "tasks").mkdir(parents=True)
    (skill / "tasks" / "task_broken_grader.md").write_text(shapes.BROKEN_GRADER_TASK)
    (skill / "tasks" / "task_judge_only.md").write_text(shapes.JUDGE_ONLY_TASK)
    (skill / "tasks" / "task_missing_asset.md").write_text(shapes.MISSING_ASSET_TASK)
    run = tmp_path / "run"
    assert _run(["tasks", "import", "pinchbench", str(skill), "-o", str(run)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "error: 0 tasks: all 3 rejected (malformed 1, syntax_error 1, unsupported 1), "
        f"see {run / 'rejects.jsonl'}"
    ]


def test_tasks_claw_synth_whose_model_writes_nothing_exits_1(
    tmp_path: Path, capsys, shared_data: Path
) -> None:
    chains = shared_data / "clawforge" / "chains" / "arxiv_review_roadmap_env.jsonl"  # real ClawForge chains
    (tmp_path / "none.jsonl").write_text("")  # a replay that holds no answer: every call fails
    out = tmp_path / "claw"
    args = ["tasks", "claw-synth", str(chains), "-o", str(out), "--limit", "2"]
    assert _run([*args, "--model", f"replay:{tmp_path / 'none.jsonl'}"]) == 1
    assert _one_error_line(capsys) == (
        "error: 0 claw tasks passing the code audit: all 2 rejected at claw_generate (model_error 2), "
        f"see {out / 'rejects.jsonl'}"
    )
