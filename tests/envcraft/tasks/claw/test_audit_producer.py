"""A stored claw audit verdict belongs to the task's content and the audit settings, not to its id: an
edited task (or another floor) is audited again and the old report is superseded, while unchanged tasks are
carried over without running their code again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dataclaw.core.store import RunStore
from dataclaw.envcraft.quality import runs
from dataclaw.envcraft.quality.runs import audit_by_code, load_task_source
from dataclaw.sandbox import sandbox_available
from envcraft.tasks.claw.claw_shapes import review_task, with_credit_for_the_folder

pytestmark = pytest.mark.skipif(not sandbox_available(), reason="needs the sandbox")


def _audit(root: Path, run: Path, floor: float = 0.0) -> tuple[dict[str, dict], list[dict], list[str]]:
    with RunStore(run) as store:
        rows = {r["id"]: r for r in audit_by_code(load_task_source(root), store, floor=floor)}
        current = list(store.records("code_audit"))
        rejects = [r["record_id"] for r in store.rejects("code_audit")]
    return rows, current, rejects


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    audited: list[str] = []
    real = runs._audit_one

    def spy(task, floor, policy):
        audited.append(task.task_id)
        return real(task, floor, policy)

    monkeypatch.setattr(runs, "_audit_one", spy)
    return audited


def test_a_fixed_task_is_audited_again_and_its_old_verdict_superseded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, run = tmp_path / "set", tmp_path / "run"
    with_credit_for_the_folder(review_task("wp_fix__000")).write(root)
    review_task("wp_same__000").write(root)
    audited = _counting(monkeypatch)
    rows, _, rejects = _audit(root, run)
    assert not rows["wp_fix__000"]["passed"] and rows["wp_same__000"]["passed"]
    assert rejects == ["wp_fix__000"] and sorted(audited) == ["wp_fix__000", "wp_same__000"]

    audited.clear()  # a plain rerun: nothing changed, nothing runs
    rows, current, _ = _audit(root, run)
    assert audited == [] and len(current) == 2

    review_task("wp_fix__000").write(root)  # the author fixes the verifier
    audited.clear()
    rows, current, rejects = _audit(root, run)
    assert audited == ["wp_fix__000"]  # only the edited task runs again
    assert rows["wp_fix__000"]["passed"] and rows["wp_same__000"]["passed"]
    assert sorted(r["id"] for r in current) == ["wp_fix__000", "wp_same__000"]  # one current report each
    assert rejects == []  # the old verdict's reject is superseded with it
    lines = [json.loads(x) for x in (run / "code_audit.jsonl").read_text().splitlines()]
    old = [r for r in lines if r["id"] == "wp_fix__000" and not r["passed"]]
    assert len(old) == 1 and old[0]["producer"] != current[0]["producer"]  # kept, superseded
    producers = json.loads((run / "manifest.json").read_text())["producers"]
    assert producers["code_audit"]["hash"] == current[0]["producer"]


def test_another_floor_is_a_new_audit_and_going_back_reuses_the_old_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, run = tmp_path / "set", tmp_path / "run"
    with_credit_for_the_folder(review_task("wp_floor__000")).write(root)
    audited = _counting(monkeypatch)
    rows, _, rejects = _audit(root, run, floor=0.0)
    assert not rows["wp_floor__000"]["passed"] and rejects == ["wp_floor__000"]
    rows, current, rejects = _audit(root, run, floor=0.5)  # 0.1 for the folder is under this floor
    assert rows["wp_floor__000"]["passed"] and rejects == [] and len(current) == 1
    assert current[0]["floor"] == 0.5
    audited.clear()
    rows, current, rejects = _audit(root, run, floor=0.0)
    assert audited == [] and not rows["wp_floor__000"]["passed"] and rejects == ["wp_floor__000"]
    assert len(current) == 1 and current[0]["floor"] == 0.0
